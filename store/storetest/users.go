package storetest

import (
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/killrchat/chatql/store"
)

func testCreateUserOK(t *testing.T, s store.Store) {
	ctx := newContext(t)
	want := newAccount(t, "alice")
	if err := s.CreateUser(ctx, want); err != nil {
		t.Fatalf("CreateUser(%q) = %v, want nil", want.Login, err)
	}

	got, err := s.Account(ctx, want.Login)
	if err != nil {
		t.Fatalf("Account(%q) = %v, want nil", want.Login, err)
	}
	checkAccount(t, "Account", got, want)
	if len(got.ChatRooms) != 0 {
		t.Errorf("Account(%q).ChatRooms = %q, want none", want.Login, got.ChatRooms)
	}

	u := mustUser(t, ctx, s, want.Login)
	checkUser(t, "User", u, want.User)
	if len(u.ChatRooms) != 0 {
		t.Errorf("User(%q).ChatRooms = %q, want none", want.Login, u.ChatRooms)
	}
}

func testCreateUserConflict(t *testing.T, s store.Store) {
	ctx := newContext(t)
	first := mustCreateUser(t, ctx, s, "bob")

	second := accountFor(first.Login, 1)
	err := s.CreateUser(ctx, second)
	wantErr(t, "second CreateUser of the same login", err, store.ErrConflict)

	got, err := s.Account(ctx, first.Login)
	if err != nil {
		t.Fatalf("Account(%q) = %v, want nil", first.Login, err)
	}
	checkAccount(t, "Account after the conflict", got, first)
}

// testCreateUserConcurrent races signups of one login: exactly one wins, and
// the stored account is the winner's, whole.
func testCreateUserConcurrent(t *testing.T, s store.Store) {
	ctx := newContext(t)
	login := newLogin(t, "race")
	const n = 16
	accounts := make([]store.Account, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range accounts {
		accounts[i] = accountFor(login, i)
		wg.Go(func() {
			<-start
			errs[i] = s.CreateUser(ctx, accounts[i])
		})
	}
	close(start)
	wg.Wait()

	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Errorf("signups %d and %d of %q both succeeded, want exactly one", winner, i, login)
		case err == nil:
			winner = i
		case !errors.Is(err, store.ErrConflict):
			t.Errorf("signup %d of %q = %v, want nil or ErrConflict", i, login, err)
		}
	}
	if winner < 0 {
		t.Fatalf("none of %d concurrent signups of %q succeeded: %v", n, login, errs)
	}
	got, err := s.Account(ctx, login)
	if err != nil {
		t.Fatalf("Account(%q) = %v, want nil", login, err)
	}
	checkAccount(t, "Account after the race", got, accounts[winner])
}

func testUserNotFound(t *testing.T, s store.Store) {
	ctx := newContext(t)
	login := newLogin(t, "ghost")
	u, err := s.User(ctx, login)
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("User(%q) = %+v, %v; want ErrNotFound", login, u, err)
	}
}

func testAccountNotFound(t *testing.T, s store.Store) {
	ctx := newContext(t)
	login := newLogin(t, "ghost")
	a, err := s.Account(ctx, login)
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Account(%q) = %+v, %v; want ErrNotFound", login, a, err)
	}
}

// testUserChatRoomsSorted gives a user rooms whose names are prefixes of one
// another, created and joined out of order: ChatRooms lists each, sorted.
func testUserChatRoomsSorted(t *testing.T, s store.Store) {
	ctx := newContext(t)
	u := mustCreateUser(t, ctx, s, "sorted")
	other := mustCreateUser(t, ctx, s, "other")
	base := newRoomName(t, "srt")
	// '-' < '0' < '_' < 'a' in byte order.
	names := []string{base + "_b", base, base + "-a", base + "0", base + "-"}
	for i, name := range names {
		if i%2 == 0 {
			if err := s.CreateRoom(ctx, newRoom(name, u.UserRef)); err != nil {
				t.Fatalf("CreateRoom(%q) = %v, want nil", name, err)
			}
			continue
		}
		if err := s.CreateRoom(ctx, newRoom(name, other.UserRef)); err != nil {
			t.Fatalf("CreateRoom(%q) = %v, want nil", name, err)
		}
		mustJoinRoom(t, ctx, s, name, u.UserRef)
	}
	got := mustUser(t, ctx, s, u.Login)
	want := slices.Sorted(slices.Values(names))
	if !slices.Equal(got.ChatRooms, want) {
		t.Errorf("User(%q).ChatRooms = %q, want %q", u.Login, got.ChatRooms, want)
	}
}
