package cassandra

import (
	"context"
	"errors"
	"fmt"
	"reflect"
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
	cfg, v1 := legacyKeyspace(t, "_v1", 1)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
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
	err := v1.Query(`INSERT INTO chat_rooms (room_name, creator, creator_login, creation_date, banner, participants) VALUES (?, ?, ?, ?, ?, ?)`,
		"legacy", alice, alice.Login, created, "old", []userUDT{alice}).WithContext(ctx).Exec()
	if err != nil {
		t.Fatal(err)
	}
	insertLegacyMessage(t, ctx, v1, old)

	db := mustOpen(t, cfg)
	if !hasColumn("chat_rooms", "kind") || !hasColumn("chat_room_messages", "visible") || !hasColumn("conversations_by_user", "left_at") {
		t.Fatal("Open did not apply version 2")
	}
	wantVersions(t, db, versionsBut(0)...)

	r, err := db.Room(ctx, "legacy")
	if err != nil || r.Kind != store.PublicRoom || r.Banner != "old" {
		t.Errorf("Room(legacy) = %+v, %v; want the public room of version 1", r, err)
	}
	msgs, err := db.Messages(ctx, "legacy", store.MessageID{}, 10)
	if err != nil || len(msgs) != 1 || !reflect.DeepEqual(msgs[0], old) {
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
	wantVersions(t, db, versionsBut(2)...)
	mustOpen(t, cfg)
	wantVersions(t, db, versionsBut(0)...)
}

// legacyKeyspace creates a keyspace of its own, the test keyspace's name
// with suffix, at schema version `version`, dropped when the test ends,
// and returns its configuration and a session on it.
func legacyKeyspace(t *testing.T, suffix string, version int) (Config, *gocql.Session) {
	t.Helper()
	cfg := testConfig(t)
	cfg.Keyspace = testKeyspace + suffix
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
	session, err := cluster.CreateSession()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(session.Close)
	if err := migrateTo(ctx, session, cfg.Keyspace, migrations[:version]); err != nil {
		t.Fatalf("migrate to version %d: %v", version, err)
	}
	return cfg, session
}

// insertLegacyMessage writes m into its stream as version 1 did: no
// visibility, no index rows.
func insertLegacyMessage(t *testing.T, ctx context.Context, session *gocql.Session, m store.Message) {
	t.Helper()
	bucket := int(store.BucketOf(m.ID.Time()))
	for _, q := range []*gocql.Query{
		session.Query(`INSERT INTO chat_room_messages (room_name, time_bucket, message_id, author, content, system_message) VALUES (?, ?, ?, ?, ?, ?)`,
			m.Room, bucket, gocql.UUID(m.ID), userUDT(m.Author), m.Content, m.System),
		session.Query(`INSERT INTO messages_bucket (room_name, time_bucket) VALUES (?, ?)`, m.Room, bucket),
	} {
		if err := q.WithContext(ctx).Exec(); err != nil {
			t.Fatal(err)
		}
	}
}

// versionsBut returns every schema version but skip.
func versionsBut(skip int) []int {
	var vs []int
	for _, m := range migrations {
		if m.version != skip {
			vs = append(vs, m.version)
		}
	}
	return vs
}

// wantVersions checks the schema versions db's keyspace records.
func wantVersions(t *testing.T, db *DB, want ...int) {
	t.Helper()
	iter := db.query(t.Context(), selectVersions).Iter()
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

// TestMigrateUnreadRows opens a keyspace of schema version 4 whose inboxes
// have a row per unread message: Open applies version 5 and converts them
// into read marks, just before the oldest unread message, or at the last
// message where none is unread; the unread rows are gone, a stray one too,
// and the counts read as before. A second conversion changes nothing.
func TestMigrateUnreadRows(t *testing.T) {
	cfg, v4 := legacyKeyspace(t, "_v4", 4)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	alice, bob := store.UserRef{Login: "alice"}, store.UserRef{Login: "bob"}
	dm := store.DirectConversationID(alice.Login, bob.Login)
	var msgs []store.Message
	for i := range 3 {
		m := store.Message{Room: dm, ID: store.MessageIDAt(time.Now().Add(time.Duration(i-3) * time.Minute)), Author: alice, Content: fmt.Sprint("hello ", i)}
		insertLegacyMessage(t, ctx, v4, m)
		msgs = append(msgs, m)
	}
	last := msgs[2]
	exec := func(stmt string, args ...any) {
		t.Helper()
		if err := v4.Query(stmt, args...).WithContext(ctx).Exec(); err != nil {
			t.Fatal(err)
		}
	}
	// Both entries name the last message; bob has not read the last two.
	// alice has an unread row of a deleted group she has no entry of.
	for _, e := range [][2]store.UserRef{{alice, bob}, {bob, alice}} {
		exec(setLastDirect, writeTime(last.ID), userUDT(e[1]), gocql.UUID(last.ID), last.Content, userUDT(alice), false, e[0].Login, dm, sentinelID)
	}
	for _, m := range msgs[1:] {
		exec(insertUnreadRow, bob.Login, dm, gocql.UUID(m.ID), writeTime(m.ID))
	}
	exec(insertUnreadRow, alice.Login, "zz-deleted-group", gocql.UUID(last.ID), writeTime(last.ID))

	db := mustOpen(t, cfg)
	wantVersions(t, db, versionsBut(0)...)
	check := func(login string, unread int, readFrom, readTo store.MessageID) {
		t.Helper()
		c, err := db.Conversation(ctx, login, dm)
		if err != nil {
			t.Fatalf("Conversation(%s, %s) = %v", login, dm, err)
		}
		if c.Unread != unread || c.ReadUpTo.Compare(readFrom) < 0 || c.ReadUpTo.Compare(readTo) > 0 {
			t.Errorf("Conversation(%s) = %d unread, read up to %v; want %d unread, read up to between %v and %v", login, c.Unread, c.ReadUpTo, unread, readFrom, readTo)
		}
		var rows int
		if err := db.query(ctx, `SELECT count(*) FROM conversations_by_user WHERE login = ?`, login).Scan(&rows); err != nil || rows != 1 {
			t.Errorf("rows of %s's inbox = %d, %v; want 1", login, rows, err)
		}
	}
	check(alice.Login, 0, last.ID, last.ID)
	check(bob.Login, 2, msgs[0].ID, store.MinMessageID(msgs[1].ID.Time()))

	// Converting again (two servers starting at once) changes nothing.
	if _, err := db.MarkRead(ctx, bob.Login, dm, msgs[1].ID); err != nil {
		t.Fatal(err)
	}
	if err := convertUnreadRows(ctx, db.session); err != nil {
		t.Fatalf("convertUnreadRows again = %v", err)
	}
	check(alice.Login, 0, last.ID, last.ID)
	check(bob.Login, 1, msgs[1].ID, msgs[1].ID)
}
