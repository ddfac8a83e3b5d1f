package storetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

// newBotKey returns the stored half of a fresh random key.
func newBotKey() store.BotKey {
	raw := make([]byte, 32)
	rand.Read(raw)
	h := sha256.Sum256(raw)
	return store.BotKey{Hash: h[:], Prefix: fmt.Sprintf("chatql_bot_%x", raw[:3])}
}

// mustCreateBot creates a fresh bot of owner whose login starts with
// prefix, and returns its account and key.
func mustCreateBot(t *testing.T, ctx context.Context, s store.Store, prefix, owner string) (store.Account, store.BotKey) {
	t.Helper()
	a := newAccount(t, prefix)
	a.Email, a.Bio = "", ""
	a.Bot, a.Owner = true, owner
	key := newBotKey()
	if err := s.CreateBot(ctx, a, key, time.Now()); err != nil {
		t.Fatalf("CreateBot(%q) = %v, want nil", a.Login, err)
	}
	return a, key
}

// wantBotByKey checks which bot, if any, key finds.
func wantBotByKey(t *testing.T, ctx context.Context, s store.Store, key store.BotKey, login string) {
	t.Helper()
	got, err := s.BotByKey(ctx, key.Hash)
	if login == "" {
		wantErr(t, fmt.Sprintf("BotByKey(%s)", key.Prefix), err, store.ErrNotFound)
		return
	}
	if err != nil || got != login {
		t.Errorf("BotByKey(%s) = %q, %v; want %q", key.Prefix, got, err, login)
	}
}

// testBots: a bot is an account of kind bot, shown as one by User and
// Names, listed by its owner's bots with its key's prefix, found by its
// key's hash until the key is replaced or the bot removed.
func testBots(t *testing.T, s store.Store) {
	ctx := newContext(t)
	owner := mustCreateUser(t, ctx, s, "owner")
	before := time.Now()
	a, key := mustCreateBot(t, ctx, s, "bbot", owner.Login)
	b, keyB := mustCreateBot(t, ctx, s, "abot", owner.Login)

	if got, err := s.Account(ctx, a.Login); err != nil {
		t.Fatalf("Account(bot) = %v", err)
	} else {
		checkAccount(t, "Account(bot)", got, a)
	}
	names, err := s.Names(ctx, []string{a.Login, owner.Login})
	if err != nil || !names[a.Login].Bot || names[owner.Login].Bot {
		t.Errorf("Names = %+v, %v; want the bot alone marked bot", names, err)
	}
	if u := mustUser(t, ctx, s, owner.Login); u.Bot || u.Owner != "" {
		t.Errorf("User(owner) = bot %v, owner %q; want a user", u.Bot, u.Owner)
	}

	bots, err := s.Bots(ctx, owner.Login)
	if err != nil || len(bots) != 2 || bots[0].Login > bots[1].Login {
		t.Fatalf("Bots = %+v, %v; want the two bots sorted by login", bots, err)
	}
	byLogin := map[string]store.Bot{bots[0].Login: bots[0], bots[1].Login: bots[1]}
	for _, want := range []struct {
		acct store.Account
		key  store.BotKey
	}{{a, key}, {b, keyB}} {
		got := byLogin[want.acct.Login]
		if got.UserRef != want.acct.UserRef || got.Owner != owner.Login || got.KeyPrefix != want.key.Prefix || !bytes.Equal(got.KeyHash, want.key.Hash) ||
			got.CreatedAt.Before(before.Add(-time.Second)) || got.CreatedAt.After(time.Now().Add(time.Second)) {
			t.Errorf("Bots: %+v, want %+v with key %s, created now", got, want.acct.UserRef, want.key.Prefix)
		}
	}
	if others, err := s.Bots(ctx, a.Login); err != nil || len(others) != 0 {
		t.Errorf("Bots(a bot) = %+v, %v; want none", others, err)
	}

	wantBotByKey(t, ctx, s, key, a.Login)
	wantBotByKey(t, ctx, s, keyB, b.Login)
	wantBotByKey(t, ctx, s, newBotKey(), "")

	next := newBotKey()
	got, err := s.SetBotKey(ctx, owner.Login, a.Login, next)
	if err != nil || got.KeyPrefix != key.Prefix || !bytes.Equal(got.KeyHash, key.Hash) || got.Login != a.Login {
		t.Errorf("SetBotKey = %+v, %v; want the bot with its old key", got, err)
	}
	if bots, err := s.Bots(ctx, owner.Login); err != nil || len(bots) != 2 || bots[1].Login != a.Login || bots[1].KeyPrefix != next.Prefix {
		t.Errorf("Bots after SetBotKey = %+v, %v; want %s with the new key", bots, err, a.Login)
	}
	wantBotByKey(t, ctx, s, key, "")
	wantBotByKey(t, ctx, s, next, a.Login)
	_, err = s.SetBotKey(ctx, b.Login, a.Login, newBotKey())
	wantErr(t, "SetBotKey(not the owner)", err, store.ErrNotFound)
	wantBotByKey(t, ctx, s, next, a.Login)

	_, err = s.RemoveBot(ctx, b.Login, a.Login)
	wantErr(t, "RemoveBot(not the owner)", err, store.ErrNotFound)
	if removed, err := s.RemoveBot(ctx, owner.Login, a.Login); err != nil || removed.Login != a.Login || !bytes.Equal(removed.KeyHash, next.Hash) {
		t.Errorf("RemoveBot = %+v, %v; want the bot with its key", removed, err)
	}
	wantBotByKey(t, ctx, s, next, "")
	wantBotByKey(t, ctx, s, keyB, b.Login)
	_, err = s.RemoveBot(ctx, owner.Login, a.Login)
	wantErr(t, "RemoveBot(again)", err, store.ErrNotFound)
	if bots, err := s.Bots(ctx, owner.Login); err != nil || len(bots) != 1 || bots[0].Login != b.Login {
		t.Errorf("Bots after RemoveBot = %+v, %v; want %s alone", bots, err, b.Login)
	}
}

