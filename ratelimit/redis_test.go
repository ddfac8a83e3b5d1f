package ratelimit

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/killrchat/chatql/broker"
	"github.com/killrchat/chatql/internal/testenv"
)

// redisClient is a client of the Redis at url (a Redis Cluster's with
// cluster), as the server makes it.
func redisClient(t *testing.T, url string, cluster bool) redis.UniversalClient {
	t.Helper()
	c, err := broker.NewRedisClient(url, cluster, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// testPrefix keeps each test's keys apart from other tests and runs.
func testPrefix(t *testing.T) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "ratetest:" + hex.EncodeToString(b[:]) + ":"
}

func TestRedisLimitIsSharedByInstances(t *testing.T) {
	testLimitIsShared(t, testenv.Service(t, "CHAT_REDIS_URL", "the Redis rate limit tests"), false)
}

// On a Redis Cluster, each limit's key lies in the slot of its own name.
func TestRedisClusterLimitIsSharedByInstances(t *testing.T) {
	testLimitIsShared(t, testenv.RedisCluster(t), true)
}

func testLimitIsShared(t *testing.T, url string, cluster bool) {
	prefix := testPrefix(t)
	limits := Limits{Post: {Rate: 3, Period: time.Hour, Burst: 3}}
	// Two instances: their own clients, the same Redis and prefix.
	a := New(limits, Options{Redis: redisClient(t, url, cluster), Prefix: prefix})
	b := New(limits, Options{Redis: redisClient(t, url, cluster), Prefix: prefix})
	ctx := context.Background()
	for i, s := range []*Set{a, b, a} {
		if err := s.Allow(ctx, Post, "alice"); err != nil {
			t.Fatalf("post %d of 3: %v", i+1, err)
		}
	}
	ex := wantExceeded(t, b.Allow(ctx, Post, "alice"), Post)
	// 3 per hour: the next token comes 20 minutes after the first post.
	if ex.RetryAfter <= 19*time.Minute || ex.RetryAfter > 20*time.Minute {
		t.Fatalf("retry after %v, want just under 20m", ex.RetryAfter)
	}
	if err := a.Allow(ctx, Post, "bob"); err != nil {
		t.Fatalf("another user: %v", err)
	}
	// A deployment with another prefix counts apart.
	other := New(limits, Options{Redis: redisClient(t, url, cluster), Prefix: testPrefix(t)})
	if err := other.Allow(ctx, Post, "alice"); err != nil {
		t.Fatalf("another prefix: %v", err)
	}
}

// syncBuffer is a log destination that tests read while the limiter writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestRedisFailureFallsBackToThisInstancesLimit(t *testing.T) {
	// A Redis address where nothing listens: a port taken and let go.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	down := redisClient(t, "redis://"+addr, false)
	limits := New(Limits{Login: {Rate: 2, Period: time.Hour, Burst: 2}}, Options{Redis: down, Prefix: testPrefix(t), Log: log, Now: newTestClock().now})

	ctx := context.Background()
	for i := range 2 {
		if err := limits.Allow(ctx, Login, "alice"); err != nil {
			t.Fatalf("attempt %d of 2 with Redis down: %v", i+1, err)
		}
	}
	wantExceeded(t, limits.Allow(ctx, Login, "alice"), Login)
	if n := strings.Count(logs.String(), "level=WARN"); n != 1 {
		t.Fatalf("%d warnings for three failed Redis calls, want 1:\n%s", n, logs.String())
	}
	if st := limits.Stats(); !st.Redis || !st.RedisDown || st.Fallbacks != 3 || st.Rejected[Login] != 1 || st.Rejected[Post] != 0 {
		t.Fatalf("Stats() = %+v, want Redis down, 3 fallbacks, 1 login rejected", st)
	}
}

func TestRedisHealthLogsChangesOnly(t *testing.T) {
	var logs syncBuffer
	h := &redisHealth{log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))}
	ctx := context.Background()
	h.answered(ctx)
	h.failed(ctx, net.ErrClosed)
	h.failed(ctx, net.ErrClosed)
	h.answered(ctx)
	h.answered(ctx)
	h.failed(ctx, net.ErrClosed)
	got := logs.String()
	if w, i := strings.Count(got, "level=WARN"), strings.Count(got, "level=INFO"); w != 2 || i != 1 {
		t.Fatalf("%d warnings and %d notes, want 2 and 1:\n%s", w, i, got)
	}
}
