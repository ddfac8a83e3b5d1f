package storetest

import (
	"errors"
	"slices"
	"strings"
	"sync"
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
	var users []store.UserRef
	for i := range store.MaxBlocks {
		users = append(users, store.UserRef{Login: newLogin(t, "u"), Firstname: "U", Lastname: string(rune('a' + i%26))})
	}
	fillBlocks(t, s, login, users)
	err := s.Block(ctx, login, store.UserRef{Login: newLogin(t, "one-more")})
	if !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("block %d = %v, want ErrInvalid", store.MaxBlocks+1, err)
	}
	if got, err := s.BlockedUsers(ctx, login); err != nil || len(got) != store.MaxBlocks {
		t.Fatalf("BlockedUsers = %d users, %v; want %d", len(got), err, store.MaxBlocks)
	}
}

// testBlocksRacing: racing blocks at the cap, on any store (see
// blocksRacing).
func testBlocksRacing(t *testing.T, s store.Store) { blocksRacing(t, s, false) }

// RunBlocksCapExact runs the racing blocks of the conformance suite on a
// store whose cap is exact: racing blocks never pass store.MaxBlocks, and
// exactly as many succeed as there were places left. (Cassandra counts,
// then writes: racing blocks may pass the cap there by fewer than their
// number, as store.Blocks says.)
func RunBlocksCapExact(t *testing.T, s store.Store) { blocksRacing(t, s, true) }

// blocksRacing: one user's blocks race at the cap. Racing blocks of one
// user are counted once; racing blocks of others take every place left and
// (exact) no more, and the cap refuses the next one; racing unblocks, of
// one user twice too, give back exactly their places.
func blocksRacing(t *testing.T, s store.Store, exact bool) {
	ctx := newContext(t)
	login := newLogin(t, "racer")
	user := func(prefix string) store.UserRef { return store.UserRef{Login: newLogin(t, prefix), Firstname: "U"} }
	// race runs the blocks (or unblocks) at once, and returns how many
	// succeeded; every other must fail with ErrInvalid.
	race := func(what string, n int, do func(i int) error) (succeeded int) {
		t.Helper()
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { errs[i] = do(i) })
		}
		wg.Wait()
		for i, err := range errs {
			switch {
			case err == nil:
				succeeded++
			case !errors.Is(err, store.ErrInvalid):
				t.Fatalf("%s %d = %v", what, i, err)
			}
		}
		return succeeded
	}
	const free = 3
	var filled []store.UserRef
	for range store.MaxBlocks - free {
		filled = append(filled, user("u"))
	}
	fillBlocks(t, s, login, filled)

	// One user blocked ten times at once takes one place.
	twice := user("twice")
	if n := race("same user", 10, func(int) error { return s.Block(ctx, login, twice) }); n != 10 {
		t.Fatalf("%d of 10 racing blocks of one user succeeded, want all (blocking again changes nothing)", n)
	}
	// Twelve others race for the two places left.
	others := make([]store.UserRef, 12)
	for i := range others {
		others[i] = user("other")
	}
	won := race("block", len(others), func(i int) error { return s.Block(ctx, login, others[i]) })
	blocked, err := s.BlockedUsers(ctx, login)
	if err != nil {
		t.Fatal(err)
	}
	total := len(blocked)
	switch {
	case won < free-1 || total != store.MaxBlocks-free+1+won:
		t.Fatalf("%d of %d racing blocks succeeded for %d places, and %d users are blocked; want every place taken, each success listed", won, len(others), free-1, total)
	case exact && (won != free-1 || total != store.MaxBlocks):
		t.Fatalf("%d racing blocks succeeded for %d places: %d users blocked, the cap is %d", won, free-1, total, store.MaxBlocks)
	}
	err = s.Block(ctx, login, user("late"))
	wantErr(t, "a block after the race", err, store.ErrInvalid)

	// Three unblocked, each twice at once, give back three places.
	gone := []store.UserRef{filled[0], filled[1], twice}
	race("unblock", 2*len(gone), func(i int) error { return s.Unblock(ctx, login, gone[i/2].Login) })
	added := 0
	for {
		err := s.Block(ctx, login, user("again"))
		if errors.Is(err, store.ErrInvalid) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if added++; added > len(gone) {
			t.Fatalf("%d blocks succeeded after %d unblocks at the cap", added, len(gone))
		}
	}
	want := max(store.MaxBlocks, total-len(gone))
	if blocked, err := s.BlockedUsers(ctx, login); err != nil || len(blocked) != want || slices.ContainsFunc(blocked, func(u store.UserRef) bool { return slices.Contains(gone, u) }) {
		t.Fatalf("after the unblocks and %d blocks: %d users blocked (%v), want %d, none of those unblocked", added, len(blocked), err, want)
	}
}

// fillBlocks has login block the users, eight at a time (a store that
// counts and then writes keeps the cap up to it all the same: a block
// counts at most seven others in flight), each of which must succeed.
func fillBlocks(t *testing.T, s store.Store, login string, users []store.UserRef) {
	t.Helper()
	ctx := newContext(t)
	const atOnce = 8
	if len(users) > store.MaxBlocks {
		t.Fatalf("fillBlocks: %d users, over the cap", len(users))
	}
	errs := make([]error, len(users))
	for start := 0; start < len(users); start += atOnce {
		var wg sync.WaitGroup
		for i := start; i < min(start+atOnce, len(users)); i++ {
			wg.Go(func() { errs[i] = s.Block(ctx, login, users[i]) })
		}
		wg.Wait()
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("block %d of %d, below the cap: %v", i, len(users), err)
		}
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