// testCreateBotConflict: a bot's login is taken like a user's, both ways.
func testCreateBotConflict(t *testing.T, s store.Store) {
	ctx := newContext(t)
	owner := mustCreateUser(t, ctx, s, "owner")
	taken := accountFor(owner.Login, 1)
	taken.Bot, taken.Owner = true, owner.Login
	err := s.CreateBot(ctx, taken, newBotKey(), time.Now())
	wantErr(t, "CreateBot(a user's login)", err, store.ErrConflict)
	if got, err := s.Account(ctx, owner.Login); err != nil {
		t.Fatalf("Account(owner) = %v", err)
	} else {
		checkAccount(t, "Account(owner)", got, owner)
	}
	if bots, err := s.Bots(ctx, owner.Login); err != nil || len(bots) != 0 {
		t.Errorf("Bots after a refused CreateBot = %+v, %v; want none", bots, err)
	}
	bot, _ := mustCreateBot(t, ctx, s, "bot", owner.Login)
	err = s.CreateUser(ctx, accountFor(bot.Login, 2))
	wantErr(t, "CreateUser(a bot's login)", err, store.ErrConflict)
}

// testDeleteBot: a removed bot's account is deleted as any account is,
// its login kept.
func testDeleteBot(t *testing.T, s store.Store) {
	ctx := newContext(t)
	owner := mustCreateUser(t, ctx, s, "owner")
	bot, key := mustCreateBot(t, ctx, s, "bot", owner.Login)
	if _, err := s.RemoveBot(ctx, owner.Login, bot.Login); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteAccount(ctx, bot.Login, bot.PassHash); err != nil {
		t.Fatalf("DeleteAccount(bot) = %v", err)
	}
	_, err := s.User(ctx, bot.Login)
	wantErr(t, "User(deleted bot)", err, store.ErrNotFound)
	wantBotByKey(t, ctx, s, key, "")
	err = s.CreateBot(ctx, bot, newBotKey(), time.Now())
	if !errors.Is(err, store.ErrConflict) {
		t.Errorf("CreateBot(a deleted bot's login) = %v, want ErrConflict", err)
	}
}
