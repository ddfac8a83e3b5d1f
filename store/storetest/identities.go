package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

// testIdentities links identities to accounts: each signs in one account,
// and each account lists its own.
func testIdentities(t *testing.T, s store.Store) {
	ctx := newContext(t)
	login, other := newLogin(t, "oidc"), newLogin(t, "oidc")
	issuer := "https://idp.example/" + randomSuffix()
	now := time.Now().Truncate(time.Millisecond)
	if _, err := s.Identity(ctx, issuer, "sub-1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Identity of none = %v, want ErrNotFound", err)
	}
	a := store.Identity{Issuer: issuer, Subject: "sub-1", Login: login, Email: "a@example.com", LinkedAt: now}
	b := store.Identity{Issuer: issuer, Subject: "sub-2", Login: login, LinkedAt: now}
	for _, id := range []store.Identity{a, b} {
		if err := s.LinkIdentity(ctx, id); err != nil {
			t.Fatalf("LinkIdentity = %v", err)
		}
	}
	taken := a
	taken.Login = other
	wantErr(t, "LinkIdentity of one linked to another account", s.LinkIdentity(ctx, taken), store.ErrConflict)
	got, err := s.Identity(ctx, issuer, "sub-1")
	if err != nil || got.Login != login || got.Email != a.Email || !sameInstant(got.LinkedAt, now) {
		t.Errorf("Identity = %+v, %v; want %+v", got, err, a)
	}
	list, err := s.UserIdentities(ctx, login)
	if err != nil || len(list) != 2 || list[0].Subject != "sub-1" || list[1].Subject != "sub-2" || list[0].Issuer != issuer {
		t.Errorf("UserIdentities = %+v, %v; want sub-1 and sub-2", list, err)
	}
	if list, err := s.UserIdentities(ctx, other); err != nil || len(list) != 0 {
		t.Errorf("UserIdentities of the other account = %+v, %v; want none", list, err)
	}

	wantErr(t, "UnlinkIdentity by another account", s.UnlinkIdentity(ctx, other, issuer, "sub-1"), store.ErrNotFound)
	wantErr(t, "UnlinkIdentity of none", s.UnlinkIdentity(ctx, login, issuer, "sub-9"), store.ErrNotFound)
	if err := s.UnlinkIdentity(ctx, login, issuer, "sub-1"); err != nil {
		t.Fatalf("UnlinkIdentity = %v", err)
	}
	if _, err := s.Identity(ctx, issuer, "sub-1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Identity after UnlinkIdentity = %v, want ErrNotFound", err)
	}
	if list, err := s.UserIdentities(ctx, login); err != nil || len(list) != 1 || list[0].Subject != "sub-2" {
		t.Errorf("UserIdentities after UnlinkIdentity = %+v, %v; want sub-2 alone", list, err)
	}
	wantErr(t, "UnlinkIdentity again", s.UnlinkIdentity(ctx, login, issuer, "sub-1"), store.ErrNotFound)
	// Unlinked, it may be linked again, to any account.
	if err := s.LinkIdentity(ctx, taken); err != nil {
		t.Fatalf("LinkIdentity after UnlinkIdentity = %v", err)
	}
	if got, err := s.Identity(ctx, issuer, "sub-1"); err != nil || got.Login != other {
		t.Errorf("Identity relinked = %+v, %v; want it linked to %s", got, err, other)
	}
}
