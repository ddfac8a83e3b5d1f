// Command chatql serves the chat GraphQL API: queries and mutations over
// HTTP, live room events over websockets and server-sent events.
//
// With no configuration it runs on an embedded on-disk store and an
// in-process broker; in production, CHAT_STORE=cassandra and CHAT_REDIS_URL
// select a Cassandra cluster and Redis pub/sub across instances. The server
// itself is package server; this is its wiring: configuration, log,
// signals.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/killrchat/chatql/playground"
	"github.com/killrchat/chatql/server"
)

func main() {
	cfg, err := server.ParseConfig(os.Args[1:], os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chatql:", err)
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	if err := run(cfg, log); err != nil {
		log.Error("chatql stopped", "err", err)
		os.Exit(1)
	}
}

// run serves until SIGINT or SIGTERM, then shuts down gracefully.
func run(cfg server.Config, log *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	srv, err := server.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		_ = srv.Close(context.Background())
		return err
	}
	base := "http://" + server.DisplayAddr(ln.Addr())
	// "playground" stays the first attribute: tests and scripts/bench.sh
	// read the address from it.
	log.Info("chatql serving", "playground", base+playground.Path, "app", base+"/", "store", cfg.Store, "broker", srv.BrokerName())
	if cfg.MetricsAddr != "" {
		stopMetrics, _, err := srv.ServeMetrics(cfg.MetricsAddr)
		if err != nil {
			_ = ln.Close()
			_ = srv.Close(context.Background())
			return err
		}
		defer stopMetrics()
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return errors.Join(err, srv.Close(context.Background()))
	case <-ctx.Done():
	}
	log.Info("shutting down: finishing in-flight requests", "timeout", cfg.ShutdownTimeout)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	return srv.Close(shutdownCtx)
}
