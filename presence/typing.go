// Package presence tracks who is there right now: who is typing in a
// conversation, and who is online. Neither is ever stored: both are
// ephemeral events that subscribers get live and that no log replays.
package presence

import (
	"sync"
	"time"

	"github.com/killrchat/chatql/store"
)

// Typing defaults: a start holds for TypingTimeout unless renewed, and a
// renewal sooner than TypingRenewal after the last start that was told
// tells nobody (clients renew every few seconds while the user types).
const (
	TypingTimeout = 6 * time.Second
	TypingRenewal = 3 * time.Second
)

// Typing tracks who is typing where on this instance and tells each
// conversation's subscribers through Tell: a TypingStarted when someone
// starts (and again on a renewal at least Renewal after the last one told),
// a TypingStopped when they stop, or when Timeout passes without a renewal.
// Each instance tracks the typists whose requests it served; the events
// cross instances through the broker like any other.
type Typing struct {
	// Tell delivers a typing event (zero id: in no log) to the
	// conversation's subscribers. It must not block.
	Tell func(ev store.Event)
	// Timeout and Renewal default to TypingTimeout and TypingRenewal.
	Timeout, Renewal time.Duration
	// now is the clock of renewals (time.Now when nil); tests set it.
	now func() time.Time

	mu      sync.Mutex
	typists map[typist]*typing
}

// typist is one user typing in one conversation.
type typist struct{ conversation, login string }

type typing struct {
	user  store.UserRef
	told  time.Time // when the last TypingStarted was told
	until time.Time // when it lapses without a renewal
	timer *time.Timer
}

func (t *Typing) timeout() time.Duration { return cmpOr(t.Timeout, TypingTimeout) }
func (t *Typing) renewal() time.Duration { return cmpOr(t.Renewal, TypingRenewal) }

func (t *Typing) clock() time.Time {
	if t.now != nil {
		return t.now()
	}
	return time.Now()
}

func cmpOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// Start records that u types in the conversation, or renews it.
func (t *Typing) Start(conversation string, u store.UserRef) {
	now := t.clock()
	key := typist{conversation, u.Login}
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.typists[key]
	if st == nil {
		if t.typists == nil {
			t.typists = make(map[typist]*typing)
		}
		st = &typing{user: u}
		st.timer = time.AfterFunc(t.timeout(), func() { t.lapse(key, st) })
		t.typists[key] = st
	} else if now.Sub(st.told) < t.renewal() {
		st.until = now.Add(t.timeout())
		return
	}
	st.told, st.until = now, now.Add(t.timeout())
	t.Tell(store.Event{Kind: store.TypingStarted, Room: conversation, User: u})
}

// Stop records that u stopped typing in the conversation (they sent their
// message or cleared it) and tells the subscribers if u was typing here.
// It reports whether u was. A nil Typing tracks nobody.
func (t *Typing) Stop(conversation, login string) bool {
	if t == nil {
		return false
	}
	key := typist{conversation, login}
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.typists[key]
	if st == nil {
		return false
	}
	st.timer.Stop()
	t.end(key, st)
	return true
}

// Typists is how many are typing now, over every conversation.
func (t *Typing) Typists() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.typists)
}

// lapse ends st unless it was renewed meanwhile (then it waits on) or
// already ended.
func (t *Typing) lapse(key typist, st *typing) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.typists[key] != st {
		return
	}
	if left := st.until.Sub(t.clock()); left > 0 {
		st.timer.Reset(left)
		return
	}
	t.end(key, st)
}

func (t *Typing) end(key typist, st *typing) {
	delete(t.typists, key)
	t.Tell(store.Event{Kind: store.TypingStopped, Room: key.conversation, User: st.user})
}
