package cassandra

import (
	"context"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

// TestMigrateListsPublicRooms opens a keyspace of schema version 24 holding
// a public room, a private group and a deleted room's leftover row (a
// participant added by a plain update, no creator): Open applies version
// 26, which lists the public room only, and writes no row for the
// leftover. Listing again changes nothing.
func TestMigrateListsPublicRooms(t *testing.T) {
	cfg, v24 := legacyKeyspace(t, "_v24", 24)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	exec := func(stmt string, args ...any) {
		t.Helper()
		if err := v24.Query(stmt, args...).WithContext(ctx).Exec(); err != nil {
			t.Fatal(err)
		}
	}
	alice := userUDT{Login: "alice"}
	const insertV24 = `INSERT INTO chat_rooms (room_name, creator, creator_login, creation_date, banner, participants, kind) VALUES (?, ?, ?, ?, ?, ?, ?)`
	exec(insertV24, "old-hall", alice, "alice", time.Now(), "", []userUDT{alice}, nil)
	exec(insertV24, "old-den", alice, "alice", time.Now(), "", []userUDT{alice}, string(store.PrivateGroup))
	exec(`UPDATE chat_rooms SET participants = participants + ? WHERE room_name = ?`, []userUDT{alice}, "old-gone")

	db := mustOpen(t, cfg)
	wantVersions(t, db, versionsBut(0)...)
	list := func() []string {
		t.Helper()
		rooms, err := db.PublicRooms(ctx, "bob", "", 10)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, r := range rooms {
			names = append(names, r.Name)
		}
		return names
	}
	if got := list(); len(got) != 1 || got[0] != "old-hall" {
		t.Errorf("PublicRooms after the upgrade = %v; want [old-hall]", got)
	}
	if err := listPublicRooms(ctx, db.session); err != nil {
		t.Fatalf("listPublicRooms again = %v", err)
	}
	if got := list(); len(got) != 1 || got[0] != "old-hall" {
		t.Errorf("PublicRooms after listing again = %v; want [old-hall]", got)
	}
	var listed *string
	if err := db.query(ctx, `SELECT listed FROM chat_rooms WHERE room_name = ?`, "old-gone").Scan(&listed); err != nil || listed != nil {
		t.Errorf("the leftover row's listed = %v, %v; want null", listed, err)
	}
}
