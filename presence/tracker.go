package presence

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/killrchat/chatql/store"
)

// Registry is where instances record who is online through them: this
// process alone (Local), or every instance sharing a Redis (Redis).
type Registry interface {
	// Arrive records that login is online through this instance and
	// reports whether it was offline everywhere before.
	Arrive(ctx context.Context, login string) (wasOffline bool, err error)
	// Depart records that login has no connection to this instance any
	// more and reports whether it is now offline everywhere.
	Depart(ctx context.Context, login string) (nowOffline bool, err error)
	// Online reports which of logins are online through any instance.
	Online(ctx context.Context, logins []string) ([]bool, error)
	// Run keeps this instance's records alive and sweeps those of
	// instances that died, handing each of their users who is now offline
	// everywhere to gone, until ctx ends; then it removes this instance's
	// records. local lists the users online through this instance, for
	// when the records must be made again (Redis lost them, or a write of
	// them failed).
	Run(ctx context.Context, local func() []string, gone func(login string))
}

// DefaultGrace is how long a user whose last connection closed stays
// online, so that a page reload or a reconnect to another instance is not
// told as offline and online again.
const DefaultGrace = 3 * time.Second

// registryTimeout bounds each registry call of a connect or departure.
const registryTimeout = 5 * time.Second

// Tracker counts each user's open connections to this instance, keeps the
// registry's record of them in line, and tells the people who share a room
// or conversation with a user (through Tell) when they come online
// anywhere and when they go offline everywhere.
type Tracker struct {
	Registry Registry
	// Tell is told the user and their new state, by at most Tellers
	// goroutines at once (DefaultTellers if 0).
	Tell    func(ctx context.Context, u store.UserRef, online bool)
	Tellers int
	// Grace defaults to DefaultGrace.
	Grace time.Duration
	Log   *slog.Logger

	mu     sync.Mutex
	users  map[string]*connected
	closed bool

	queue telling
}

// DefaultTellers bounds the goroutines telling changes at once: a storm of
// connections (every client of a restarted instance reconnecting) queues
// its changes instead of reading the store for all of them at once.
const DefaultTellers = 4

// telling is the queue of changes to tell: the latest state per user, in
// the order the users changed, each told only if it differs from the last
// told, so a user who came and went while queued is told once, or not at
// all, and what subscribers see alternates.
type telling struct {
	mu      sync.Mutex
	pending map[string]change
	order   []string
	told    map[string]bool // logins last told online
	busy    map[string]bool // logins a teller is telling now
	running int
}

type change struct {
	user   store.UserRef
	online bool
	// swept: a dead instance's user, whose arrival another instance told,
	// so it is told whatever this instance told last.
	swept bool
}

// connected is one user's connections to this instance, and what the
// registry holds of them.
type connected struct {
	user  store.UserRef
	conns int
	// leaving is the grace of a user whose last connection closed.
	leaving *time.Timer
	// registered: the registry has the user online through this instance
	// (as far as the last call knew).
	registered bool
	// settling: a settle is bringing the registry in line.
	settling bool
}

// online is whether the user counts as online through this instance.
func (c *connected) online() bool { return c.conns > 0 || c.leaving != nil }

// Join records one open connection of u, until leave is called, once (nil
// if the tracker is closed). The registry learns of it in the background.
func (t *Tracker) Join(u store.UserRef) (leave func()) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	if t.users == nil {
		t.users = make(map[string]*connected)
	}
	c := t.users[u.Login]
	if c == nil {
		c = &connected{user: u}
		t.users[u.Login] = c
	}
	c.conns++
	if c.leaving != nil { // back within the grace: nothing happened
		c.leaving.Stop()
		c.leaving = nil
	}
	t.startSettle(c)
	t.mu.Unlock()
	return func() { t.disconnect(c) }
}

// Online reports which of logins are online anywhere.
func (t *Tracker) Online(ctx context.Context, logins []string) ([]bool, error) {
	return t.Registry.Online(ctx, logins)
}

// Local lists the users online through this instance.
func (t *Tracker) Local() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]string, 0, len(t.users))
	for login, c := range t.users {
		if c.online() {
			out = append(out, login)
		}
	}
	return out
}

// Run runs the registry (see Registry.Run) until ctx ends: the users of
// dead instances are told offline, with their names from names.
func (t *Tracker) Run(ctx context.Context, names func(ctx context.Context, login string) store.UserRef) {
	t.Registry.Run(ctx, t.Local, func(login string) {
		ctx, cancel := context.WithTimeout(context.Background(), registryTimeout)
		defer cancel()
		t.queueTell(change{user: names(ctx, login), swept: true})
	})
}

