package presence

import (
	"sync"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

// told collects what a Typing tells, in order.
type told struct {
	mu     sync.Mutex
	events []store.Event
	at     []time.Time
	more   chan struct{}
}

func newTold() *told { return &told{more: make(chan struct{}, 100)} }

func (c *told) tell(ev store.Event) {
	c.mu.Lock()
	c.events = append(c.events, ev)
	c.at = append(c.at, time.Now())
	c.mu.Unlock()
	c.more <- struct{}{}
}

func (c *told) kinds() []store.EventKind {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []store.EventKind
	for _, ev := range c.events {
		out = append(out, ev.Kind)
	}
	return out
}

// wait waits until n events were told.
func (c *told) wait(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		c.mu.Lock()
		got := len(c.events)
		c.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-c.more:
		case <-deadline:
			t.Fatalf("told %v, waited for %d events", c.kinds(), n)
		}
	}
}

var alice = store.UserRef{Login: "alice", Firstname: "Alice"}

func TestTypingStartRenewStop(t *testing.T) {
	c := newTold()
	typing := &Typing{Tell: c.tell, Timeout: time.Hour, Renewal: time.Hour}
	typing.Start("tea-party", alice)
	typing.Start("tea-party", alice) // a renewal within Renewal tells nobody
	typing.Start("alice:bob", alice)
	if got := typing.Typists(); got != 2 {
		t.Fatalf("Typists = %d, want 2", got)
	}
	if !typing.Stop("tea-party", "alice") || typing.Stop("tea-party", "alice") || typing.Stop("tea-party", "bob") {
		t.Fatal("Stop reports a typist it did not have, or not one it had")
	}
	want := []store.EventKind{store.TypingStarted, store.TypingStarted, store.TypingStopped}
	if got := c.kinds(); len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("told %v, want %v", got, want)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if ev := c.events[1]; ev.Room != "alice:bob" || ev.User != alice || !ev.ID.IsZero() {
		t.Fatalf("second start = %+v, want alice typing in alice:bob with no id", ev)
	}
	if ev := c.events[2]; ev.Room != "tea-party" || ev.User != alice {
		t.Fatalf("stop = %+v", ev)
	}
}

// A renewal after Renewal is told again; one sooner is not.
func TestTypingRenewalTold(t *testing.T) {
	c := newTold()
	clock := time.Now()
	typing := &Typing{Tell: c.tell, Timeout: time.Hour, Renewal: time.Second, now: func() time.Time { return clock }}
	typing.Start("tea-party", alice)
	clock = clock.Add(time.Second - 1)
	typing.Start("tea-party", alice)
	clock = clock.Add(1)
	typing.Start("tea-party", alice)
	typing.Start("tea-party", alice)
	if got := c.kinds(); len(got) != 2 || got[1] != store.TypingStarted {
		t.Fatalf("told %v, want two starts", got)
	}
	typing.Stop("tea-party", "alice")
}

// Without a renewal a start lapses into a stop, never before Timeout after
// the last renewal.
func TestTypingLapses(t *testing.T) {
	const timeout = 50 * time.Millisecond
	c := newTold()
	typing := &Typing{Tell: c.tell, Timeout: timeout, Renewal: time.Hour}
	typing.Start("tea-party", alice)
	typing.Start("tea-party", alice) // renews silently
	renewed := time.Now()
	c.wait(t, 2)
	if got := c.kinds(); got[1] != store.TypingStopped {
		t.Fatalf("told %v, want a start then a stop", got)
	}
	c.mu.Lock()
	lapsed := c.at[1].Sub(renewed)
	c.mu.Unlock()
	if lapsed < timeout {
		t.Fatalf("lapsed %v after the renewal, before the timeout %v", lapsed, timeout)
	}
	if typing.Typists() != 0 || typing.Stop("tea-party", "alice") {
		t.Fatal("a lapsed typist is still tracked")
	}
	// Typing again after a lapse is a new start.
	typing.Start("tea-party", alice)
	c.wait(t, 4)
	if got := c.kinds(); got[2] != store.TypingStarted || got[3] != store.TypingStopped {
		t.Fatalf("told %v, want start, stop, start, stop", got)
	}
}

// Many users typing and stopping at once, racing their lapses: every start
// ends in exactly one stop.
func TestTypingConcurrent(t *testing.T) {
	c := newTold()
	c.more = make(chan struct{}, 10000)
	typing := &Typing{Tell: c.tell, Timeout: time.Millisecond, Renewal: time.Hour}
	var wg sync.WaitGroup
	for i := range 20 {
		u := store.UserRef{Login: "user" + string(rune('a'+i))}
		wg.Go(func() {
			for j := range 50 {
				typing.Start("tea-party", u)
				if j%2 == 0 {
					typing.Stop("tea-party", u.Login)
				}
			}
			typing.Stop("tea-party", u.Login)
		})
	}
	wg.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	open := map[string]int{}
	for _, ev := range c.events {
		switch ev.Kind {
		case store.TypingStarted:
			open[ev.User.Login]++
		case store.TypingStopped:
			open[ev.User.Login]--
		}
		if n := open[ev.User.Login]; n < 0 || n > 1 {
			t.Fatalf("%s: %d starts open after %s", ev.User.Login, n, ev.Kind)
		}
	}
	for login, n := range open {
		if n != 0 {
			t.Errorf("%s: a start without its stop", login)
		}
	}
}
