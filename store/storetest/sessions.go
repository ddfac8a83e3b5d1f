package storetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

// sessionTest is a case of RunSessionTests.
type sessionTest = subtest[store.Store]

func sessionGroups() []group[store.Store] {
	return []group[store.Store]{
		{"Session", []sessionTest{
			{"Create", testSessionCreate},
			{"ErrNotFound", testSessionNotFound},
			{"Expired", testSessionExpired},
			{"ErrConflict", testSessionConflict},
			{"UserSessions", testUserSessions},
		}},
		{"RotateSession", []sessionTest{
			{"OK", testRotateSession},
			{"StaleGeneration", testRotateStale},
			{"Deleted", testRotateDeleted},
			{"Concurrent", testRotateConcurrent},
		}},
		{"DeleteSessions", []sessionTest{
			{"One", testDeleteSession},
			{"AllButKept", testDeleteSessionsKeep},
			{"All", testDeleteSessionsAll},
		}},
		{"ChangePassword", []sessionTest{
			{"OK", testChangePassword},
			{"Stale", testChangePasswordStale},
			{"ErrNotFound", testChangePasswordNotFound},
			{"Concurrent", testChangePasswordConcurrent},
		}},
	}
}

// RunSessionTests runs the conformance suite of store.Sessions against s,
// in the manner of RunTests.
//
// Decisions the contract leaves open, fixed here:
//   - Times are compared to the millisecond, Cassandra's precision.
//   - A session stored already expired reads as ErrNotFound.
//   - RotateSession keeps next's CreatedAt (the caller passes the session
//     as read).
func RunSessionTests(t *testing.T, s store.Store) {
	t.Helper()
	runGroups(t, s, sessionGroups())
}

// newSession returns a fresh session of login expiring in an hour.
func newSession(login string) store.Session {
	now := time.Now().Truncate(time.Millisecond)
	return store.Session{
		Login:       login,
		ID:          randomSuffix() + randomSuffix(),
		RefreshHash: randomHash(),
		CreatedAt:   now,
		ExpiresAt:   now.Add(time.Hour),
		Device:      "Firefox on Linux",
		Address:     "192.0.2.7",
		Method:      store.SignInPassword,
		LastSeenAt:  now,
	}
}

func randomHash() []byte {
	h := make([]byte, 32)
	rand.Read(h)
	return h
}

// mustCreateSession stores a fresh session of login.
func mustCreateSession(t *testing.T, ctx context.Context, s store.Store, login string) store.Session {
	t.Helper()
	sess := newSession(login)
	if err := s.CreateSession(ctx, sess); err != nil {
		t.Fatalf("CreateSession(%q) = %v, want nil", login, err)
	}
	return sess
}

// checkSession checks that the stored session is want.
func checkSession(t *testing.T, ctx context.Context, s store.Store, want store.Session) {
	t.Helper()
	got, err := s.Session(ctx, want.Login, want.ID)
	if err != nil {
		t.Fatalf("Session(%q, %q) = %v, want nil", want.Login, want.ID, err)
	}
	if got.Login != want.Login || got.ID != want.ID || !bytes.Equal(got.RefreshHash, want.RefreshHash) ||
		got.Generation != want.Generation || !sameInstant(got.CreatedAt, want.CreatedAt) || !sameInstant(got.ExpiresAt, want.ExpiresAt) ||
		got.Device != want.Device || got.Address != want.Address || got.Method != want.Method ||
		!sameInstant(got.LastSeenAt, want.LastSeenAt) || got.TwoFactor != want.TwoFactor {
		t.Errorf("Session(%q, %q) = %+v, want %+v", want.Login, want.ID, got, want)
	}
}

// wantNoSession checks that the session reads as ErrNotFound.
func wantNoSession(t *testing.T, ctx context.Context, s store.Store, login, id string) {
	t.Helper()
	got, err := s.Session(ctx, login, id)
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Session(%q, %q) = %+v, %v; want ErrNotFound", login, id, got, err)
	}
}

// rotated returns sess rotated once more.
func rotated(sess store.Session) store.Session {
	sess.RefreshHash = randomHash()
	sess.Generation++
	sess.ExpiresAt = sess.ExpiresAt.Add(time.Minute)
	sess.LastSeenAt = sess.LastSeenAt.Add(time.Second)
	sess.Address = "198.51.100.9"
	sess.TwoFactor = !sess.TwoFactor
	return sess
}

func testSessionCreate(t *testing.T, s store.Store) {
	ctx := newContext(t)
	login := newLogin(t, "sess")
	a, b := mustCreateSession(t, ctx, s, login), mustCreateSession(t, ctx, s, login)
	checkSession(t, ctx, s, a)
	checkSession(t, ctx, s, b)
}

