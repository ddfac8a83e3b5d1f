package embedded

import (
	"errors"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/killrchat/chatql/store"
)

// TestBuildRoomMembers opens a store written before room_members existed
// (made here by deleting the index and its marker, and leaving stale rows
// that an interrupted build could have left): Open builds the index from
// chat_rooms, and Membership answers as Room does.
func TestBuildRoomMembers(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	db := open(t, dir)

	users := map[string]store.UserRef{}
	for _, login := range []string{"alice", "bob", "carol", "dave"} {
		u := store.UserRef{Login: login, Firstname: login, Lastname: "L"}
		users[login] = u
		if err := db.CreateUser(ctx, store.Account{User: store.User{UserRef: u}}); err != nil {
			t.Fatalf("CreateUser(%q) = %v", login, err)
		}
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	room := store.Room{Name: "tea-party", Creator: users["alice"], CreatedAt: now}
	group := store.Room{Name: "croquet", Kind: store.PrivateGroup, Creator: users["bob"], CreatedAt: now}
	for _, r := range []store.Room{room, group} {
		if err := db.CreateRoom(ctx, r); err != nil {
			t.Fatalf("CreateRoom(%q) = %v", r.Name, err)
		}
	}
	for _, login := range []string{"bob", "carol"} {
		if _, _, err := db.JoinRoom(ctx, room.Name, users[login]); err != nil {
			t.Fatalf("JoinRoom(%q) = %v", login, err)
		}
	}
	if _, err := db.LeaveRoom(ctx, room.Name, users["carol"]); err != nil {
		t.Fatalf("LeaveRoom = %v", err)
	}
	if _, _, err := db.AddGroupMember(ctx, group.Name, store.UserRef{Login: "bob"}, users["dave"], now); err != nil {
		t.Fatalf("AddGroupMember = %v", err)
	}

	// Back to a store without the index, plus stale rows: a member row of
	// a user not in the room, and the header of a room that is gone.
	if err := db.pdb.DeleteRange(tuple(tableRoomMembers), tuple(tableRoomMembers).end(), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.pdb.Delete(roomMembersBuilt(), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	stale := db.batch()
	stale.set(memberKey(room.Name, "carol"), memberRow{Creator: refRow(users["alice"])})
	stale.set(membersPartition("gone"), memberRow{Creator: refRow(users["alice"])})
	if err := stale.commit(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}

	db = open(t, dir)
	defer db.Close()
	if built, err := db.has(roomMembersBuilt()); err != nil || !built {
		t.Errorf("after Open, room_members built = %v, %v; want true", built, err)
	}
	want := map[string]map[string]bool{
		room.Name:  {"alice": true, "bob": true, "carol": false, "dave": false},
		group.Name: {"alice": false, "bob": true, "carol": false, "dave": true},
	}
	for _, r := range []store.Room{room, group} {
		full, err := db.Room(ctx, r.Name)
		if err != nil {
			t.Fatalf("Room(%q) = %v", r.Name, err)
		}
		for login, in := range want[r.Name] {
			m, err := db.Membership(ctx, r.Name, login)
			wantM := store.RoomMembership{Room: r.Name, Kind: r.Kind, Creator: r.Creator, Login: login, Participant: in}
			if err != nil || m != wantM {
				t.Errorf("Membership(%q, %q) = %+v, %v; want %+v", r.Name, login, m, err, wantM)
			}
			if full.HasParticipant(login) != in {
				t.Errorf("Room(%q).HasParticipant(%q) = %v, want %v", r.Name, login, !in, in)
			}
		}
	}
	if m, err := db.Membership(ctx, "gone", "alice"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Membership of a room that is gone = %+v, %v; want ErrNotFound", m, err)
	}

	// The index is built once: a later Open keeps it as it is.
	if err := db.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	db = open(t, dir)
	if m, err := db.Membership(ctx, room.Name, "bob"); err != nil || !m.Participant {
		t.Errorf("Membership(%q, bob) after a second Open = %+v, %v; want a participant", room.Name, m, err)
	}
}
