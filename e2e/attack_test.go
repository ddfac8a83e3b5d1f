package e2e

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/chatql/internal/attack"
	"github.com/killrchat/chatql/ratelimit"
)

// TestAttackSuite runs the hostile-client suite (internal/attack, also
// cmd/chatattack) against the built binary with its production defaults,
// but for the limits the suite must know or wait for: a short header
// timeout (slow headers), a small per-address connection cap (connection
// flood), a short session check (revocations) and room for the suite's own
// signups. Every attack must be answered as the suite expects, and the
// server must serve after each one.
func TestAttackSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("the attack suite floods the server for about a minute")
	}
	cfg := testConfig(t)
	cfg.JWTSecret = strings.Repeat("s", 32)
	cfg.BcryptCost = 10 // the production cost: signup floods must not starve the server
	cfg.RateLimits = ratelimit.DefaultLimits
	cfg.RateLimits[ratelimit.Signup] = ratelimit.Limit{Rate: 30, Burst: 30, Period: time.Minute}
	cfg.ReadTimeout = 2 * time.Second
	cfg.MaxConnsPerClient = 64
	cfg.SessionCheck = time.Second
	srv := startChatql(t, buildChatql(t), cfg)

	target := &attack.Target{
		Base:            strings.TrimSuffix(srv.URL, "/query"),
		Secret:          []byte(cfg.JWTSecret),
		ConnsPerAddress: cfg.MaxConnsPerClient,
		HeaderTimeout:   cfg.ReadTimeout,
		SessionCheck:    cfg.SessionCheck,
		FloodFrom:       "127.0.0.2",
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, r := range attack.Run(ctx, target, nil) {
		t.Run(r.Name, func(t *testing.T) {
			switch {
			case errors.Is(r.Err, attack.ErrSkipped):
				t.Fatalf("skipped, but the test configures everything it needs")
			case r.Err != nil:
				t.Fatalf("item %d, %s: %v", r.Item, r.What, r.Err)
			}
			t.Logf("answered as expected in %v", r.Took)
		})
	}
}
