package chat

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/chatql/broker"
	"github.com/killrchat/chatql/files"
	"github.com/killrchat/chatql/files/disk"
	"github.com/killrchat/chatql/store"
	"github.com/killrchat/chatql/store/embedded"
)

// pictureService is a chat with files, on the embedded store and a disk
// object store, whose files' clock is *now.
func pictureService(t *testing.T, now *time.Time) (*Service, *embedded.DB) {
	t.Helper()
	db, err := embedded.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	objects, err := disk.New(t.TempDir(), []byte(strings.Repeat("s", 32)), func(context.Context) string { return "http://files.test" }, "/files/", disk.Options{})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	fs := files.NewService(db, objects, files.DefaultLimits, log)
	fs.Now = func() time.Time { return *now }
	b := broker.NewLocal(64)
	t.Cleanup(func() { b.Close() })
	return &Service{Store: db, Broker: b, Files: fs, Log: log}, db
}

// readyImage records a checked image of owner's, as completeUpload leaves
// one (its objects are not needed here).
func readyImage(t *testing.T, db store.Store, owner string) string {
	t.Helper()
	ctx := t.Context()
	f := store.File{Attachment: store.Attachment{ID: store.NewMessageID(), Name: "face.png", ContentType: "image/png", Size: 100}, Owner: owner, State: store.FilePending}
	if err := db.CreateFile(ctx, f, 1<<30); err != nil {
		t.Fatal(err)
	}
	f.Width, f.Height, f.Blurhash = 64, 64, "LEHV6nWB2yk8pyo0adR*.7kCMdnj"
	if err := db.CompleteFile(ctx, owner, f.Attachment); err != nil {
		t.Fatal(err)
	}
	return f.ID.String()
}

// fileState is the state of owner's file id; zero once it is removed.
func fileState(t *testing.T, db store.Store, owner, id string) store.FileState {
	t.Helper()
	fid, _ := files.ParseFileID(id)
	f, err := db.File(t.Context(), owner, fid)
	if errors.Is(err, store.ErrNotFound) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return f.State
}

