package chat

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/chatql/broker"
	"github.com/killrchat/chatql/store"
)

// namesStore answers Names from a map, optionally holding each read until
// released, and counts the logins it was asked for.
type namesStore struct {
	store.Store // nil: only Names is called

	mu      sync.Mutex
	names   map[string]store.UserRef
	fail    error
	asked   [][]string
	started chan struct{}   // gets a value when a read starts, if not nil
	release <-chan struct{} // a read waits for it, if not nil
}

func (s *namesStore) Names(ctx context.Context, logins []string) (map[string]store.PublicProfile, error) {
	s.mu.Lock()
	s.asked = append(s.asked, append([]string{}, logins...))
	started, release := s.started, s.release
	s.mu.Unlock()
	if started != nil {
		started <- struct{}{}
	}
	if release != nil {
		<-release
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return nil, s.fail
	}
	out := map[string]store.PublicProfile{}
	for _, l := range logins {
		if u, ok := s.names[l]; ok {
			out[l] = store.PublicProfile{UserRef: u}
		}
	}
	return out, nil
}

func (s *namesStore) set(u store.UserRef) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.names[u.Login] = u
}

func newTestProfiles(s *namesStore) *Profiles {
	return NewProfiles(s, slog.New(slog.NewTextHandler(io.Discard, nil)), 100, time.Minute)
}

func user(login, first string) store.UserRef {
	return store.UserRef{Login: login, Firstname: first, Lastname: "Tester"}
}

func TestProfilesCurrentNamesAndDeleted(t *testing.T) {
	s := &namesStore{names: map[string]store.UserRef{"alice": user("alice", "Alicia")}}
	p := newTestProfiles(s)
	ctx := t.Context()
	// The copy a message carries says "Alice"; the profile is newer.
	if got := p.Get(ctx, user("alice", "Alice")); got.Firstname != "Alicia" || got.Deleted {
		t.Fatalf("Get(alice) = %+v, want the stored profile", got)
	}
	if got := p.Get(ctx, user("ghost", "Casper")); !got.Deleted || got.Firstname != "" || got.Lastname != "" || got.Login != "ghost" {
		t.Fatalf("Get(ghost) = %+v, want a deleted user with no names", got)
	}
	p.Get(ctx, user("alice", "Alice"))
	p.Get(ctx, user("ghost", "Casper"))
	if n := p.Reads(); n != 2 {
		t.Fatalf("%d reads for two users asked twice each, want 2 (cached)", n)
	}
}

// TestProfilesBatchMisses: misses that come while a read is in flight are
// read together in the next one.
func TestProfilesBatchMisses(t *testing.T) {
	release := make(chan struct{})
	s := &namesStore{names: map[string]store.UserRef{}, started: make(chan struct{}, 100), release: release}
	for i := range 50 {
		s.set(user(fmt.Sprintf("u%02d", i), fmt.Sprintf("U%02d", i)))
	}
	p := newTestProfiles(s)
	ctx := t.Context()
	got := make([]Profile, 50)
	var wg sync.WaitGroup
	wg.Go(func() { got[0] = p.Get(ctx, user("u00", "old")) })
	<-s.started // the first read is in flight
	for i := 1; i < 50; i++ {
		wg.Go(func() { got[i] = p.Get(ctx, user(fmt.Sprintf("u%02d", i), "old")) })
	}
	waitUntil(t, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.next != nil && len(p.next.logins) == 49
	})
	close(release)
	wg.Wait()
	for i, g := range got {
		if want := fmt.Sprintf("U%02d", i); g.Firstname != want {
			t.Errorf("profile %d = %+v, want %s", i, g, want)
		}
	}
	if n := p.Reads(); n != 2 {
		t.Errorf("%d store reads for 50 concurrent misses, want 2: %v", n, s.asked)
	}
	p.Warm(ctx, []string{"u01", "u02", "u03"})
	if n := p.Reads(); n != 2 {
		t.Errorf("Warm of cached users read the store (%d reads)", n)
	}
}

// TestProfilesForget: a dropped profile is read again; a read in flight
// when a profile is dropped is not cached, since it may predate the change.
func TestProfilesForget(t *testing.T) {
	s := &namesStore{names: map[string]store.UserRef{"alice": user("alice", "Alice")}}
	p := newTestProfiles(s)
	ctx := t.Context()
	p.Get(ctx, user("alice", ""))
	epoch := p.Epoch()
	s.set(user("alice", "Alicia"))
	if got := p.Get(ctx, user("alice", "")); got.Firstname != "Alice" {
		t.Fatalf("cached profile = %+v, want the cached Alice until it is dropped", got)
	}
	p.Forget("alice")
	if p.Epoch() == epoch {
		t.Fatal("Forget left the epoch as it was")
	}
	if got := p.Get(ctx, user("alice", "")); got.Firstname != "Alicia" {
		t.Fatalf("after Forget = %+v, want Alicia", got)
	}

	// A read in flight across a Forget.
	release := make(chan struct{})
	s.mu.Lock()
	s.started, s.release = make(chan struct{}, 1), release
	s.mu.Unlock()
	done := make(chan Profile)
	go func() { done <- p.Get(ctx, user("bob", "")) }()
	<-s.started
	p.Forget("carol")
	close(release)
	<-done
	s.mu.Lock()
	s.started, s.release = nil, nil
	s.mu.Unlock()
	reads := p.Reads()
	p.Get(ctx, user("bob", ""))
	if p.Reads() != reads+1 {
		t.Error("a read that was in flight across a Forget was cached")
	}
}

