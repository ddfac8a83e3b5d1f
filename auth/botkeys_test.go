package auth

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

// testBot creates a bot of owner on st and returns its key.
func testBot(t *testing.T, st store.Store, login, owner string) string {
	t.Helper()
	key, stored, err := NewBotKey()
	if err != nil {
		t.Fatal(err)
	}
	a := store.Account{User: store.User{UserRef: store.UserRef{Login: login, Firstname: "Bot"}, Bot: true, Owner: owner}, PassHash: []byte("random")}
	if err := st.CreateBot(t.Context(), a, stored, time.Now()); err != nil {
		t.Fatal(err)
	}
	return key
}

// callerOf authenticates token with s.
func callerOf(t *testing.T, s *Sessions, token string) (context.Context, store.UserRef, error) {
	t.Helper()
	ctx := s.Authenticate(t.Context(), token)
	u, err := UserFrom(ctx)
	return ctx, u, err
}

func TestNewBotKey(t *testing.T) {
	a, sa, err := NewBotKey()
	if err != nil {
		t.Fatal(err)
	}
	b, _, _ := NewBotKey()
	if a == b || !IsBotKey(a) || len(a) != len(BotKeyPrefix)+43 || !strings.HasPrefix(a, sa.Prefix) || len(sa.Hash) != 32 {
		t.Fatalf("NewBotKey = %q (%+v), %q; want distinct chatql_bot_ keys of 32 random bytes", a, sa, b)
	}
	if IsBotKey("eyJhbGciOiJIUzI1NiJ9.e30.x") {
		t.Fatal("a JWT is taken for a bot key")
	}
}

// TestBotKeyAuthenticates: a bot's key authenticates as the bot, marked
// one; an unknown key, a user's login and a revoked key do not. A revoked
// key is refused at once though its bot was cached, and the streams it
// opened end; the other instance refuses it once its cache expires.
func TestBotKeyAuthenticates(t *testing.T) {
	st := testStore(t)
	testUser(t, st, "alice")
	key := testBot(t, st, "helper", "alice")
	s := testInstance(t, st, time.Hour, time.Hour)
	other := testInstance(t, st, time.Hour, 50*time.Millisecond)

	ctx, u, err := callerOf(t, s, key)
	if err != nil || u.Login != "helper" || u.Firstname != "Bot" || !IsBot(ctx) {
		t.Fatalf("Authenticate(key) = %+v, %v, bot %v; want helper, a bot", u, err, IsBot(ctx))
	}
	if _, _, err := callerOf(t, other, key); err != nil {
		t.Fatal(err)
	}
	if _, _, err := callerOf(t, s, key+"x"); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("Authenticate(bad key) = %v, want ErrUnauthenticated", err)
	}
	watched := s.Watch(ctx)
	if watched == nil {
		t.Fatal("Watch of a bot's caller = nil, want a context that ends with its key")
	}

	_, fresh, _ := NewBotKey()
	old, err := st.SetBotKey(t.Context(), "alice", "helper", fresh)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := callerOf(t, s, key); err != nil {
		t.Fatalf("Authenticate(rotated key, cached) = %v; want the cached answer until revoked", err)
	}
	s.RevokeKey("helper", old.KeyHash)
	if _, _, err := callerOf(t, s, key); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("Authenticate(revoked key) = %v, want ErrUnauthenticated", err)
	}
	select {
	case <-watched.Done():
		if !errors.Is(context.Cause(watched), ErrUnauthenticated) {
			t.Fatalf("the stream ended with %v, want ErrUnauthenticated", context.Cause(watched))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the stream of a revoked key went on")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, _, err := callerOf(t, other, key)
		if errors.Is(err, ErrUnauthenticated) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the other instance still accepts the rotated key: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestBotKeyOfDeletedBot: once its account is deleted and EndUser called,
// a bot's key is refused though cached.
func TestBotKeyOfDeletedBot(t *testing.T) {
	st := testStore(t)
	testUser(t, st, "alice")
	key := testBot(t, st, "helper", "alice")
	s := testInstance(t, st, time.Hour, time.Hour)
	if _, _, err := callerOf(t, s, key); err != nil {
		t.Fatal(err)
	}
	s.EndUser("helper")
	if _, _, err := callerOf(t, s, key); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("Authenticate(key of a deleted bot) = %v, want ErrUnauthenticated", err)
	}
}
