package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// testClock is a clock that moves only when told.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func newTestClock() *testClock { return &testClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// wantExceeded fails unless err is an *Exceeded of action.
func wantExceeded(t *testing.T, err error, action Action) *Exceeded {
	t.Helper()
	ex, ok := errors.AsType[*Exceeded](err)
	if !ok {
		t.Fatalf("got %v, want the %s limit exceeded", err, action.describe())
	}
	if ex.Action != action {
		t.Fatalf("exceeded %s, want %s", ex.Action.describe(), action.describe())
	}
	return ex
}

func TestLocalAllowsABurstThenRefusesUntilATokenIsBack(t *testing.T) {
	clock := newTestClock()
	l := NewLocal(Post, Limit{Rate: 2, Period: time.Second, Burst: 3}, clock.now, 0)
	ctx := context.Background()
	for i := range 3 {
		if err := l.Allow(ctx, "alice"); err != nil {
			t.Fatalf("post %d of the burst: %v", i+1, err)
		}
	}
	ex := wantExceeded(t, l.Allow(ctx, "alice"), Post)
	if ex.RetryAfter != 500*time.Millisecond {
		t.Fatalf("retry after %v, want 500ms (one token at 2/s)", ex.RetryAfter)
	}
	clock.advance(499 * time.Millisecond)
	wantExceeded(t, l.Allow(ctx, "alice"), Post)
	clock.advance(time.Millisecond)
	if err := l.Allow(ctx, "alice"); err != nil {
		t.Fatalf("after retryAfter: %v", err)
	}
	wantExceeded(t, l.Allow(ctx, "alice"), Post)
}

func TestLocalCountsKeysApart(t *testing.T) {
	l := NewLocal(Signup, Limit{Rate: 1, Period: time.Hour, Burst: 1}, newTestClock().now, 0)
	ctx := context.Background()
	if err := l.Allow(ctx, "192.0.2.1"); err != nil {
		t.Fatal(err)
	}
	wantExceeded(t, l.Allow(ctx, "192.0.2.1"), Signup)
	if err := l.Allow(ctx, "192.0.2.2"); err != nil {
		t.Fatalf("another address: %v", err)
	}
}

func TestLocalForgetsKeysWhoseBucketIsFullAgain(t *testing.T) {
	clock := newTestClock()
	// 1/s in bursts of 2: an emptied bucket is full after 2 s.
	l := NewLocal(Post, Limit{Rate: 1, Period: time.Second, Burst: 2}, clock.now, 0)
	ctx := context.Background()
	_ = l.Allow(ctx, "a")
	_ = l.Allow(ctx, "a")
	clock.advance(time.Second)
	_ = l.Allow(ctx, "b")
	clock.advance(999 * time.Millisecond)
	_ = l.Allow(ctx, "c")
	if got := l.keys(); got != 3 {
		t.Fatalf("1.999 s after a's last use: %d keys remembered, want 3", got)
	}
	// a's bucket holds 1.999 tokens, not 2: forgotten, it would be full.
	if err := l.Allow(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	wantExceeded(t, l.Allow(ctx, "a"), Post)
	clock.advance(2 * time.Second)
	_ = l.Allow(ctx, "d")
	if got := l.keys(); got != 1 {
		t.Fatalf("after every other key idled 2 s: %d keys remembered, want 1", got)
	}
}

func TestLocalRemembersAtMostMaxKeys(t *testing.T) {
	l := NewLocal(Signup, Limit{Rate: 1, Period: time.Hour, Burst: 1}, newTestClock().now, 100)
	for i := range 1000 {
		_ = l.Allow(context.Background(), fmt.Sprintf("198.51.100.%d", i))
	}
	if got := l.keys(); got != 100 {
		t.Fatalf("%d keys remembered, want at most 100", got)
	}
}

func TestLocalAllowsExactlyTheBurstToConcurrentCallers(t *testing.T) {
	l := NewLocal(DirectMessage, Limit{Rate: 1, Period: time.Hour, Burst: 25}, newTestClock().now, 0)
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				if l.Allow(context.Background(), "bob") == nil {
					allowed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if got := allowed.Load(); got != 25 {
		t.Fatalf("%d of 160 concurrent messages allowed, want the burst of 25", got)
	}
}