// testUserSessions lists a user's live sessions, the most recently seen
// first, with what each shows of itself, and no one else's, nor the expired
// or the deleted.
func testUserSessions(t *testing.T, s store.Store) {
	ctx := newContext(t)
	login := newLogin(t, "devices")
	if got, err := s.UserSessions(ctx, login); err != nil || len(got) != 0 {
		t.Fatalf("UserSessions of a login with none = %+v, %v; want none", got, err)
	}
	old := newSession(login)
	old.LastSeenAt = old.LastSeenAt.Add(-time.Hour)
	old.Method, old.Device, old.TwoFactor = store.SignInPasskey, "Chrome on Android", true
	recent := newSession(login)
	gone := newSession(login)
	expired := newSession(login)
	expired.ExpiresAt = time.Now().Add(-time.Second).Truncate(time.Millisecond)
	for _, sess := range []store.Session{old, recent, gone, expired} {
		if err := s.CreateSession(ctx, sess); err != nil {
			t.Fatalf("CreateSession = %v", err)
		}
	}
	mustCreateSession(t, ctx, s, newLogin(t, "other"))
	if err := s.DeleteSession(ctx, login, gone.ID); err != nil {
		t.Fatal(err)
	}
	// A refresh moves a session to the front.
	next := rotated(old)
	next.LastSeenAt = recent.LastSeenAt.Add(time.Minute)
	if err := s.RotateSession(ctx, next, old.Generation); err != nil {
		t.Fatal(err)
	}
	got, err := s.UserSessions(ctx, login)
	if err != nil {
		t.Fatalf("UserSessions = %v", err)
	}
	if len(got) != 2 || got[0].ID != next.ID || got[1].ID != recent.ID {
		t.Fatalf("UserSessions = %+v, want the refreshed session then the recent one", got)
	}
	for i, want := range []store.Session{next, recent} {
		if g := got[i]; g.Device != want.Device || g.Address != want.Address || g.Method != want.Method ||
			g.TwoFactor != want.TwoFactor || !sameInstant(g.LastSeenAt, want.LastSeenAt) || !sameInstant(g.CreatedAt, want.CreatedAt) {
			t.Errorf("UserSessions[%d] = %+v, want %+v", i, g, want)
		}
	}
}

func testSessionNotFound(t *testing.T, s store.Store) {
	ctx := newContext(t)
	login := newLogin(t, "sess")
	wantNoSession(t, ctx, s, login, "nope")
	sess := mustCreateSession(t, ctx, s, login)
	wantNoSession(t, ctx, s, newLogin(t, "other"), sess.ID)
}

func testSessionExpired(t *testing.T, s store.Store) {
	ctx := newContext(t)
	sess := newSession(newLogin(t, "sess"))
	sess.ExpiresAt = time.Now().Add(-time.Second).Truncate(time.Millisecond)
	if err := s.CreateSession(ctx, sess); err != nil {
		t.Fatalf("CreateSession(expired) = %v, want nil", err)
	}
	wantNoSession(t, ctx, s, sess.Login, sess.ID)
}

func testSessionConflict(t *testing.T, s store.Store) {
	ctx := newContext(t)
	sess := mustCreateSession(t, ctx, s, newLogin(t, "sess"))
	again := newSession(sess.Login)
	again.ID = sess.ID
	wantErr(t, "second CreateSession of one id", s.CreateSession(ctx, again), store.ErrConflict)
	checkSession(t, ctx, s, sess)
}

func testRotateSession(t *testing.T, s store.Store) {
	ctx := newContext(t)
	sess := mustCreateSession(t, ctx, s, newLogin(t, "rot"))
	for range 3 {
		next := rotated(sess)
		if err := s.RotateSession(ctx, next, sess.Generation); err != nil {
			t.Fatalf("RotateSession(from %d) = %v, want nil", sess.Generation, err)
		}
		sess = next
		checkSession(t, ctx, s, sess)
	}
}

func testRotateStale(t *testing.T, s store.Store) {
	ctx := newContext(t)
	sess := mustCreateSession(t, ctx, s, newLogin(t, "rot"))
	next := rotated(sess)
	if err := s.RotateSession(ctx, next, 0); err != nil {
		t.Fatalf("RotateSession(from 0) = %v, want nil", err)
	}
	wantErr(t, "RotateSession(from 0) again", s.RotateSession(ctx, rotated(sess), 0), store.ErrConflict)
	checkSession(t, ctx, s, next)
}

func testRotateDeleted(t *testing.T, s store.Store) {
	ctx := newContext(t)
	sess := mustCreateSession(t, ctx, s, newLogin(t, "rot"))
	if err := s.DeleteSession(ctx, sess.Login, sess.ID); err != nil {
		t.Fatalf("DeleteSession = %v", err)
	}
	wantErr(t, "RotateSession of a deleted session", s.RotateSession(ctx, rotated(sess), 0), store.ErrNotFound)
	wantNoSession(t, ctx, s, sess.Login, sess.ID)
}

