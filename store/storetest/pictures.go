package storetest

import (
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

// picture returns an image of owner's, as an avatar or an icon holds it.
func picture(owner, name string) *store.Picture {
	return &store.Picture{
		Attachment: store.Attachment{ID: store.NewMessageID(), Name: name, ContentType: "image/png", Size: 1234, Width: 640, Height: 480, Blurhash: "LEHV6nWB2yk8pyo0adR*.7kCMdnj"},
		Owner:      owner,
	}
}

// checkPicture fails the test unless got is want (both nil, or equal).
func checkPicture(t *testing.T, what string, got, want *store.Picture) {
	t.Helper()
	if (got == nil) != (want == nil) || got != nil && *got != *want {
		t.Errorf("%s = %s, want %s", what, fmtPicture(got), fmtPicture(want))
	}
}

func fmtPicture(a *store.Picture) string {
	if a == nil {
		return "none"
	}
	return a.ID.String() + " " + a.Name
}

// testAvatar sets, replaces and removes a user's avatar: each change
// returns the one it replaced, and User and Names show the current one; a
// deleted account has none and takes none.
func testAvatar(t *testing.T, s store.Store) {
	ctx := newContext(t)
	a := mustCreateUser(t, ctx, s, "avatar")
	other := mustCreateUser(t, ctx, s, "avatarother")
	checkPicture(t, "a new user's avatar", mustUser(t, ctx, s, a.Login).Avatar, nil)

	first, second := picture(a.Login, "first.png"), picture(a.Login, "second.png")
	old, err := s.SetAvatar(ctx, a.Login, first)
	if err != nil {
		t.Fatalf("SetAvatar(first) = %v", err)
	}
	checkPicture(t, "SetAvatar(first)'s old avatar", old, nil)
	checkPicture(t, "User's avatar after SetAvatar(first)", mustUser(t, ctx, s, a.Login).Avatar, first)
	old, err = s.SetAvatar(ctx, a.Login, second)
	if err != nil {
		t.Fatalf("SetAvatar(second) = %v", err)
	}
	checkPicture(t, "SetAvatar(second)'s old avatar", old, first)
	acct, err := s.Account(ctx, a.Login)
	if err != nil {
		t.Fatalf("Account = %v", err)
	}
	checkPicture(t, "Account's avatar", acct.Avatar, second)
	names, err := s.Names(ctx, []string{a.Login, other.Login})
	if err != nil {
		t.Fatalf("Names = %v", err)
	}
	checkPicture(t, "Names' avatar", names[a.Login].Avatar, second)
	checkPicture(t, "Names' avatar of another user", names[other.Login].Avatar, nil)
	checkUserRef(t, "Names' user", names[a.Login].UserRef, a.UserRef)

	old, err = s.SetAvatar(ctx, a.Login, nil)
	if err != nil {
		t.Fatalf("SetAvatar(nil) = %v", err)
	}
	checkPicture(t, "SetAvatar(nil)'s old avatar", old, second)
	checkPicture(t, "User's avatar after SetAvatar(nil)", mustUser(t, ctx, s, a.Login).Avatar, nil)

	_, err = s.SetAvatar(ctx, "nobody"+a.Login, first)
	wantErr(t, "SetAvatar of no user", err, store.ErrNotFound)

	if _, err := s.SetAvatar(ctx, a.Login, first); err != nil {
		t.Fatalf("SetAvatar(first) again = %v", err)
	}
	if _, err := s.DeleteAccount(ctx, a.Login, a.PassHash); err != nil {
		t.Fatalf("DeleteAccount = %v", err)
	}
	_, err = s.SetAvatar(ctx, a.Login, second)
	wantErr(t, "SetAvatar of a deleted account", err, store.ErrNotFound)
	names, err = s.Names(ctx, []string{a.Login})
	if err != nil || len(names) != 0 {
		t.Errorf("Names of a deleted account = %v, %v; want none", names, err)
	}
}

// testRoomIcon sets, replaces and removes a room's icon: each change
// returns the one it replaced, every read of the room shows the current
// one, DeleteRoom returns it, and a deleted room takes none (nor comes
// back).
func testRoomIcon(t *testing.T, s store.Store) {
	ctx := newContext(t)
	creator := mustCreateUser(t, ctx, s, "icon")
	r := mustCreateRoom(t, ctx, s, "icon", creator.UserRef)
	checkPicture(t, "a new room's icon", mustRoom(t, ctx, s, r.Name).Icon, nil)

	first, second := picture(creator.Login, "first.png"), picture("iconmoderator", "second.png")
	old, err := s.SetRoomIcon(ctx, r.Name, first)
	if err != nil {
		t.Fatalf("SetRoomIcon(first) = %v", err)
	}
	checkPicture(t, "SetRoomIcon(first)'s old icon", old, nil)
	checkPicture(t, "Room's icon after SetRoomIcon(first)", mustRoom(t, ctx, s, r.Name).Icon, first)
	old, err = s.SetRoomIcon(ctx, r.Name, second)
	if err != nil {
		t.Fatalf("SetRoomIcon(second) = %v", err)
	}
	checkPicture(t, "SetRoomIcon(second)'s old icon", old, first)
	joined := mustJoinRoom(t, ctx, s, r.Name, mustCreateUser(t, ctx, s, "iconjoin").UserRef)
	checkPicture(t, "JoinRoom's room's icon", joined.Icon, second)
	found := false
	for after := ""; ; {
		page, err := s.Rooms(ctx, after, 100)
		if err != nil {
			t.Fatalf("Rooms = %v", err)
		}
		for _, got := range page {
			if got.Name == r.Name {
				found = true
				checkPicture(t, "Rooms' icon", got.Icon, second)
			}
		}
		if len(page) < 100 || found {
			break
		}
		after = page[len(page)-1].Name
	}
	if !found {
		t.Errorf("Rooms does not list %q", r.Name)
	}

	old, err = s.SetRoomIcon(ctx, r.Name, nil)
	if err != nil {
		t.Fatalf("SetRoomIcon(nil) = %v", err)
	}
	checkPicture(t, "SetRoomIcon(nil)'s old icon", old, second)
	checkPicture(t, "Room's icon after SetRoomIcon(nil)", mustRoom(t, ctx, s, r.Name).Icon, nil)

	if _, err := s.SetRoomIcon(ctx, r.Name, first); err != nil {
		t.Fatalf("SetRoomIcon(first) again = %v", err)
	}
	deleted, _, err := s.DeleteRoom(ctx, r.Name, creator.UserRef)
	if err != nil {
		t.Fatalf("DeleteRoom = %v", err)
	}
	checkPicture(t, "DeleteRoom's room's icon", deleted.Icon, first)
	_, err = s.SetRoomIcon(ctx, r.Name, second)
	wantErr(t, "SetRoomIcon of a deleted room", err, store.ErrNotFound)
	wantRoomNotFound(t, ctx, s, r.Name)
}

// testFilesClaimPicture claims files with no message, as an avatar and as
// a room's icon: the records say so, and AttachFiles attaches them.
func testFilesClaimPicture(t *testing.T, s store.Store) {
	ctx := newContext(t)
	owner := newAccount(t, "pic").Login
	at := oldTimes()
	avatar := mustReadyFile(t, ctx, s, owner, at, 100)
	icon := mustReadyFile(t, ctx, s, owner, at.Add(time.Second), 100)
	if err := s.ClaimFiles(ctx, owner, []store.FileID{avatar.ID}, "", store.MessageID{}); err != nil {
		t.Fatalf("ClaimFiles as an avatar = %v", err)
	}
	if err := s.ClaimFiles(ctx, owner, []store.FileID{icon.ID}, "lobby", store.MessageID{}); err != nil {
		t.Fatalf("ClaimFiles as an icon = %v", err)
	}
	avatar.State = store.FileClaimed
	icon.State, icon.Room = store.FileClaimed, "lobby"
	checkFile(t, ctx, s, "an avatar's claimed file", avatar)
	checkFile(t, ctx, s, "an icon's claimed file", icon)
	got, err := s.File(ctx, owner, icon.ID)
	if err != nil || !got.IsPicture() {
		t.Errorf("File(icon) = %+v, %v; want a picture's", got, err)
	}
	due, err := s.DueFiles(ctx, at.Add(time.Hour), 1000)
	if err != nil {
		t.Fatalf("DueFiles = %v", err)
	}
	listed := 0
	for _, f := range due {
		if f.ID == avatar.ID || f.ID == icon.ID {
			listed++
			if !f.IsPicture() || f.State != store.FileClaimed {
				t.Errorf("DueFiles lists %+v; want a picture's claimed file", f)
			}
		}
	}
	if listed != 2 {
		t.Errorf("DueFiles lists %d of the 2 claimed pictures", listed)
	}
	if err := s.AttachFiles(ctx, owner, []store.FileID{avatar.ID, icon.ID}); err != nil {
		t.Fatalf("AttachFiles = %v", err)
	}
	avatar.State, icon.State = store.FileAttached, store.FileAttached
	checkFile(t, ctx, s, "an avatar's attached file", avatar)
	checkFile(t, ctx, s, "an icon's attached file", icon)
}

// testFilesRelease releases an attached file: it is claimed again, by the
// same holder, and on the sweep's list; attaching it takes it off again. A
// file in another state, or unknown, is left as it is.
func testFilesRelease(t *testing.T, s store.Store) {
	ctx := newContext(t)
	owner := newAccount(t, "release").Login
	at := oldTimes()
	held := mustReadyFile(t, ctx, s, owner, at, 100)
	doomed := mustReadyFile(t, ctx, s, owner, at.Add(time.Second), 100)
	if err := s.ClaimFiles(ctx, owner, []store.FileID{held.ID}, "lobby", store.MessageID{}); err != nil {
		t.Fatalf("ClaimFiles = %v", err)
	}
	if err := s.AttachFiles(ctx, owner, []store.FileID{held.ID}); err != nil {
		t.Fatalf("AttachFiles = %v", err)
	}
	if err := s.DoomFiles(ctx, owner, []store.FileID{doomed.ID}); err != nil {
		t.Fatalf("DoomFiles = %v", err)
	}
	listed := func() map[store.FileID]int {
		t.Helper()
		due, err := s.DueFiles(ctx, at.Add(time.Hour), 10_000)
		if err != nil {
			t.Fatalf("DueFiles = %v", err)
		}
		n := map[store.FileID]int{}
		for _, f := range due {
			if f.Owner == owner {
				n[f.ID]++
			}
		}
		return n
	}
	if n := listed(); n[held.ID] != 0 {
		t.Fatalf("an attached file is listed %d times before its release", n[held.ID])
	}

	if err := s.ReleaseFiles(ctx, owner, []store.FileID{held.ID, doomed.ID, store.MessageIDAt(at.Add(2 * time.Second))}); err != nil {
		t.Fatalf("ReleaseFiles = %v", err)
	}
	held.State, held.Room = store.FileClaimed, "lobby"
	checkFile(t, ctx, s, "a released file", held)
	doomed.State = store.FileDoomed
	checkFile(t, ctx, s, "a doomed file released", doomed)
	if n := listed(); n[held.ID] != 1 || n[doomed.ID] != 1 {
		t.Errorf("after the release, DueFiles lists the released file %d times and the doomed one %d times, want once each", n[held.ID], n[doomed.ID])
	}

	if err := s.AttachFiles(ctx, owner, []store.FileID{held.ID}); err != nil {
		t.Fatalf("AttachFiles again = %v", err)
	}
	held.State = store.FileAttached
	checkFile(t, ctx, s, "a released file attached again", held)
	if n := listed(); n[held.ID] != 0 {
		t.Errorf("a released file attached again is listed %d times", n[held.ID])
	}
}
