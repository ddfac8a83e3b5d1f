package apierror

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/killrchat/chatql/auth"
	"github.com/killrchat/chatql/broker"
	"github.com/killrchat/chatql/ratelimit"
	"github.com/killrchat/chatql/store"
)

// TestOfMapsEverySentinel: each sentinel, wrapped as backends wrap it, has
// its code and a public message; anything else is INTERNAL and private.
func TestOfMapsEverySentinel(t *testing.T) {
	limited := &ratelimit.Exceeded{Action: ratelimit.Post, Limit: ratelimit.Limit{Rate: 1, Period: time.Second, Burst: 1}, RetryAfter: 1500 * time.Millisecond}
	cases := []struct {
		err    error
		code   string
		public bool
	}{
		{fmt.Errorf("token: %w", auth.ErrUnauthenticated), Unauthenticated, true},
		{fmt.Errorf("login: %w", auth.ErrBusy), RateLimited, true},
		{fmt.Errorf("room %q: %w", "x", store.ErrForbidden), Forbidden, true},
		{fmt.Errorf("room %q: %w", "x", store.ErrNotFound), NotFound, true},
		{fmt.Errorf("login %q: %w", "x", store.ErrConflict), Conflict, true},
		{store.Invalidf("name too long"), BadUserInput, true},
		{fmt.Errorf("post: %w", limited), RateLimited, true},
		{fmt.Errorf("post: %w", &store.PostTooSoon{Room: "x", RetryAfter: 2500 * time.Millisecond}), SlowMode, true},
		{broker.ErrSlowSubscriber, Internal, true},
		{broker.ErrClosed, Internal, true},
		{errors.New("cassandra: timeout"), Internal, false},
	}
	for _, c := range cases {
		code, public := Of(c.err)
		if code != c.code || public != c.public {
			t.Errorf("Of(%v) = %s, %v; want %s, %v", c.err, code, public, c.code, c.public)
		}
	}
	if s, ok := RetryAfter(fmt.Errorf("post: %w", limited)); !ok || s != 2 {
		t.Errorf("RetryAfter(rate limit of 1.5 s) = %d, %v; want 2, true", s, ok)
	}
	if s, ok := RetryAfter(auth.ErrBusy); !ok || s != busyRetryAfter {
		t.Errorf("RetryAfter(ErrBusy) = %d, %v; want %d, true", s, ok, busyRetryAfter)
	}
	if s, ok := RetryAfter(&store.PostTooSoon{Room: "x", RetryAfter: 2500 * time.Millisecond}); !ok || s != 3 {
		t.Errorf("RetryAfter(slow mode, 2.5 s left) = %d, %v; want 3, true", s, ok)
	}
	if _, ok := RetryAfter(store.ErrNotFound); ok {
		t.Error("RetryAfter(ErrNotFound) has a hint")
	}
}
