package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/killrchat/chatql/server"
)

// BenchmarkServeForProfiling is not a benchmark: it serves the real server,
// configured from the CHAT_* environment as `go run .` would be, in the
// test binary, so that a load generator (cmd/chatload) can drive it while
// the runtime profiles it. The server has no pprof endpoint; this keeps
// profiling out of production code. It runs only when CHAT_PROFILE_SERVE=1
// (scripts/bench.sh profile sets it):
//
//	go test -c -o bench-out/chatql-profile.test ./e2e
//	CHAT_PROFILE_SERVE=1 CHAT_PROFILE_DIR=bench-out/profile CHAT_ADDR=127.0.0.1:0 \
//	    bench-out/chatql-profile.test -test.run '^$' -test.bench '^BenchmarkServeForProfiling$' -test.benchtime 1x
//
// CHAT_PROFILE_MEMRATE sets runtime.MemProfileRate: 1 records every
// allocation, so that the heap profiles are exact (what an idle
// subscription holds), at the cost of a slower server.
//
// It writes "<pid> <host:port>" to $CHAT_PROFILE_DIR/server.addr once it
// listens, and serves until SIGTERM or SIGINT. Signals control profiling,
// so the profiles cover exactly the phase of interest (chatload
// -profile-signals sends them):
//
//	SIGUSR2  start the CPU profile, or stop it: cpu-N.prof
//	SIGUSR1  write the heap (after a GC), mutex and goroutine profiles and
//	         the runtime's memory statistics: heap-N.prof, mutex-N.prof,
//	         goroutine-N.txt, memstats-N.txt
func BenchmarkServeForProfiling(b *testing.B) {
	if os.Getenv("CHAT_PROFILE_SERVE") != "1" {
		b.Skip("CHAT_PROFILE_SERVE=1 is not set: this serves the server for profiling (scripts/bench.sh profile), it measures nothing itself")
	}
	dir := os.Getenv("CHAT_PROFILE_DIR")
	if dir == "" {
		dir = "."
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	cfg, err := server.ParseConfig(nil, os.Getenv)
	if err != nil {
		b.Fatal(err)
	}
	runtime.SetMutexProfileFraction(100)
	if rate := os.Getenv("CHAT_PROFILE_MEMRATE"); rate != "" { // 1: every allocation, exact and slow
		if runtime.MemProfileRate, err = strconv.Atoi(rate); err != nil {
			b.Fatalf("CHAT_PROFILE_MEMRATE: %v", err)
		}
	}
	for b.Loop() {
		serveForProfiling(b, cfg, dir)
	}
}

func serveForProfiling(b *testing.B, cfg server.Config, dir string) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	srv, err := server.New(ctx, cfg, log)
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		b.Fatal(err)
	}
	go srv.Serve(ln)
	defer func() {
		shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Close(shutdown)
	}()
	addr := fmt.Sprintf("%d %s\n", os.Getpid(), ln.Addr())
	if err := os.WriteFile(filepath.Join(dir, "server.addr"), []byte(addr), 0o644); err != nil {
		b.Fatal(err)
	}

	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGUSR1, syscall.SIGUSR2)
	defer signal.Stop(sigs)
	var cpu *os.File
	defer func() {
		if cpu != nil {
			pprof.StopCPUProfile()
			cpu.Close()
		}
	}()
	heapN, cpuN := 0, 0
	for {
		select {
		case <-ctx.Done():
			return
		case sig := <-sigs:
			switch sig {
			case syscall.SIGUSR2:
				if cpu != nil {
					pprof.StopCPUProfile()
					cpu.Close()
					cpu = nil
					continue
				}
				cpuN++
				f, err := os.Create(filepath.Join(dir, fmt.Sprintf("cpu-%d.prof", cpuN)))
				if err != nil {
					b.Error(err)
					continue
				}
				if err := pprof.StartCPUProfile(f); err != nil {
					b.Error(err)
					f.Close()
					continue
				}
				cpu = f
			case syscall.SIGUSR1:
				heapN++
				if err := writeProfiles(dir, heapN); err != nil {
					b.Error(err)
				}
			}
		}
	}
}

func writeProfiles(dir string, n int) error {
	runtime.GC()
	for name, debug := range map[string]int{"heap": 0, "mutex": 0, "goroutine": 1} {
		ext := "prof"
		if debug > 0 {
			ext = "txt"
		}
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-%d.%s", name, n, ext)))
		if err != nil {
			return err
		}
		err = pprof.Lookup(name).WriteTo(f, debug)
		f.Close()
		if err != nil {
			return err
		}
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	stats := fmt.Sprintf("goroutines %d\nheap_inuse %d\nheap_alloc %d\nheap_objects %d\nstack_inuse %d\nsys %d\nnum_gc %d\n",
		runtime.NumGoroutine(), m.HeapInuse, m.HeapAlloc, m.HeapObjects, m.StackInuse, m.Sys, m.NumGC)
	return os.WriteFile(filepath.Join(dir, fmt.Sprintf("memstats-%d.txt", n)), []byte(stats), 0o644)
}