// testRotateConcurrent races rotations from one generation, as two uses of
// one refresh token would: exactly one wins, and its token is the one kept.
func testRotateConcurrent(t *testing.T, s store.Store) {
	ctx := newContext(t)
	sess := mustCreateSession(t, ctx, s, newLogin(t, "rot"))
	const n = 8
	nexts := make([]store.Session, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range nexts {
		nexts[i] = rotated(sess)
		wg.Go(func() {
			<-start
			errs[i] = s.RotateSession(ctx, nexts[i], sess.Generation)
		})
	}
	close(start)
	wg.Wait()
	winner := oneWinner(t, "rotations from one generation", errs)
	checkSession(t, ctx, s, nexts[winner])
}

func testDeleteSession(t *testing.T, s store.Store) {
	ctx := newContext(t)
	login := newLogin(t, "del")
	a, b := mustCreateSession(t, ctx, s, login), mustCreateSession(t, ctx, s, login)
	for range 2 { // deleting twice is harmless
		if err := s.DeleteSession(ctx, login, a.ID); err != nil {
			t.Fatalf("DeleteSession = %v, want nil", err)
		}
	}
	wantNoSession(t, ctx, s, login, a.ID)
	checkSession(t, ctx, s, b)
}

func testDeleteSessionsKeep(t *testing.T, s store.Store) {
	ctx := newContext(t)
	login, other := newLogin(t, "del"), newLogin(t, "del")
	var mine []store.Session
	for range 3 {
		mine = append(mine, mustCreateSession(t, ctx, s, login))
	}
	theirs := mustCreateSession(t, ctx, s, other)
	if err := s.DeleteSessions(ctx, login, mine[1].ID); err != nil {
		t.Fatalf("DeleteSessions = %v, want nil", err)
	}
	wantNoSession(t, ctx, s, login, mine[0].ID)
	wantNoSession(t, ctx, s, login, mine[2].ID)
	checkSession(t, ctx, s, mine[1])
	checkSession(t, ctx, s, theirs)
}

func testDeleteSessionsAll(t *testing.T, s store.Store) {
	ctx := newContext(t)
	login := newLogin(t, "del")
	a, b := mustCreateSession(t, ctx, s, login), mustCreateSession(t, ctx, s, login)
	if err := s.DeleteSessions(ctx, login, ""); err != nil {
		t.Fatalf("DeleteSessions = %v, want nil", err)
	}
	wantNoSession(t, ctx, s, login, a.ID)
	wantNoSession(t, ctx, s, login, b.ID)
}

func testChangePassword(t *testing.T, s store.Store) {
	ctx := newContext(t)
	a := mustCreateUser(t, ctx, s, "pw")
	newHash := randomHash()
	if err := s.ChangePassword(ctx, a.Login, a.PassHash, newHash); err != nil {
		t.Fatalf("ChangePassword = %v, want nil", err)
	}
	a.PassHash = newHash
	got, err := s.Account(ctx, a.Login)
	if err != nil {
		t.Fatal(err)
	}
	checkAccount(t, "Account after ChangePassword", got, a)
}

func testChangePasswordStale(t *testing.T, s store.Store) {
	ctx := newContext(t)
	a := mustCreateUser(t, ctx, s, "pw")
	wantErr(t, "ChangePassword from a wrong hash", s.ChangePassword(ctx, a.Login, randomHash(), randomHash()), store.ErrConflict)
	got, err := s.Account(ctx, a.Login)
	if err != nil {
		t.Fatal(err)
	}
	checkAccount(t, "Account after a refused ChangePassword", got, a)
}

func testChangePasswordNotFound(t *testing.T, s store.Store) {
	ctx := newContext(t)
	wantErr(t, "ChangePassword of no user", s.ChangePassword(ctx, newLogin(t, "ghost"), randomHash(), randomHash()), store.ErrNotFound)
}

// testChangePasswordConcurrent races changes from one password: one wins.
func testChangePasswordConcurrent(t *testing.T, s store.Store) {
	ctx := newContext(t)
	a := mustCreateUser(t, ctx, s, "pw")
	const n = 8
	hashes := make([][]byte, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range hashes {
		hashes[i] = randomHash()
		wg.Go(func() {
			<-start
			errs[i] = s.ChangePassword(ctx, a.Login, a.PassHash, hashes[i])
		})
	}
	close(start)
	wg.Wait()
	winner := oneWinner(t, "password changes from one hash", errs)
	got, err := s.Account(ctx, a.Login)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.PassHash, hashes[winner]) {
		t.Errorf("stored hash is not the winner's")
	}
}

// oneWinner checks the outcome of concurrent compare-and-sets from one
// state: exactly one succeeded and the others failed with ErrConflict. It
// returns the winner's index.
func oneWinner(t *testing.T, what string, errs []error) int {
	t.Helper()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Errorf("%s: %d and %d both succeeded, want exactly one", what, winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, store.ErrConflict):
			t.Errorf("%s: %d = %v, want nil or ErrConflict", what, i, err)
		}
	}
	if winner < 0 {
		t.Fatalf("%s: none of %d succeeded: %v", what, len(errs), errs)
	}
	return winner
}
