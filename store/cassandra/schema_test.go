package cassandra

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/killrchat/chatql/store"
)

// TestSchemaV2Statements checks the splitting of schema_v2.cql: every
// statement is an idempotent CREATE or an ALTER ... ADD that execMigration
// recognizes, and so makes idempotent.
func TestSchemaV2Statements(t *testing.T) {
	stmts := statements(schemaV2)
	var alters []string
	for _, s := range stmts {
		switch m := addColumn.FindStringSubmatch(s); {
		case m != nil:
			alters = append(alters, m[1]+"."+m[2])
		case !strings.HasPrefix(s, "CREATE ") || !strings.Contains(s, " IF NOT EXISTS "):
			t.Errorf("statement is neither an idempotent CREATE nor an ALTER TABLE ... ADD: %s", s)
		}
	}
	if want := []string{"chat_rooms.kind", "chat_room_messages.visible"}; !slices.Equal(alters, want) {
		t.Errorf("schema_v2.cql adds columns %v, want %v", alters, want)
	}
	if len(stmts) != 6 {
		t.Errorf("schema_v2.cql has %d statements, want 6:\n%s", len(stmts), strings.Join(stmts, "\n---\n"))
	}
}

// TestMigrateFromV1 opens a keyspace of schema version 1 holding a room
// and a message: Open applies version 2, the old rows read as a public room
// and a visible message, and the old message can be hidden. Then it replays
// a version 2 interrupted after its ALTERs (not recorded): Open skips the
// columns that exist and records it.
func TestMigrateFromV1(t *testing.T) {
	cfg := testConfig(t)
	cfg.Keyspace = testKeyspace + "_v1"
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	boot, err := gocql.NewCluster(cfg.Hosts...).CreateSession()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(boot.Close) // after drop: cleanups run last in, first out
	drop := func() {
		if err := execDDL(context.Background(), boot, "DROP KEYSPACE IF EXISTS "+cfg.Keyspace); err != nil {
			t.Errorf("drop keyspace %s: %v", cfg.Keyspace, err)
		}
	}
	drop()
	t.Cleanup(drop)
	if err := execDDL(ctx, boot, "CREATE KEYSPACE "+cfg.Keyspace+" WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"); err != nil {
		t.Fatal(err)
	}
	cluster := gocql.NewCluster(cfg.Hosts...)
	cluster.Keyspace = cfg.Keyspace
	v1, err := cluster.CreateSession()
	if err != nil {
		t.Fatal(err)
	}
	defer v1.Close()
	if err := migrateTo(ctx, v1, cfg.Keyspace, migrations[:1]); err != nil {
		t.Fatalf("migrate to version 1: %v", err)
	}
	hasColumn := func(table, column string) bool {
		t.Helper()
		var name string
		err := v1.Query(selectColumn, cfg.Keyspace, table, column).WithContext(ctx).Scan(&name)
		if err != nil && !errors.Is(err, gocql.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	if hasColumn("chat_rooms", "kind") {
		t.Fatal("version 1 has chat_rooms.kind")
	}

	// A room and a message as version 1 wrote them.
	alice := userUDT{Login: "alice", Firstname: "A", Lastname: "L"}
	created := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	old := store.Message{Room: "legacy", ID: store.MessageIDAt(time.Now().Add(-30 * time.Minute)), Author: store.UserRef(alice), Content: "from v1"}
	for _, q := range []*gocql.Query{
		v1.Query(`INSERT INTO chat_rooms (room_name, creator, creator_login, creation_date, banner, participants) VALUES (?, ?, ?, ?, ?, ?)`,
			"legacy", alice, alice.Login, created, "old", []userUDT{alice}),
		v1.Query(`INSERT INTO chat_room_messages (room_name, time_bucket, message_id, author, content, system_message) VALUES (?, ?, ?, ?, ?, ?)`,
			old.Room, int(store.BucketOf(old.ID.Time())), gocql.UUID(old.ID), alice, old.Content, false),
		v1.Query(`INSERT INTO messages_bucket (room_name, time_bucket) VALUES (?, ?)`, old.Room, int(store.BucketOf(old.ID.Time()))),
	} {
		if err := q.WithContext(ctx).Exec(); err != nil {
			t.Fatal(err)
		}
	}

	db := mustOpen(t, cfg)
	if !hasColumn("chat_rooms", "kind") || !hasColumn("chat_room_messages", "visible") || !hasColumn("conversations_by_user", "left_at") {
		t.Fatal("Open did not apply version 2")
	}
	wantVersions := func(want ...int) {
		t.Helper()
		iter := db.query(ctx, selectVersions).Iter()
		var got []int
		var v int
		for iter.Scan(&v) {
			got = append(got, v)
		}
		if err := iter.Close(); err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("schema versions = %v, want %v", got, want)
		}
	}
	wantVersions(1, 2, 3, 4)

	r, err := db.Room(ctx, "legacy")
	if err != nil || r.Kind != store.PublicRoom || r.Banner != "old" {
		t.Errorf("Room(legacy) = %+v, %v; want the public room of version 1", r, err)
	}
	msgs, err := db.Messages(ctx, "legacy", store.MessageID{}, 10)
	if err != nil || len(msgs) != 1 || msgs[0] != old {
		t.Errorf("Messages(legacy) = %+v, %v; want [%+v], visible", msgs, err, old)
	}
	// Not in the index, but it can be hidden, without creating index rows.
	if _, err := db.Message(ctx, old.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Message of a version 1 message = %v, want ErrNotFound", err)
	}
	if _, err := db.HideMessage(ctx, old, store.UserRef(alice)); err != nil {
		t.Fatalf("HideMessage of a version 1 message = %v", err)
	}
	msgs, err = db.Messages(ctx, "legacy", store.MessageID{}, 10)
	if err != nil || len(msgs) != 1 || !msgs[0].Hidden {
		t.Errorf("Messages(legacy) after HideMessage = %+v, %v; want it hidden", msgs, err)
	}
	var n int
	if err := db.query(ctx, `SELECT count(*) FROM messages_by_id WHERE message_id = ?`, gocql.UUID(old.ID)).Scan(&n); err != nil || n != 0 {
		t.Errorf("messages_by_id rows of the hidden version 1 message = %d, %v; want none", n, err)
	}

	// Version 2 interrupted after its ALTERs: not recorded, columns there.
	if err := db.query(ctx, `DELETE FROM schema_migrations WHERE version = 2`).Exec(); err != nil {
		t.Fatal(err)
	}
	wantVersions(1, 3, 4)
	mustOpen(t, cfg)
	wantVersions(1, 2, 3, 4)
}