// TestPicturesSurviveCrashes plays the crashes a picture's change may meet,
// by leaving out its later steps: a file claimed as a picture that the
// profile or room took is attached by the sweep, one they did not take is
// removed; and a change run whole attaches the new file and removes the
// replaced one at once.
func TestPicturesSurviveCrashes(t *testing.T) {
	ctx := t.Context()
	now := time.Now()
	s, db := pictureService(t, &now)
	alice := store.UserRef{Login: "alice", Firstname: "Alice", Lastname: "L"}
	if err := db.CreateUser(ctx, store.Account{User: store.User{UserRef: alice}, PassHash: []byte("h")}); err != nil {
		t.Fatal(err)
	}
	room := store.Room{Name: "pics", Creator: alice, CreatedAt: now.UTC().Truncate(time.Millisecond), Participants: []store.UserRef{alice}}
	if err := db.CreateRoom(ctx, room); err != nil {
		t.Fatal(err)
	}

	// Crashed after the store took the picture, before Attached.
	taken, iconTaken := readyImage(t, db, alice.Login), readyImage(t, db, alice.Login)
	a, err := s.Files.ClaimPicture(ctx, alice.Login, taken, "")
	if err != nil {
		t.Fatalf("ClaimPicture = %v", err)
	}
	if _, err := db.SetAvatar(ctx, alice.Login, &store.Picture{Attachment: a, Owner: alice.Login}); err != nil {
		t.Fatal(err)
	}
	icon, err := s.Files.ClaimPicture(ctx, alice.Login, iconTaken, "pics")
	if err != nil {
		t.Fatalf("ClaimPicture(icon) = %v", err)
	}
	if _, err := db.SetRoomIcon(ctx, "pics", &store.Picture{Attachment: icon, Owner: alice.Login}); err != nil {
		t.Fatal(err)
	}
	// Crashed before the store took them.
	lost, iconLost := readyImage(t, db, alice.Login), readyImage(t, db, alice.Login)
	if _, err := s.Files.ClaimPicture(ctx, alice.Login, lost, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Files.ClaimPicture(ctx, alice.Login, iconLost, "pics"); err != nil {
		t.Fatal(err)
	}

	// Not due yet: the sweep leaves them claimed.
	if _, err := s.Files.Sweep(ctx, s.FileHeld, 100); err != nil {
		t.Fatal(err)
	}
	if got := fileState(t, db, alice.Login, lost); got != store.FileClaimed {
		t.Fatalf("a fresh claimed picture is in state %d after a sweep, want claimed", got)
	}
	now = now.Add(files.DefaultLimits.UnattachedTTL + time.Minute)
	if _, err := s.Files.Sweep(ctx, s.FileHeld, 100); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what, id string
		want     store.FileState
	}{
		{"the avatar the profile took", taken, store.FileAttached},
		{"the icon the room took", iconTaken, store.FileAttached},
		{"an avatar the profile never took", lost, 0},
		{"an icon the room never took", iconLost, 0},
	} {
		if got := fileState(t, db, alice.Login, c.id); got != c.want {
			t.Errorf("%s: state %d after the sweep, want %d", c.what, got, c.want)
		}
	}

	// A whole change: the new file attached, the replaced one gone.
	now = time.Now()
	next := readyImage(t, db, alice.Login)
	u, err := s.SetAvatar(ctx, alice, &next)
	if err != nil || u.Avatar == nil || u.Avatar.ID.String() != next {
		t.Fatalf("SetAvatar = %+v, %v", u, err)
	}
	if got := fileState(t, db, alice.Login, next); got != store.FileAttached {
		t.Errorf("the new avatar's file is in state %d, want attached", got)
	}
	if got := fileState(t, db, alice.Login, taken); got != 0 {
		t.Errorf("the replaced avatar's file is in state %d, want removed", got)
	}
	// Crashed after the store took a new avatar, before the replaced one
	// was removed: the sweep removes it, and keeps the new one.
	replaced, crashed := next, readyImage(t, db, alice.Login)
	a, err = s.Files.ClaimPicture(ctx, alice.Login, crashed, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.releasePicture(ctx, u.Avatar); err != nil {
		t.Fatal(err)
	}
	if _, err := db.SetAvatar(ctx, alice.Login, &store.Picture{Attachment: a, Owner: alice.Login}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(files.DefaultLimits.UnattachedTTL + time.Minute)
	if _, err := s.Files.Sweep(ctx, s.FileHeld, 100); err != nil {
		t.Fatal(err)
	}
	if got := fileState(t, db, alice.Login, replaced); got != 0 {
		t.Errorf("a replaced avatar released before a crash: state %d after the sweep, want removed", got)
	}
	if got := fileState(t, db, alice.Login, crashed); got != store.FileAttached {
		t.Errorf("the avatar set before a crash: state %d after the sweep, want attached", got)
	}
	// Crashed after the release, before the store took the new one: the
	// sweep attaches the current one again.
	now = time.Now()
	a2 := readyImage(t, db, alice.Login)
	if _, err := s.Files.ClaimPicture(ctx, alice.Login, a2, ""); err != nil {
		t.Fatal(err)
	}
	current, err := db.User(ctx, alice.Login)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.releasePicture(ctx, current.Avatar); err != nil {
		t.Fatal(err)
	}
	now = now.Add(files.DefaultLimits.UnattachedTTL + time.Minute)
	if _, err := s.Files.Sweep(ctx, s.FileHeld, 100); err != nil {
		t.Fatal(err)
	}
	if got := fileState(t, db, alice.Login, crashed); got != store.FileAttached {
		t.Errorf("the avatar released before a crash that kept it: state %d after the sweep, want attached", got)
	}
	if got := fileState(t, db, alice.Login, a2); got != 0 {
		t.Errorf("an avatar never set: state %d after the sweep, want removed", got)
	}

	// Deleting the room removes its icon's file.
	now = time.Now()
	if _, err := s.DeleteRoom(ctx, alice, "pics"); err != nil {
		t.Fatal(err)
	}
	if got := fileState(t, db, alice.Login, iconTaken); got != 0 {
		t.Errorf("a deleted room's icon's file is in state %d, want removed", got)
	}
}