func TestProfilesTTL(t *testing.T) {
	s := &namesStore{names: map[string]store.UserRef{"alice": user("alice", "Alice")}}
	p := newTestProfiles(s)
	now := time.Now()
	p.now = func() time.Time { return now }
	ctx := t.Context()
	p.Get(ctx, user("alice", ""))
	s.set(user("alice", "Alicia"))
	now = now.Add(59 * time.Second)
	if got := p.Get(ctx, user("alice", "")); got.Firstname != "Alice" {
		t.Fatalf("within the TTL: %+v, want the cached Alice", got)
	}
	now = now.Add(time.Second)
	if got := p.Get(ctx, user("alice", "")); got.Firstname != "Alicia" {
		t.Fatalf("after the TTL: %+v, want Alicia read again", got)
	}
}

// TestProfilesStoreFails: a failed read shows the names as stored, and is
// not cached.
func TestProfilesStoreFails(t *testing.T) {
	s := &namesStore{names: map[string]store.UserRef{}, fail: errors.New("unavailable")}
	p := newTestProfiles(s)
	ctx := t.Context()
	if got := p.Get(ctx, user("alice", "Alice")); got.Firstname != "Alice" || got.Deleted {
		t.Fatalf("Get while the store fails = %+v, want the names as stored", got)
	}
	s.mu.Lock()
	s.fail = nil
	s.mu.Unlock()
	s.set(user("alice", "Alicia"))
	if got := p.Get(ctx, user("alice", "Alice")); got.Firstname != "Alicia" {
		t.Fatalf("Get once the store answers = %+v, want Alicia", got)
	}
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestProfilesFollow: announcements of other instances drop the profiles
// they name, call back for deletions, and a gap drops every profile.
func TestProfilesFollow(t *testing.T) {
	s := &namesStore{names: map[string]store.UserRef{"alice": user("alice", "Alice"), "bob": user("bob", "Bob")}}
	p := newTestProfiles(s)
	b := broker.NewLocal(16)
	defer b.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	deleted := make(chan string, 1)
	r := &Service{Broker: b, Profiles: p, Log: slog.Default()}
	if err := r.FollowAnnouncements(ctx, func(login string) { deleted <- login }); err != nil {
		t.Fatal(err)
	}
	cached := func(login string) bool { _, ok := p.cached(login); return ok }
	p.Warm(ctx, []string{"alice", "bob"})

	announce := func(kind store.EventKind, login string) {
		t.Helper()
		if err := b.Publish(ctx, broker.AnnouncementsTopic, store.Event{Kind: kind, User: store.UserRef{Login: login}}); err != nil {
			t.Fatal(err)
		}
	}
	announce(store.ProfileChanged, "alice")
	waitUntil(t, func() bool { return !cached("alice") })
	if !cached("bob") {
		t.Fatal("a change of alice's profile dropped bob's")
	}
	announce(store.AccountDeleted, "bob")
	if got := <-deleted; got != "bob" {
		t.Fatalf("deleted callback for %q, want bob", got)
	}
	waitUntil(t, func() bool { return !cached("bob") })

	p.Warm(ctx, []string{"alice", "bob"})
	announce(broker.Resync, "")
	waitUntil(t, func() bool { return !cached("alice") && !cached("bob") })
}

// TestProfilesJoinReadInFlight: a miss of a login the read in flight reads
// waits for that read (a UserSummary's three fields miss at once), unless
// a profile was dropped since it started.
func TestProfilesJoinReadInFlight(t *testing.T) {
	release := make(chan struct{})
	s := &namesStore{names: map[string]store.UserRef{"alice": user("alice", "Alice")}, started: make(chan struct{}, 10), release: release}
	p := newTestProfiles(s)
	ctx := t.Context()
	done := make(chan struct{})
	go func() { p.Get(ctx, user("alice", "")); close(done) }()
	<-s.started
	inFlight := func() *profRead {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.current
	}()
	if r := p.join([]string{"alice"}); r != inFlight {
		t.Error("a miss of the login in flight did not wait for its read")
	}
	if r := p.join([]string{"alice", "bob"}); r == inFlight {
		t.Error("a miss of a login not in flight waits for the read in flight")
	}
	p.Forget("carol")
	if r := p.join([]string{"alice"}); r == inFlight {
		t.Error("a miss after a drop waits for a read that began before it")
	}
	close(release)
	<-done
}
