package auth

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
	"github.com/killrchat/chatql/store/embedded"
)

// testInstance is one server's Sessions on a shared store.
func testInstance(t *testing.T, st store.Store, ttl, interval time.Duration) *Sessions {
	t.Helper()
	tokens, err := NewTokens(testSecret, ttl)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSessions(t.Context(), SessionConfig{Store: st, Tokens: tokens, Secret: testSecret, RefreshTTL: time.Hour, CheckInterval: interval})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func testStore(t *testing.T) store.Store {
	t.Helper()
	db, err := embedded.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// testUser signs up a user.
func testUser(t *testing.T, st store.Store, login string) store.UserRef {
	t.Helper()
	u := store.UserRef{Login: login, Firstname: "F", Lastname: "L"}
	if err := st.CreateUser(t.Context(), store.Account{User: store.User{UserRef: u}, PassHash: []byte("h")}); err != nil {
		t.Fatal(err)
	}
	return u
}

func wantVerified(t *testing.T, s *Sessions, token string) {
	t.Helper()
	if _, err := s.Verify(t.Context(), token); err != nil {
		t.Fatalf("Verify = %v, want nil", err)
	}
}

func wantRefused(t *testing.T, s *Sessions, token string) {
	t.Helper()
	if c, err := s.Verify(t.Context(), token); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("Verify = %+v, %v; want ErrUnauthenticated", c, err)
	}
}

// TestVerifyUnknownSession refuses well-signed tokens whose session the
// store does not have: none at all, a made-up one, one of another login,
// and any token of a login that does not exist.
func TestVerifyUnknownSession(t *testing.T) {
	st := testStore(t)
	s := testInstance(t, st, time.Hour, time.Hour)
	alice := testUser(t, st, "alice")
	pair, err := s.Start(t.Context(), alice)
	if err != nil {
		t.Fatal(err)
	}
	wantVerified(t, s, pair.AccessToken)
	for name, token := range map[string]func() (string, time.Time, error){
		"no session":        func() (string, time.Time, error) { return s.tokens.Issue(alice) },
		"unknown session":   func() (string, time.Time, error) { return s.tokens.IssueFor(alice, "made-up") },
		"another's session": func() (string, time.Time, error) { return s.tokens.IssueFor(store.UserRef{Login: "bob"}, pair.Session) },
		"login that is absent": func() (string, time.Time, error) {
			return s.tokens.IssueFor(store.UserRef{Login: "ghost"}, newSessionID())
		},
	} {
		t.Run(name, func(t *testing.T) {
			tok, _, err := token()
			if err != nil {
				t.Fatal(err)
			}
			wantRefused(t, s, tok)
		})
	}
}

func TestRefreshRotates(t *testing.T) {
	st := testStore(t)
	s := testInstance(t, st, time.Hour, time.Hour)
	ctx := t.Context()
	p0, err := s.Start(ctx, testUser(t, st, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	p1, u, err := s.Refresh(ctx, p0.RefreshToken, "")
	if err != nil {
		t.Fatalf("Refresh = %v", err)
	}
	if u.Login != "alice" || p1.Session != p0.Session || p1.RefreshToken == p0.RefreshToken {
		t.Errorf("Refresh = %+v, %+v; want a new refresh token of alice's session %s", p1, u, p0.Session)
	}
	wantVerified(t, s, p1.AccessToken)
	wantVerified(t, s, p0.AccessToken) // the session stands: earlier access tokens live out their short life
	p2, _, err := s.Refresh(ctx, p1.RefreshToken, "")
	if err != nil {
		t.Fatalf("second Refresh = %v", err)
	}
	wantVerified(t, s, p2.AccessToken)
}

// TestRefreshReuseRevokesFamily uses a refresh token twice: the second use
// fails and ends the session, so the tokens issued from the first use stop
// working too.
func TestRefreshReuseRevokesFamily(t *testing.T) {
	st := testStore(t)
	s := testInstance(t, st, time.Hour, time.Hour)
	ctx := t.Context()
	alice := testUser(t, st, "alice")
	p0, err := s.Start(ctx, alice)
	if err != nil {
		t.Fatal(err)
	}
	other, err := s.Start(ctx, alice) // another login of alice's: untouched
	if err != nil {
		t.Fatal(err)
	}
	p1, _, err := s.Refresh(ctx, p0.RefreshToken, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Refresh(ctx, p0.RefreshToken, ""); !errors.Is(err, ErrUnauthenticated) || !strings.Contains(err.Error(), "already used") {
		t.Fatalf("Refresh(used token) = %v, want ErrUnauthenticated saying it was already used", err)
	}
	wantRefused(t, s, p1.AccessToken)
	wantRefused(t, s, p0.AccessToken)
	if _, _, err := s.Refresh(ctx, p1.RefreshToken, ""); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("Refresh(newest token of a revoked family) = %v, want ErrUnauthenticated", err)
	}
	wantVerified(t, s, other.AccessToken)
}

// TestRefreshForgedKeepsSession: a refresh token the server did not issue
// is refused and does not end the session it names.
func TestRefreshForgedKeepsSession(t *testing.T) {
	st := testStore(t)
	s := testInstance(t, st, time.Hour, time.Hour)
	ctx := t.Context()
	p0, err := s.Start(ctx, testUser(t, st, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	body, _, _ := cutLast(p0.RefreshToken, ".")
	forged := body + "." + b64.EncodeToString(make([]byte, 32))
	if _, _, err := s.Refresh(ctx, forged, ""); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("Refresh(forged) = %v, want ErrUnauthenticated", err)
	}
	wantVerified(t, s, p0.AccessToken)
	if _, _, err := s.Refresh(ctx, p0.RefreshToken, ""); err != nil {
		t.Errorf("Refresh(genuine) after a forged one = %v", err)
	}
}

// TestRefreshConcurrent uses one refresh token from several goroutines:
// exactly one use rotates it, and the others, as reuse, end the session.
func TestRefreshConcurrent(t *testing.T) {
	st := testStore(t)
	s := testInstance(t, st, time.Hour, time.Hour)
	ctx := t.Context()
	p0, err := s.Start(ctx, testUser(t, st, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	pairs := make([]Pair, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			pairs[i], _, errs[i] = s.Refresh(ctx, p0.RefreshToken, "")
		})
	}
	close(start)
	wg.Wait()
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, ErrUnauthenticated):
			t.Errorf("Refresh %d = %v, want nil or ErrUnauthenticated", i, err)
		}
	}
	if won > 1 {
		t.Errorf("%d concurrent uses of one refresh token succeeded, want at most one", won)
	}
	if _, err := st.Session(ctx, "alice", p0.Session); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("session after concurrent reuse = %v, want it revoked", err)
	}
}

