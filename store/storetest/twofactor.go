package storetest

import (
	"bytes"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

// checkTwoFactor checks that login's stored settings are want.
func checkTwoFactor(t *testing.T, s store.Store, want store.TwoFactor) {
	t.Helper()
	got, err := s.TwoFactor(newContext(t), want.Login)
	if err != nil {
		t.Fatalf("TwoFactor(%q) = %v", want.Login, err)
	}
	same := len(got.RecoveryHashes) == len(want.RecoveryHashes)
	for i := 0; same && i < len(got.RecoveryHashes); i++ {
		same = bytes.Equal(got.RecoveryHashes[i], want.RecoveryHashes[i])
	}
	if !same || !bytes.Equal(got.Secret, want.Secret) || got.Enabled != want.Enabled || got.LastStep != want.LastStep ||
		got.Version != want.Version || !sameInstant(got.UpdatedAt, want.UpdatedAt) {
		t.Errorf("TwoFactor(%q) = %+v, want %+v", want.Login, got, want)
	}
}

// testTwoFactor stores, changes and deletes a user's settings, each write
// a compare-and-set on the version.
func testTwoFactor(t *testing.T, s store.Store) {
	ctx := newContext(t)
	login := newLogin(t, "tfa")
	if _, err := s.TwoFactor(ctx, login); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("TwoFactor of none = %v, want ErrNotFound", err)
	}
	tf := store.TwoFactor{Login: login, Secret: randomHash(), Version: 1, UpdatedAt: time.Now().Truncate(time.Millisecond)}
	wantErr(t, "PutTwoFactor from 1 of none", s.PutTwoFactor(ctx, tf, 1), store.ErrNotFound)
	if err := s.PutTwoFactor(ctx, tf, 0); err != nil {
		t.Fatalf("PutTwoFactor(from 0) = %v", err)
	}
	checkTwoFactor(t, s, tf)
	wantErr(t, "PutTwoFactor from 0 again", s.PutTwoFactor(ctx, tf, 0), store.ErrConflict)

	next := tf
	next.Enabled, next.LastStep, next.Version = true, 123456, 2
	next.RecoveryHashes = [][]byte{randomHash(), randomHash()}
	if err := s.PutTwoFactor(ctx, next, 1); err != nil {
		t.Fatalf("PutTwoFactor(from 1) = %v", err)
	}
	checkTwoFactor(t, s, next)
	stale := next
	stale.LastStep = 1
	wantErr(t, "PutTwoFactor from a stale version", s.PutTwoFactor(ctx, stale, 1), store.ErrConflict)
	wantErr(t, "DeleteTwoFactor from a stale version", s.DeleteTwoFactor(ctx, login, 1), store.ErrConflict)
	checkTwoFactor(t, s, next)

	if err := s.DeleteTwoFactor(ctx, login, 2); err != nil {
		t.Fatalf("DeleteTwoFactor = %v", err)
	}
	if _, err := s.TwoFactor(ctx, login); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("TwoFactor after DeleteTwoFactor = %v, want ErrNotFound", err)
	}
	wantErr(t, "DeleteTwoFactor of none", s.DeleteTwoFactor(ctx, login, 2), store.ErrNotFound)
}

// testTwoFactorConcurrent races writes from one version, as two requests
// presenting one code would: exactly one wins.
func testTwoFactorConcurrent(t *testing.T, s store.Store) {
	ctx := newContext(t)
	tf := store.TwoFactor{Login: newLogin(t, "tfa"), Secret: randomHash(), Enabled: true, Version: 1, UpdatedAt: time.Now().Truncate(time.Millisecond)}
	if err := s.PutTwoFactor(ctx, tf, 0); err != nil {
		t.Fatal(err)
	}
	const n = 8
	nexts := make([]store.TwoFactor, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range nexts {
		nexts[i] = tf
		nexts[i].Version, nexts[i].LastStep = 2, int64(1000+i)
		wg.Go(func() {
			<-start
			errs[i] = s.PutTwoFactor(ctx, nexts[i], 1)
		})
	}
	close(start)
	wg.Wait()
	checkTwoFactor(t, s, nexts[oneWinner(t, "two-factor writes from one version", errs)])
}
