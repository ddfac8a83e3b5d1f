// Command chatattack runs the hostile-client suite (internal/attack)
// against a running chat server and exits 1 if the server answered any
// attack wrongly: an uncoded error, a server error, a response too large
// or too slow for a refusal, or a server that stopped serving.
//
//	chatattack -url http://127.0.0.1:8080 [-jwt-secret ...] [-run regexp]
//
// Send it only to a server you run: it floods signups and connections.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"regexp"
	"syscall"
	"time"

	"github.com/killrchat/chatql/internal/attack"
)

func main() {
	var (
		t    attack.Target
		only string
	)
	secret := flag.String("jwt-secret", os.Getenv("CHAT_JWT_SECRET"), "the server's JWT secret, to forge validly signed tokens (CHAT_JWT_SECRET)")
	flag.StringVar(&t.Base, "url", "http://127.0.0.1:8080", "the server's root URL")
	flag.IntVar(&t.ConnsPerAddress, "conns-per-address", 0, "the server's cap on connections per address; 0 skips the connection flood")
	flag.DurationVar(&t.HeaderTimeout, "header-timeout", 0, "the server's read-header timeout; 0 skips the slow-headers attack")
	flag.DurationVar(&t.SessionCheck, "session-check", 0, "how long a revoked session may keep working; 0 skips the attacks that wait for it")
	flag.StringVar(&t.FloodFrom, "flood-from", "", "local address the floods come from (e.g. 127.0.0.2), so their per-address limits spare the other attacks")
	flag.StringVar(&only, "run", "", "run only the attacks whose name matches this regexp")
	flag.Parse()
	if *secret != "" {
		t.Secret = []byte(*secret)
	}
	var filter *regexp.Regexp
	if only != "" {
		var err error
		if filter, err = regexp.Compile(only); err != nil {
			fmt.Fprintln(os.Stderr, "chatattack: -run:", err)
			os.Exit(2)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	failed := 0
	for _, r := range attack.Run(ctx, &t, filter) {
		verdict := "ok"
		switch {
		case errors.Is(r.Err, attack.ErrSkipped):
			verdict = "skipped"
		case r.Err != nil:
			verdict = "FAIL: " + r.Err.Error()
			failed++
		}
		fmt.Printf("%-26s item %-2d %8s  %s\n    %s\n", r.Name, r.Item, r.Took.Round(time.Millisecond), verdict, r.What)
	}
	if failed > 0 {
		fmt.Printf("%d attacks answered wrongly\n", failed)
		os.Exit(1)
	}
}