// TestRefreshRetriedInGrace: the client whose refresh's answer was lost
// sends it again, with the same clientRefreshId, and gets the same
// session's current pair; concurrent tries all get it. Anyone else's
// second use of the token, with another id, none, or after RefreshGrace,
// is a reuse and ends the session.
func TestRefreshRetriedInGrace(t *testing.T) {
	const id = "3f1c7a9e-retry-0001"
	ctx := t.Context()
	st := testStore(t)
	s := testInstance(t, st, time.Hour, time.Hour)
	now := time.Now()
	s.now = func() time.Time { return now }
	alice := testUser(t, st, "alice")

	p0, err := s.Start(ctx, alice)
	if err != nil {
		t.Fatal(err)
	}
	p1, _, err := s.Refresh(ctx, p0.RefreshToken, id)
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(RefreshGrace - time.Second)
	again, u, err := s.Refresh(ctx, p0.RefreshToken, id)
	if err != nil || u.Login != "alice" || again.RefreshToken != p1.RefreshToken || again.Session != p0.Session {
		t.Fatalf("retried Refresh = %+v, %+v, %v; want alice's current refresh token %q", again, u, err, p1.RefreshToken)
	}
	wantVerified(t, s, again.AccessToken)
	p2, _, err := s.Refresh(ctx, again.RefreshToken, "")
	if err != nil {
		t.Fatalf("Refresh of the retried answer's token = %v", err)
	}
	wantVerified(t, s, p2.AccessToken)

	t.Run("Concurrent", func(t *testing.T) {
		p, err := s.Start(ctx, alice)
		if err != nil {
			t.Fatal(err)
		}
		const n = 8
		pairs := make([]Pair, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				pairs[i], _, errs[i] = s.Refresh(ctx, p.RefreshToken, id)
			})
		}
		close(start)
		wg.Wait()
		for i := range n {
			if errs[i] != nil || pairs[i].RefreshToken != pairs[0].RefreshToken {
				t.Fatalf("try %d = %+v, %v; want every try to get %q", i, pairs[i], errs[i], pairs[0].RefreshToken)
			}
		}
		wantVerified(t, s, pairs[0].AccessToken)
	})

	for _, tc := range []struct {
		name  string
		id    string
		after time.Duration
	}{
		{"AnotherID", "another-client-0002", 0},
		{"NoID", "", 0},
		{"AfterGrace", id, RefreshGrace},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := s.Start(ctx, alice)
			if err != nil {
				t.Fatal(err)
			}
			next, _, err := s.Refresh(ctx, p.RefreshToken, id)
			if err != nil {
				t.Fatal(err)
			}
			now = now.Add(tc.after)
			if _, _, err := s.Refresh(ctx, p.RefreshToken, tc.id); !errors.Is(err, ErrUnauthenticated) {
				t.Fatalf("second use = %v, want ErrUnauthenticated", err)
			}
			wantRefused(t, s, next.AccessToken)
		})
	}

	t.Run("BadID", func(t *testing.T) {
		for _, bad := range []string{"short", strings.Repeat("x", MaxClientRefreshIDLength+1), "has spaces in it, sixteen+"} {
			var fe *store.FieldError
			if _, _, err := s.Refresh(ctx, p2.RefreshToken, bad); !errors.As(err, &fe) || fe.Field != "clientRefreshId" {
				t.Errorf("Refresh with clientRefreshId %q = %v, want a FieldError on clientRefreshId", bad, err)
			}
		}
	})
}

