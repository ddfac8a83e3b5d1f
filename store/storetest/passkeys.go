package storetest

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

// testPasskeys adds, lists, updates and deletes a user's passkeys.
func testPasskeys(t *testing.T, s store.Store) {
	ctx := newContext(t)
	login := newLogin(t, "pk")
	if got, err := s.UserPasskeys(ctx, login); err != nil || len(got) != 0 {
		t.Fatalf("UserPasskeys of none = %+v, %v", got, err)
	}
	now := time.Now().Truncate(time.Millisecond)
	a := store.Passkey{Login: login, ID: []byte{1, 2, 3}, Name: "Phone", Credential: []byte(`{"a":1}`), CreatedAt: now}
	b := store.Passkey{Login: login, ID: []byte{0, 9}, Name: "Key", Credential: []byte(`{"b":1}`), CreatedAt: now}
	for _, p := range []store.Passkey{a, b} {
		if err := s.AddPasskey(ctx, p); err != nil {
			t.Fatalf("AddPasskey = %v", err)
		}
	}
	wantErr(t, "AddPasskey of an id taken", s.AddPasskey(ctx, a), store.ErrConflict)
	other := a
	other.Login = newLogin(t, "pk")
	if err := s.AddPasskey(ctx, other); err != nil {
		t.Fatalf("AddPasskey of another user's with one id = %v", err)
	}
	a.Credential, a.LastUsedAt = []byte(`{"a":2}`), now.Add(time.Minute)
	if err := s.UpdatePasskey(ctx, a); err != nil {
		t.Fatalf("UpdatePasskey = %v", err)
	}
	got, err := s.UserPasskeys(ctx, login)
	if err != nil || len(got) != 2 {
		t.Fatalf("UserPasskeys = %+v, %v; want two", got, err)
	}
	if !bytes.Equal(got[0].ID, b.ID) || !bytes.Equal(got[1].ID, a.ID) {
		t.Errorf("UserPasskeys = %+v, want them by id", got)
	}
	g := got[1]
	if g.Name != a.Name || !bytes.Equal(g.Credential, a.Credential) || !sameInstant(g.CreatedAt, a.CreatedAt) || !sameInstant(g.LastUsedAt, a.LastUsedAt) {
		t.Errorf("passkey = %+v, want %+v", g, a)
	}
	if err := s.DeletePasskey(ctx, login, a.ID); err != nil {
		t.Fatalf("DeletePasskey = %v", err)
	}
	if err := s.DeletePasskey(ctx, login, a.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("DeletePasskey again = %v, want ErrNotFound", err)
	}
	wantErr(t, "UpdatePasskey of a deleted one", s.UpdatePasskey(ctx, a), store.ErrNotFound)
	if got, _ := s.UserPasskeys(ctx, login); len(got) != 1 {
		t.Errorf("UserPasskeys after a delete = %+v, want one", got)
	}
}

// testPasskeysCap refuses a passkey past store.MaxPasskeys.
func testPasskeysCap(t *testing.T, s store.Store) {
	ctx := newContext(t)
	login := newLogin(t, "pk")
	for i := range store.MaxPasskeys {
		if err := s.AddPasskey(ctx, store.Passkey{Login: login, ID: []byte{byte(i)}, Credential: []byte("{}"), CreatedAt: time.Now()}); err != nil {
			t.Fatalf("AddPasskey %d = %v", i, err)
		}
	}
	wantErr(t, "AddPasskey past the cap", s.AddPasskey(ctx, store.Passkey{Login: login, ID: []byte{200}, Credential: []byte("{}"), CreatedAt: time.Now()}), store.ErrInvalid)
}
