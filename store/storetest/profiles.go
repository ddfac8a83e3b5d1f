package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/killrchat/chatql/store"
)

func ptr(s string) *string { return &s }

// testUpdateProfile changes some fields and keeps the others; every read
// (User, Account, Names) shows the change.
func testUpdateProfile(t *testing.T, s store.Store) {
	ctx := newContext(t)
	a := mustCreateUser(t, ctx, s, "prof")

	got, err := s.UpdateProfile(ctx, a.Login, store.ProfileUpdate{Firstname: ptr("Alicia"), Bio: ptr("")})
	if err != nil {
		t.Fatalf("UpdateProfile = %v, want nil", err)
	}
	want := a.User
	want.Firstname, want.Bio = "Alicia", ""
	checkUser(t, "UpdateProfile's result", got, want)
	checkUser(t, "User after UpdateProfile", mustUser(t, ctx, s, a.Login), want)
	acct, err := s.Account(ctx, a.Login)
	if err != nil {
		t.Fatalf("Account = %v", err)
	}
	want2 := a
	want2.User = want
	checkAccount(t, "Account after UpdateProfile (password kept)", acct, want2)

	got, err = s.UpdateProfile(ctx, a.Login, store.ProfileUpdate{Lastname: ptr("Liddell-Hargreaves")})
	if err != nil {
		t.Fatalf("second UpdateProfile = %v, want nil", err)
	}
	want.Lastname = "Liddell-Hargreaves"
	checkUser(t, "second UpdateProfile's result", got, want)
	names, err := s.Names(ctx, []string{a.Login})
	if err != nil {
		t.Fatalf("Names = %v", err)
	}
	checkUserRef(t, "Names after the updates", names[a.Login].UserRef, want.UserRef)

	// Nothing given changes nothing.
	got, err = s.UpdateProfile(ctx, a.Login, store.ProfileUpdate{})
	if err != nil {
		t.Fatalf("empty UpdateProfile = %v, want nil", err)
	}
	checkUser(t, "empty UpdateProfile's result", got, want)

	_, err = s.UpdateProfile(ctx, newLogin(t, "ghost"), store.ProfileUpdate{Firstname: ptr("Boo")})
	wantErr(t, "UpdateProfile of an unknown login", err, store.ErrNotFound)
	if _, err := s.User(ctx, newLogin(t, "ghost")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("User of an unknown login = %v", err)
	}
}

