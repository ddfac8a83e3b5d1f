package storetest

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/killrchat/chatql/store"
)

// testBlocks: a user's blocks are theirs alone, listed by login, answered
// one at a time, idempotent both ways.
func testBlocks(t *testing.T, s store.Store) {
	ctx := newContext(t)
	alice := mustCreateUser(t, ctx, s, "alice").UserRef
	bob := mustCreateUser(t, ctx, s, "bob").UserRef
	carol := mustCreateUser(t, ctx, s, "carol").UserRef
	blocks := func(login, other string, want bool) {
		t.Helper()
		if got, err := s.Blocks(ctx, login, other); err != nil || got != want {
			t.Errorf("Blocks(%s, %s) = %v, %v; want %v", login, other, got, err, want)
		}
	}
	blocked := func(login string, want ...store.UserRef) {
		t.Helper()
		got, err := s.BlockedUsers(ctx, login)
		if err != nil || len(got) != len(want) || !slices.Equal(got, want) {
			t.Errorf("BlockedUsers(%s) = %+v, %v; want %+v", login, got, err, want)
		}
	}
	blocked(alice.Login)
	blocks(alice.Login, bob.Login, false)
	for _, u := range []store.UserRef{carol, bob, carol} { // again: no change
		if err := s.Block(ctx, alice.Login, u); err != nil {
			t.Fatalf("Block(%s, %s) = %v", alice.Login, u.Login, err)
		}
	}
	blocks(alice.Login, bob.Login, true)
	blocks(alice.Login, carol.Login, true)
	blocks(bob.Login, alice.Login, false) // a block goes one way
	between := func(a, b string, wantAB, wantBA bool) {
		t.Helper()
		if ab, ba, err := s.BlocksBetween(ctx, a, b); err != nil || ab != wantAB || ba != wantBA {
			t.Errorf("BlocksBetween(%s, %s) = %v, %v, %v; want %v, %v", a, b, ab, ba, err, wantAB, wantBA)
		}
	}
	between(alice.Login, bob.Login, true, false)
	between(bob.Login, alice.Login, false, true)
	if err := s.Block(ctx, bob.Login, alice); err != nil {
		t.Fatal(err)
	}
	between(alice.Login, bob.Login, true, true)
	if err := s.Unblock(ctx, bob.Login, alice.Login); err != nil {
		t.Fatal(err)
	}
	byLogin := []store.UserRef{bob, carol}
	slices.SortFunc(byLogin, func(a, b store.UserRef) int { return strings.Compare(a.Login, b.Login) })
	blocked(alice.Login, byLogin...)
	blocked(bob.Login)
	for range 2 {
		if err := s.Unblock(ctx, alice.Login, bob.Login); err != nil {
			t.Fatalf("Unblock = %v", err)
		}
	}
	blocks(alice.Login, bob.Login, false)
	blocked(alice.Login, carol)
}

// testBlocksCap: a user blocks at most store.MaxBlocks users.
func testBlocksCap(t *testing.T, s store.Store) {
	ctx := newContext(t)
	login := newLogin(t, "blocker")
	for i := range store.MaxBlocks {
		u := store.UserRef{Login: newLogin(t, "u"), Firstname: "U", Lastname: string(rune('a' + i%26))}
		if err := s.Block(ctx, login, u); err != nil {
			t.Fatalf("block %d: %v", i, err)
		}
	}
	err := s.Block(ctx, login, store.UserRef{Login: newLogin(t, "one-more")})
	if !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("block %d = %v, want ErrInvalid", store.MaxBlocks+1, err)
	}
	if got, err := s.BlockedUsers(ctx, login); err != nil || len(got) != store.MaxBlocks {
		t.Fatalf("BlockedUsers = %d users, %v; want %d", len(got), err, store.MaxBlocks)
	}
}

// testMutes: a user's muted conversations, sorted, idempotent both ways.
func testMutes(t *testing.T, s store.Store) {
	ctx := newContext(t)
	alice, bob := newLogin(t, "alice"), newLogin(t, "bob")
	direct := store.DirectConversationID(alice, bob)
	room := newRoomName(t, "room")
	for _, c := range []string{room, direct, room} {
		if err := s.Mute(ctx, alice, c); err != nil {
			t.Fatalf("Mute(%s) = %v", c, err)
		}
	}
	want := []string{room, direct}
	slices.Sort(want)
	if got, err := s.Muted(ctx, alice); err != nil || !slices.Equal(got, want) {
		t.Errorf("Muted = %q, %v; want %q", got, err, want)
	}
	if got, err := s.Muted(ctx, bob); err != nil || len(got) != 0 {
		t.Errorf("Muted(bob) = %q, %v; want none", got, err)
	}
	for range 2 {
		if err := s.Unmute(ctx, alice, room); err != nil {
			t.Fatalf("Unmute = %v", err)
		}
	}
	if got, err := s.Muted(ctx, alice); err != nil || !slices.Equal(got, []string{direct}) {
		t.Errorf("Muted after an unmute = %q, %v; want %q", got, err, direct)
	}
	for _, c := range []struct {
		login, conversation string
		want                bool
	}{{alice, direct, true}, {alice, room, false}, {bob, direct, false}} {
		if got, err := s.Mutes(ctx, c.login, c.conversation); err != nil || got != c.want {
			t.Errorf("Mutes(%s, %s) = %v, %v; want %v", c.login, c.conversation, got, err, c.want)
		}
	}
}