// TestEndAcrossInstances ends a session on one instance: it is refused
// there at once, and on another instance that cached it as standing once
// its entry is older than CheckInterval (the clock is moved, not waited
// for).
func TestEndAcrossInstances(t *testing.T) {
	st := testStore(t)
	a := testInstance(t, st, time.Hour, time.Hour)
	b := testInstance(t, st, time.Hour, time.Hour)
	now := time.Now()
	b.now = func() time.Time { return now }
	ctx := t.Context()
	p, err := a.Start(ctx, testUser(t, st, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	wantVerified(t, a, p.AccessToken)
	wantVerified(t, b, p.AccessToken)
	if err := a.End(ctx, "alice", p.Session); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, a, p.AccessToken)
	wantVerified(t, b, p.AccessToken) // cached: the documented bound
	now = now.Add(time.Hour)
	wantRefused(t, b, p.AccessToken)
}

func TestEndOthers(t *testing.T) {
	st := testStore(t)
	s := testInstance(t, st, time.Hour, time.Hour)
	ctx := t.Context()
	alice, bob := testUser(t, st, "alice"), testUser(t, st, "bob")
	var mine []Pair
	for range 3 {
		p, err := s.Start(ctx, alice)
		if err != nil {
			t.Fatal(err)
		}
		wantVerified(t, s, p.AccessToken)
		mine = append(mine, p)
	}
	theirs, err := s.Start(ctx, bob)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.EndOthers(ctx, "alice", mine[1].Session); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, s, mine[0].AccessToken)
	wantRefused(t, s, mine[2].AccessToken)
	wantVerified(t, s, mine[1].AccessToken)
	wantVerified(t, s, theirs.AccessToken)
}