// Close lets every user go at once, without a grace: the instance is
// shutting down and its connections with it. Those who have no other
// instance are told offline. It waits for the registry's records and the
// tellers, until ctx ends; connections made afterwards are not counted.
func (t *Tracker) Close(ctx context.Context) error {
	t.mu.Lock()
	t.closed = true
	for _, c := range t.users {
		c.conns = 0
		if c.leaving != nil {
			c.leaving.Stop()
			c.leaving = nil
		}
		t.startSettle(c)
	}
	t.mu.Unlock()
	for {
		t.mu.Lock()
		left := len(t.users)
		t.mu.Unlock()
		t.queue.mu.Lock()
		telling, untold := t.queue.running, len(t.queue.pending)
		t.queue.mu.Unlock()
		if left == 0 && telling == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("presence: %d users' departures unrecorded or untold at shutdown: %w", left+untold, ctx.Err())
		case <-time.After(10 * time.Millisecond): // polls the settles
		}
	}
}

func (t *Tracker) grace() time.Duration { return cmpOr(t.Grace, DefaultGrace) }

func (t *Tracker) disconnect(c *connected) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return // Close let every connection go
	}
	if c.conns--; c.conns > 0 {
		return
	}
	var grace *time.Timer
	grace = time.AfterFunc(t.grace(), func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if c.leaving == grace {
			c.leaving = nil
			t.startSettle(c)
		}
	})
	c.leaving = grace
}

// startSettle starts a settle of c unless one runs or nothing is to do.
// t.mu is held.
func (t *Tracker) startSettle(c *connected) {
	if !c.settling && c.online() != c.registered {
		c.settling = true
		go t.settle(c)
	}
}

// settle brings the registry in line with c, one call at a time, until it
// agrees (the user may come and go while a call runs), telling each change
// of the user's state everywhere.
func (t *Tracker) settle(c *connected) {
	for {
		t.mu.Lock()
		online := c.online()
		if online == c.registered {
			c.settling = false
			if !online {
				delete(t.users, c.user.Login)
			}
			t.mu.Unlock()
			return
		}
		t.mu.Unlock()
		t.record(c.user, online)
		t.mu.Lock()
		c.registered = online
		t.mu.Unlock()
	}
}

// record tells the registry that u is online through this instance or not
// any more, and tells the people around u if that changed u's state
// everywhere. A failed call is logged; the registry's Run makes its
// records again from Local.
func (t *Tracker) record(u store.UserRef, online bool) {
	ctx, cancel := context.WithTimeout(context.Background(), registryTimeout)
	defer cancel()
	var changed bool
	var err error
	if online {
		changed, err = t.Registry.Arrive(ctx, u.Login)
	} else {
		changed, err = t.Registry.Depart(ctx, u.Login)
	}
	if err != nil {
		t.Log.Warn("presence: could not record a user's presence; the next heartbeat will", "login", u.Login, "online", online, "err", err)
		return
	}
	if changed {
		t.queueTell(change{user: u, online: online})
	}
}

// queueTell queues a change of a user's state to be told.
func (t *Tracker) queueTell(c change) {
	u := c.user
	q := &t.queue
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.pending == nil {
		q.pending, q.told, q.busy = make(map[string]change), make(map[string]bool), make(map[string]bool)
	}
	_, queued := q.pending[u.Login]
	q.pending[u.Login] = c
	if queued || q.busy[u.Login] {
		return // told in its turn, or next by the teller telling u now
	}
	q.order = append(q.order, u.Login)
	if q.running < cmp.Or(t.Tellers, DefaultTellers) {
		q.running++
		go t.tellQueued()
	}
}

// tellQueued tells the queued changes until none is left, one user's
// changes by one teller at a time, in order.
func (t *Tracker) tellQueued() {
	q := &t.queue
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.order) > 0 {
		login := q.order[0]
		q.order = q.order[1:]
		q.busy[login] = true
		for {
			c, ok := q.pending[login]
			if !ok {
				break
			}
			delete(q.pending, login)
			if q.told[login] == c.online && !c.swept {
				continue
			}
			if c.online {
				q.told[login] = true
			} else {
				delete(q.told, login)
			}
			q.mu.Unlock()
			ctx, cancel := context.WithTimeout(context.Background(), registryTimeout)
			t.Tell(ctx, c.user, c.online)
			cancel()
			q.mu.Lock()
		}
		delete(q.busy, login)
	}
	q.running--
}

// Local is the registry of a single instance: a user is online while
// connected to it.
type Local struct {
	mu     sync.Mutex
	online map[string]bool
}

func (l *Local) Arrive(_ context.Context, login string) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.online == nil {
		l.online = make(map[string]bool)
	}
	was := l.online[login]
	l.online[login] = true
	return !was, nil
}

func (l *Local) Depart(_ context.Context, login string) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	was := l.online[login]
	delete(l.online, login)
	return was, nil
}

func (l *Local) Online(_ context.Context, logins []string) ([]bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]bool, len(logins))
	for i, login := range logins {
		out[i] = l.online[login]
	}
	return out, nil
}

// Run waits for ctx: nobody else records anything.
func (l *Local) Run(ctx context.Context, _ func() []string, _ func(string)) { <-ctx.Done() }
