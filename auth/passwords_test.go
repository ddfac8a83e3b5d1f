package auth

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// waitUntil polls cond (a counter's state, not the clock) until it holds.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestPasswordsBound fills the hashing slots and the queue with hashes that
// block: no more than Limit ever run, the next caller is refused with
// ErrBusy at once, a waiting caller leaves when its context ends, and all
// the others finish once the slots free up.
func TestPasswordsBound(t *testing.T) {
	const limit = 2
	p, err := newPasswords(bcrypt.MinCost, limit)
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	p.hash = func(password []byte, cost int) ([]byte, error) {
		<-release
		return bcrypt.GenerateFromPassword(password, cost)
	}
	queue := int(p.queueLimit)
	ctx := t.Context()
	var wg sync.WaitGroup
	errs := make([]error, limit+queue-1)
	for i := range errs {
		wg.Go(func() { _, errs[i] = p.Hash(ctx, "password") })
	}
	// The last place in the queue goes to a caller that gives up.
	leaving, leave := context.WithCancel(ctx)
	left := make(chan error, 1)
	waitUntil(t, "the slots are full and the queue all but full", func() bool {
		return p.running.Load() == limit && p.waiting.Load() == int64(queue-1)
	})
	go func() { _, err := p.Hash(leaving, "password"); left <- err }()
	waitUntil(t, "the queue is full", func() bool { return p.waiting.Load() == int64(queue) })

	if _, err := p.Hash(ctx, "password"); !errors.Is(err, ErrBusy) {
		t.Errorf("Hash past the queue = %v, want ErrBusy", err)
	}
	if err := p.Check(ctx, nil, "password"); !errors.Is(err, ErrBusy) {
		t.Errorf("Check past the queue = %v, want ErrBusy", err)
	}
	leave()
	if err := <-left; !errors.Is(err, context.Canceled) {
		t.Errorf("Hash of a caller that gave up = %v, want context.Canceled", err)
	}
	close(release)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Hash %d = %v, want nil", i, err)
		}
	}
	if peak := p.PeakRunning(); peak != limit {
		t.Errorf("at most %d hashes ran at once, want exactly the limit %d", peak, limit)
	}
	if n := p.waiting.Load(); n != 0 {
		t.Errorf("%d callers still counted as waiting", n)
	}
}

func TestPasswordsCheck(t *testing.T) {
	p, err := NewPasswords(bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	hash, err := p.Hash(ctx, "wonderland")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Check(ctx, hash, "wonderland"); err != nil {
		t.Errorf("Check(right password) = %v", err)
	}
	for _, h := range [][]byte{hash, nil} {
		if err := p.Check(ctx, h, "looking-glass"); !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("Check(wrong password) = %v, want ErrUnauthenticated", err)
		}
	}
}