// watched authenticates token and watches its session.
func watched(t *testing.T, s *Sessions, token string) context.Context {
	t.Helper()
	ctx := s.Authenticate(t.Context(), token)
	w := s.Watch(ctx)
	if w == nil {
		t.Fatal("Watch of an authenticated caller = nil")
	}
	return w
}

func wantEnded(t *testing.T, ctx context.Context, why string) {
	t.Helper()
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatalf("the watched context did not end")
	}
	if err := context.Cause(ctx); !errors.Is(err, ErrUnauthenticated) || !strings.Contains(err.Error(), why) {
		t.Errorf("cause = %v, want ErrUnauthenticated saying %q", err, why)
	}
}

// TestWatch ends watched contexts when the session ends on this instance,
// on another one (found by the periodic check), and when the access token
// expires; and forgets watchers whose streams ended.
func TestWatch(t *testing.T) {
	st := testStore(t)
	a := testInstance(t, st, time.Hour, 10*time.Millisecond)
	b := testInstance(t, st, time.Hour, 10*time.Millisecond)
	ctx := t.Context()
	alice := testUser(t, st, "alice")

	p, err := a.Start(ctx, alice)
	if err != nil {
		t.Fatal(err)
	}
	here, there := watched(t, a, p.AccessToken), watched(t, b, p.AccessToken)
	if err := a.End(ctx, "alice", p.Session); err != nil {
		t.Fatal(err)
	}
	wantEnded(t, here, "session has ended")
	wantEnded(t, there, "session has ended")

	short := testInstance(t, st, time.Second, time.Hour) // exp has whole seconds
	p, err = short.Start(ctx, alice)
	if err != nil {
		t.Fatal(err)
	}
	wantEnded(t, watched(t, short, p.AccessToken), "expired")

	if a.Watch(t.Context()) != nil {
		t.Error("Watch of an anonymous context is not nil")
	}
	waitUntil(t, "every watcher is forgotten", func() bool { return a.Watching()+b.Watching()+short.Watching() == 0 })
}

// OnEnd calls end once when the session ends, and never once stop was
// called; stop gives the watcher's place back; an anonymous caller is not
// watched.
func TestOnEnd(t *testing.T) {
	st := testStore(t)
	a := testInstance(t, st, time.Hour, time.Hour)
	ctx := t.Context()
	alice := testUser(t, st, "alice")
	p, err := a.Start(ctx, alice)
	if err != nil {
		t.Fatal(err)
	}
	caller := a.Authenticate(ctx, p.AccessToken)
	ended := make(chan error, 4)
	stopped := make(chan error, 4)
	stop := a.OnEnd(caller, func(cause error) { ended <- cause })
	stopBefore := a.OnEnd(caller, func(cause error) { stopped <- cause })
	if stop == nil || stopBefore == nil {
		t.Fatal("OnEnd of an authenticated caller returned no stop")
	}
	if n := a.Watching(); n != 1 {
		t.Fatalf("watching %d sessions, want 1", n)
	}
	stopBefore()
	for range 2 { // the second end finds the session ended again: end is not called twice
		if err := a.End(ctx, "alice", p.Session); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case cause := <-ended:
		if !errors.Is(cause, ErrUnauthenticated) || !strings.Contains(cause.Error(), "session has ended") {
			t.Errorf("cause = %v, want ErrUnauthenticated saying the session has ended", cause)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("end was not called")
	}
	if len(ended) != 0 || len(stopped) != 0 {
		t.Fatalf("end called again (%d) or after stop (%d)", len(ended), len(stopped))
	}
	stop()
	if n := a.Watching(); n != 0 {
		t.Fatalf("watching %d sessions after stop, want 0", n)
	}
	if a.OnEnd(ctx, func(error) { t.Error("an anonymous caller's end was called") }) != nil {
		t.Error("OnEnd of an anonymous caller returned a stop")
	}
}