// testUpdateProfileConcurrent races updates of different fields: every one
// stands (no update writes back another's field as it read it).
func testUpdateProfileConcurrent(t *testing.T, s store.Store) {
	ctx := newContext(t)
	a := mustCreateUser(t, ctx, s, "profrace")
	var wg sync.WaitGroup
	errs := make([]error, 3)
	updates := []store.ProfileUpdate{{Firstname: ptr("First")}, {Lastname: ptr("Last")}, {Bio: ptr("Bio")}}
	for i, p := range updates {
		wg.Go(func() { _, errs[i] = s.UpdateProfile(ctx, a.Login, p) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("UpdateProfile %d = %v", i, err)
		}
	}
	u := mustUser(t, ctx, s, a.Login)
	if u.Firstname != "First" || u.Lastname != "Last" || u.Bio != "Bio" {
		t.Errorf("after concurrent updates: %+v, want every field updated", u)
	}
}

// testNames reads many users at once: those who exist, by login; unknown and
// deleted logins are absent. More than one query's worth of logins.
func testNames(t *testing.T, s store.Store) {
	ctx := newContext(t)
	var logins []string
	want := map[string]store.UserRef{}
	for i := range 3 {
		a := mustCreateUser(t, ctx, s, fmt.Sprintf("names%d", i))
		logins = append(logins, a.Login)
		want[a.Login] = a.UserRef
	}
	gone := mustCreateUser(t, ctx, s, "namesgone")
	if _, err := s.DeleteAccount(ctx, gone.Login, gone.PassHash); err != nil {
		t.Fatalf("DeleteAccount = %v", err)
	}
	logins = append(logins, gone.Login)
	for range 120 {
		logins = append(logins, newLogin(t, "nobody"))
	}
	logins = append(logins, logins[0]) // a repeat
	got, err := s.Names(ctx, logins)
	if err != nil {
		t.Fatalf("Names = %v", err)
	}
	if len(got) != len(want) {
		t.Errorf("Names returned %d users, want %d: %v", len(got), len(want), got)
	}
	for login, w := range want {
		checkUserRef(t, "Names["+login+"]", got[login].UserRef, w)
	}
	if got, err := s.Names(ctx, nil); err != nil || len(got) != 0 {
		t.Errorf("Names(nil) = %v, %v; want empty", got, err)
	}
}

// testDeleteAccount deletes an account: its reads fail, its login stays
// taken, its sessions, blocks and mutes are gone, and it returns the rooms
// the user was in (which stay, the user still listed: leaving them is the
// caller's part).
func testDeleteAccount(t *testing.T, s store.Store) {
	ctx := newContext(t)
	a := mustCreateUser(t, ctx, s, "leaver")
	other := mustCreateUser(t, ctx, s, "stayer")
	own := mustCreateRoom(t, ctx, s, "own", a.UserRef)
	joined := mustCreateRoom(t, ctx, s, "joined", other.UserRef)
	mustJoinRoom(t, ctx, s, joined.Name, a.UserRef)
	sess := mustCreateSession(t, ctx, s, a.Login)
	if err := s.Block(ctx, a.Login, other.UserRef); err != nil {
		t.Fatalf("Block = %v", err)
	}
	if err := s.Mute(ctx, a.Login, joined.Name); err != nil {
		t.Fatalf("Mute = %v", err)
	}

	_, err := s.DeleteAccount(ctx, a.Login, []byte("not the hash"))
	wantErr(t, "DeleteAccount with a stale hash", err, store.ErrConflict)
	mustUser(t, ctx, s, a.Login)

	rooms, err := s.DeleteAccount(ctx, a.Login, a.PassHash)
	if err != nil {
		t.Fatalf("DeleteAccount = %v, want nil", err)
	}
	if want := slices.Sorted(slices.Values([]string{own.Name, joined.Name})); !slices.Equal(slices.Sorted(slices.Values(rooms)), want) {
		t.Errorf("DeleteAccount's rooms = %q, want %q", rooms, want)
	}

	_, err = s.User(ctx, a.Login)
	wantErr(t, "User of a deleted account", err, store.ErrNotFound)
	_, err = s.Account(ctx, a.Login)
	wantErr(t, "Account of a deleted account", err, store.ErrNotFound)
	names, err := s.Names(ctx, []string{a.Login, other.Login})
	if err != nil {
		t.Fatalf("Names = %v", err)
	}
	if _, ok := names[a.Login]; ok || len(names) != 1 {
		t.Errorf("Names after the delete = %v, want %q only", names, other.Login)
	}
	_, err = s.UpdateProfile(ctx, a.Login, store.ProfileUpdate{Firstname: ptr("Back")})
	wantErr(t, "UpdateProfile of a deleted account", err, store.ErrNotFound)
	err = s.ChangePassword(ctx, a.Login, a.PassHash, []byte("new hash"))
	wantErr(t, "ChangePassword of a deleted account", err, store.ErrNotFound)
	_, err = s.DeleteAccount(ctx, a.Login, a.PassHash)
	wantErr(t, "DeleteAccount again", err, store.ErrNotFound)
	_, err = s.DeleteAccount(ctx, newLogin(t, "ghost"), a.PassHash)
	wantErr(t, "DeleteAccount of an unknown login", err, store.ErrNotFound)

	// The login stays taken: a signup would impersonate the deleted author.
	err = s.CreateUser(ctx, accountFor(a.Login, 7))
	wantErr(t, "CreateUser of a deleted login", err, store.ErrConflict)
	_, err = s.Account(ctx, a.Login)
	wantErr(t, "Account after the refused signup", err, store.ErrNotFound)

	wantNoSession(t, ctx, s, sess.Login, sess.ID)
	if blocked, err := s.BlockedUsers(ctx, a.Login); err != nil || len(blocked) != 0 {
		t.Errorf("BlockedUsers of a deleted account = %v, %v; want none", blocked, err)
	}
	if muted, err := s.Muted(ctx, a.Login); err != nil || len(muted) != 0 {
		t.Errorf("Muted of a deleted account = %v, %v; want none", muted, err)
	}

	// Leaving the rooms it returned works on the tombstone.
	for _, room := range rooms {
		if _, err := s.LeaveRoom(ctx, room, store.UserRef{Login: a.Login}); err != nil {
			t.Fatalf("LeaveRoom(%q) of the deleted user = %v", room, err)
		}
		if r := mustRoom(t, ctx, s, room); r.HasParticipant(a.Login) {
			t.Errorf("room %q still lists the deleted user: %+v", room, r.Participants)
		}
	}
	// The leaves did not bring the account back.
	_, err = s.User(ctx, a.Login)
	wantErr(t, "User of a deleted account after its leaves", err, store.ErrNotFound)
	err = s.CreateUser(ctx, accountFor(a.Login, 8))
	wantErr(t, "CreateUser of a deleted login after its leaves", err, store.ErrConflict)
}

// testDeleteAccountRacingUpdate races a profile update with the account's
// deletion: whichever wins, the account ends deleted with no names.
func testDeleteAccountRacingUpdate(t *testing.T, s store.Store) {
	ctx := newContext(t)
	for range 4 {
		a := mustCreateUser(t, ctx, s, "racer")
		var wg sync.WaitGroup
		var updErr, delErr error
		wg.Go(func() { _, updErr = s.UpdateProfile(ctx, a.Login, store.ProfileUpdate{Firstname: ptr("Zombie")}) })
		wg.Go(func() { _, delErr = s.DeleteAccount(ctx, a.Login, a.PassHash) })
		wg.Wait()
		if delErr != nil {
			t.Fatalf("DeleteAccount = %v", delErr)
		}
		if updErr != nil && !errors.Is(updErr, store.ErrNotFound) {
			t.Fatalf("UpdateProfile racing the delete = %v, want nil or ErrNotFound", updErr)
		}
		names, err := s.Names(ctx, []string{a.Login})
		if err != nil || len(names) != 0 {
			t.Fatalf("Names after the race = %v, %v; want none", names, err)
		}
		_, err = s.User(ctx, a.Login)
		wantErr(t, "User after the race", err, store.ErrNotFound)
	}
}
