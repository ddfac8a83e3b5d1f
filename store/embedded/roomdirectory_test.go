package embedded

import (
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/killrchat/chatql/store"
)

// TestBuildPublicRooms opens a store written before public_rooms existed
// (made here by deleting the index and its marker, and leaving a stale row
// an interrupted build could have left): Open lists the public rooms from
// chat_rooms, and no group, nor the stale row's room.
func TestBuildPublicRooms(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	db := open(t, dir)
	alice := store.UserRef{Login: "alice", Firstname: "Alice", Lastname: "L"}
	if err := db.CreateUser(ctx, store.Account{User: store.User{UserRef: alice}}); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	for _, r := range []store.Room{
		{Name: "hall-b", Creator: alice, CreatedAt: now},
		{Name: "hall-a", Creator: alice, CreatedAt: now},
		{Name: "den", Kind: store.PrivateGroup, Creator: alice, CreatedAt: now},
	} {
		if err := db.CreateRoom(ctx, r); err != nil {
			t.Fatalf("CreateRoom(%q) = %v", r.Name, err)
		}
	}
	if err := db.pdb.DeleteRange(tuple(tablePublicRooms), tuple(tablePublicRooms).end(), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.pdb.Delete(publicRoomsBuilt(), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.pdb.Set(publicRoomKey("gone"), nil, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if rooms, err := db.PublicRooms(ctx, "bob", "", 10); err != nil || len(rooms) != 0 {
		t.Fatalf("PublicRooms without the index = %v, %v; want none (the test lost its index)", rooms, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db = open(t, dir)
	defer db.Close()
	rooms, err := db.PublicRooms(ctx, "bob", "", 10)
	var names []string
	for _, r := range rooms {
		names = append(names, r.Name)
	}
	if err != nil || len(names) != 2 || names[0] != "hall-a" || names[1] != "hall-b" {
		t.Errorf("PublicRooms after Open = %v, %v; want [hall-a hall-b], by name", names, err)
	}
	if has, err := db.has(publicRoomKey("gone")); err != nil || has {
		t.Errorf("the stale row of public_rooms is there after Open: %v, %v", has, err)
	}
}
