package cassandra

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/killrchat/chatql/store"
)

// countRows returns the number of rows of a partition read.
func countRows(t *testing.T, db *DB, stmt string, args ...any) int {
	t.Helper()
	var n int
	if err := db.query(t.Context(), stmt, args...).Scan(&n); err != nil {
		t.Fatalf("%s %v: %v", stmt, args, err)
	}
	return n
}

func mustUser(t *testing.T, db *DB, prefix string) store.UserRef {
	t.Helper()
	u := store.UserRef{Login: unique(prefix), Firstname: strings.ToUpper(prefix[:1]), Lastname: "T"}
	if err := db.CreateUser(t.Context(), store.Account{User: store.User{UserRef: u}, PassHash: []byte(u.Login)}); err != nil {
		t.Fatalf("CreateUser(%q) = %v", u.Login, err)
	}
	return u
}

func mustRoom(t *testing.T, db *DB, prefix string, kind store.RoomKind, creator store.UserRef) store.Room {
	t.Helper()
	r := store.Room{Name: unique(prefix), Kind: kind, Creator: creator, CreatedAt: time.Now()}
	if err := db.CreateRoom(t.Context(), r); err != nil {
		t.Fatalf("CreateRoom(%q) = %v", r.Name, err)
	}
	return r
}

func mustPost(t *testing.T, db *DB, room string, author store.UserRef, content string) store.Message {
	t.Helper()
	m := store.Message{Room: room, ID: store.NewMessageID(), Author: author, Content: content}
	if err := db.PostMessage(t.Context(), m); err != nil {
		t.Fatalf("PostMessage(%q) = %v", room, err)
	}
	return m
}

// allEvents reads the whole log with pages of size n, checking that every
// page but the last is full.
func allEvents(t *testing.T, what string, n int, page func(after store.MessageID, limit int) ([]store.Event, error)) []store.Event {
	t.Helper()
	var all []store.Event
	for after := (store.MessageID{}); ; {
		evs, err := page(after, n)
		if err != nil {
			t.Fatalf("%s after %v = %v", what, after, err)
		}
		all = append(all, evs...)
		if len(evs) < n {
			return all
		}
		after = evs[len(evs)-1].ID
	}
}

func kindsOf(evs []store.Event) []string {
	var out []string
	for _, e := range evs {
		s := string(e.Kind)
		if e.Message != nil {
			s += ":" + e.Message.Content
		}
		out = append(out, s)
	}
	return out
}

// TestSchemaV4Statements checks the splitting of schema_v4.cql: idempotent
// CREATEs and one ALTER ... ADD that execMigration makes idempotent.
func TestSchemaV4Statements(t *testing.T) {
	stmts := statements(schemaV4)
	var alters, creates []string
	for _, s := range stmts {
		switch m := addColumn.FindStringSubmatch(s); {
		case m != nil:
			alters = append(alters, m[1]+"."+m[2])
		case strings.HasPrefix(s, "CREATE TABLE IF NOT EXISTS "):
			creates = append(creates, strings.Fields(s)[5])
		default:
			t.Errorf("statement is neither an idempotent CREATE TABLE nor an ALTER TABLE ... ADD: %s", s)
		}
	}
	if want := []string{"chat_rooms.former_members"}; !slices.Equal(alters, want) {
		t.Errorf("schema_v4.cql adds columns %v, want %v", alters, want)
	}
	if want := []string{"room_events", "inbox_events", "inbox_buckets"}; !slices.Equal(creates, want) {
		t.Errorf("schema_v4.cql creates %v, want %v", creates, want)
	}
}

// TestMigrateFromV3 opens a keyspace of schema version 3 holding a private
// group of two members with a message: Open applies version 4; the group
// works on (a leave records its former member, a delete removes that
// member's entry); the old message has no event, new ones do. Then a
// version 4 interrupted after its ALTER is applied again and recorded.
func TestMigrateFromV3(t *testing.T) {
	cfg, v3 := legacyKeyspace(t, "_v3", 3)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	hasTable := func(table string) bool {
		t.Helper()
		var name string
		err := v3.Query(`SELECT table_name FROM system_schema.tables WHERE keyspace_name = ? AND table_name = ?`, cfg.Keyspace, table).WithContext(ctx).Scan(&name)
		if err != nil && !errors.Is(err, gocql.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	if hasTable("room_events") {
		t.Fatal("version 3 has room_events")
	}

	// What version 3 wrote: a group of alice and bob, a message, bob's
	// entry (a window), the listing.
	alice := store.UserRef{Login: "alice", Firstname: "A", Lastname: "L"}
	bob := store.UserRef{Login: "bob", Firstname: "B", Lastname: "O"}
	created := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	old := store.Message{Room: "legacy", ID: store.MessageIDAt(time.Now().Add(-30 * time.Minute)), Author: alice, Content: "from v3"}
	b := int(store.BucketOf(old.ID.Time()))
	for _, q := range []*gocql.Query{
		v3.Query(`INSERT INTO chat_rooms (room_name, creator, creator_login, creation_date, banner, participants, kind) VALUES (?, ?, ?, ?, ?, ?, 'private')`,
			"legacy", userUDT(alice), alice.Login, created, "", []userUDT{userUDT(alice), userUDT(bob)}),
		v3.Query(`INSERT INTO chat_room_messages (room_name, time_bucket, message_id, author, content, system_message, visible) VALUES (?, ?, ?, ?, ?, false, true)`,
			old.Room, b, gocql.UUID(old.ID), userUDT(alice), old.Content),
		v3.Query(`INSERT INTO messages_by_id (message_id, room_name, author, content, system_message, visible) VALUES (?, ?, ?, ?, false, true)`,
			gocql.UUID(old.ID), old.Room, userUDT(alice), old.Content),
		v3.Query(familyQueries[roomBuckets].insert, old.Room, b),
		v3.Query(openWindowStmt, []time.Time{created}, alice.Login, "legacy", sentinelID),
		v3.Query(openWindowStmt, []time.Time{created}, bob.Login, "legacy", sentinelID),
	} {
		if err := q.WithContext(ctx).Exec(); err != nil {
			t.Fatal(err)
		}
	}

	db := mustOpen(t, cfg)
	for _, table := range []string{"room_events", "inbox_events", "inbox_buckets"} {
		if !hasTable(table) {
			t.Errorf("Open did not create %s", table)
		}
	}
	if evs, err := db.RoomEvents(ctx, "legacy", store.MessageID{}, 10); err != nil || len(evs) != 0 {
		t.Errorf("RoomEvents(legacy) = %v, %v; want none: version 3 logged nothing", kindsOf(evs), err)
	}
	if _, err := db.LeaveGroup(ctx, "legacy", bob, time.Now()); err != nil {
		t.Fatalf("LeaveGroup(bob) = %v", err)
	}
	var former []string
	if err := db.query(ctx, `SELECT former_members FROM chat_rooms WHERE room_name = ?`, "legacy").Scan(&former); err != nil || !slices.Equal(former, []string{bob.Login}) {
		t.Errorf("former_members after bob left = %v, %v; want [bob]", former, err)
	}
	evs, err := db.RoomEvents(ctx, "legacy", store.MessageID{}, 10)
	if err != nil || len(evs) != 1 || evs[0].Kind != store.ParticipantLeft || evs[0].User != bob {
		t.Errorf("RoomEvents(legacy) after the leave = %v, %v; want bob's leave", kindsOf(evs), err)
	}
	if _, _, err := db.DeleteRoom(ctx, "legacy", alice); err != nil {
		t.Fatalf("DeleteRoom(legacy) = %v", err)
	}
	for _, u := range []store.UserRef{alice, bob} {
		if _, err := db.Conversation(ctx, u.Login, "legacy"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Conversation(%q, legacy) after the delete = %v, want ErrNotFound", u.Login, err)
		}
	}

	// Version 4 interrupted after its ALTER: not recorded, column there.
	if err := db.query(ctx, `DELETE FROM schema_migrations WHERE version = 4`).Exec(); err != nil {
		t.Fatal(err)
	}
	mustOpen(t, cfg)
	var n int
	if err := db.query(ctx, `SELECT count(*) FROM schema_migrations WHERE version = 4`).Scan(&n); err != nil || n != 1 {
		t.Errorf("version 4 recorded %d times, %v; want once after the second Open", n, err)
	}
}

// TestDeleteRoomListing is the listing bug: a room deleted and created
// again within the day, posted to by a process that had posted to the
// first room. Every process lists every write to a room, so the delete
// leaves no listing row and the new room's posts are listed. The other
// process is a second DB: another session, and another memory of listed
// days.
func TestDeleteRoomListing(t *testing.T) {
	cfg := testConfig(t)
	one, two := mustOpen(t, cfg), mustOpen(t, cfg)
	ctx := t.Context()
	alice := mustUser(t, one, "alice")
	r := mustRoom(t, one, "relisted", store.PublicRoom, alice)
	old := mustPost(t, two, r.Name, alice, "in the first room")
	mustPost(t, one, r.Name, alice, "again")
	if _, err := one.HideMessage(ctx, old, alice); err != nil {
		t.Fatal(err)
	}
	// An old day too, whose listing a delete used to keep.
	mustPost(t, two, r.Name, alice, "today")
	past := store.Message{Room: r.Name, ID: store.MessageIDAt(time.Now().Add(-50 * time.Hour)), Author: alice, Content: "two days ago"}
	if err := two.PostMessage(ctx, past); err != nil {
		t.Fatal(err)
	}

	if _, _, err := one.DeleteRoom(ctx, r.Name, alice); err != nil {
		t.Fatalf("DeleteRoom = %v", err)
	}
	if n := countRows(t, one, `SELECT count(*) FROM messages_bucket WHERE room_name = ?`, r.Name); n != 0 {
		t.Errorf("messages_bucket rows after DeleteRoom = %d, want none", n)
	}
	for _, b := range []store.Bucket{store.BucketOf(time.Now()), store.BucketOf(past.ID.Time())} {
		for _, table := range []string{"room_events", "chat_room_messages"} {
			if n := countRows(t, one, `SELECT count(*) FROM `+table+` WHERE room_name = ? AND time_bucket = ?`, r.Name, int(b)); n != 0 {
				t.Errorf("%s rows of day %d after DeleteRoom = %d, want none", table, b, n)
			}
		}
	}

	// Created again at once on the first process, posted to on the second.
	if err := one.CreateRoom(ctx, store.Room{Name: r.Name, Creator: alice, CreatedAt: time.Now()}); err != nil {
		t.Fatalf("CreateRoom again = %v", err)
	}
	m := mustPost(t, two, r.Name, alice, "in the second room")
	if listed, err := one.listedBuckets(ctx, roomBuckets, r.Name); err != nil || !slices.Equal(listed, []store.Bucket{store.BucketOf(m.ID.Time())}) {
		t.Errorf("listing of the new room = %v, %v; want only the day of its post", listed, err)
	}
	msgs, err := one.Messages(ctx, r.Name, store.MessageID{}, 10)
	if err != nil || len(msgs) != 1 || !reflect.DeepEqual(msgs[0], m) {
		t.Errorf("Messages of the new room = %+v, %v; want its one post", msgs, err)
	}
	evs, err := one.RoomEvents(ctx, r.Name, store.MessageID{}, 10)
	if err != nil || len(evs) != 1 || evs[0].ID != m.ID || evs[0].Kind != store.MessagePosted || !reflect.DeepEqual(*evs[0].Message, m) {
		t.Errorf("RoomEvents of the new room = %v, %v; want its one post", kindsOf(evs), err)
	}
}

// TestListingRemembered: rows nothing deletes (an author's, a direct
// conversation's) are written once per process and day; a room's and a
// group's with every write.
func TestListingRemembered(t *testing.T) {
	for _, tt := range []struct {
		f    bucketFamily
		key  string
		want bool
	}{
		{roomBuckets, "lobby", false},
		{roomBuckets, "alice:bob", true},
		{authorBuckets, "alice", true},
		{inboxBuckets, "alice", false},
	} {
		if got := remembered(tt.f, tt.key); got != tt.want {
			t.Errorf("remembered(%s, %q) = %v, want %v", tt.f, tt.key, got, tt.want)
		}
	}
}

// TestJoinLeaveOnce races joins of one user, from two processes, then
// leaves: exactly one join and one leave apply and log, each with one
// system message; the losers' messages are taken back. The condition on
// the participant set is what decides, not the reads before it.
func TestJoinLeaveOnce(t *testing.T) {
	cfg := testConfig(t)
	dbs := []*DB{mustOpen(t, cfg), mustOpen(t, cfg)}
	ctx := t.Context()
	alice, bob := mustUser(t, dbs[0], "alice"), mustUser(t, dbs[0], "bob")
	r := mustRoom(t, dbs[0], "once", store.PublicRoom, alice)
	const racers = 8

	race := func(op func(db *DB) (store.Event, error)) (logged []store.Event, errs []error) {
		var (
			mu sync.Mutex
			wg sync.WaitGroup
		)
		start := make(chan struct{})
		for i := range racers {
			wg.Go(func() {
				<-start
				e, err := op(dbs[i%2])
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
				} else if e.Kind != "" {
					logged = append(logged, e)
				}
			})
		}
		close(start)
		wg.Wait()
		return logged, errs
	}

	joins, errs := race(func(db *DB) (store.Event, error) {
		got, e, err := db.JoinRoom(ctx, r.Name, bob)
		if err == nil && !got.HasParticipant(bob.Login) {
			t.Errorf("JoinRoom returned %+v, without bob", got.Participants)
		}
		return e, err
	})
	if len(errs) != 0 || len(joins) != 1 {
		t.Fatalf("%d racing joins: %d logged, errors %v; want exactly one logged, no error", racers, len(joins), errs)
	}
	if j := joins[0]; j.Kind != store.ParticipantJoined || j.User != bob || j.Message == nil || j.Message.Content != bob.Login+" joined the room" || !j.Message.System || j.Message.ID != j.ID {
		t.Errorf("join event = %+v, want ParticipantJoined by bob with its system message", j)
	}

	leaves, errs := race(func(db *DB) (store.Event, error) { return db.LeaveRoom(ctx, r.Name, bob) })
	if len(leaves) != 1 || len(errs) != racers-1 {
		t.Fatalf("%d racing leaves: %d logged, errors %v; want one logged, the others ErrNotFound", racers, len(leaves), errs)
	}
	for _, err := range errs {
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a racing leave failed with %v, want ErrNotFound", err)
		}
	}

	msgs, err := dbs[1].Messages(ctx, r.Name, store.MessageID{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	var contents []string
	for _, m := range msgs {
		contents = append(contents, m.Content)
	}
	if want := []string{bob.Login + " left the room", bob.Login + " joined the room"}; !slices.Equal(contents, want) {
		t.Errorf("messages = %q, want %q", contents, want)
	}
	evs := allEvents(t, "RoomEvents", 1, func(after store.MessageID, n int) ([]store.Event, error) {
		return dbs[0].RoomEvents(ctx, r.Name, after, n)
	})
	if len(evs) != 2 || evs[0].ID != joins[0].ID || evs[1].ID != leaves[0].ID {
		t.Errorf("log = %v, want the one join and the one leave", kindsOf(evs))
	}
	if u, err := dbs[0].User(ctx, bob.Login); err != nil || slices.Contains(u.ChatRooms, r.Name) {
		t.Errorf("bob's rooms after leaving = %v, %v; want without %q", u.ChatRooms, err, r.Name)
	}
}

// TestParticipantCAS drives the compare-and-set of joins and leaves with
// a stale read: it retries with the fresh set, sees a participant added
// meanwhile, and a room gone.
func TestParticipantCAS(t *testing.T) {
	db := mustOpen(t, testConfig(t))
	ctx := t.Context()
	alice, bob, carol := mustUser(t, db, "alice"), mustUser(t, db, "bob"), mustUser(t, db, "carol")
	r := mustRoom(t, db, "cas", store.PublicRoom, alice)
	stale, err := db.Room(ctx, r.Name)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.JoinRoom(ctx, r.Name, bob); err != nil {
		t.Fatal(err)
	}

	// carol, against a set without bob: retried, applied, bob kept.
	got, outcome, err := db.addParticipant(ctx, stale, carol, nil)
	if err != nil || outcome != changed || !got.HasParticipant(bob.Login) || !got.HasParticipant(carol.Login) {
		t.Errorf("addParticipant(carol) on a stale set = %v, %v, %v; want added, with bob", loginsOfRefs(got.Participants), outcome, err)
	}
	// bob, against a set without bob: not applied, a participant already.
	if got, outcome, err = db.addParticipant(ctx, stale, bob, nil); err != nil || outcome != unchanged || len(got.Participants) != 3 {
		t.Errorf("addParticipant(bob) on a stale set = %v, %v, %v; want unchanged", loginsOfRefs(got.Participants), outcome, err)
	}
	// The check sees the fresh set.
	refuse := errors.New("refused")
	dave := store.UserRef{Login: unique("dave")}
	if _, _, err := db.addParticipant(ctx, stale, dave, func(roomState) error { return refuse }); !errors.Is(err, refuse) {
		t.Errorf("addParticipant with a refusing check = %v, want it refused", err)
	}
	// A leave against a stale set with carol still in it: retried.
	withCarol := stale
	withCarol.Participants = append(slices.Clone(stale.Participants), carol)
	if outcome, err := db.removeParticipant(ctx, withCarol, carol, false); err != nil || outcome != changed {
		t.Errorf("removeParticipant(carol) on a stale set = %v, %v; want removed", outcome, err)
	}
	if outcome, err := db.removeParticipant(ctx, withCarol, carol, false); err != nil || outcome != unchanged {
		t.Errorf("removeParticipant(carol) again = %v, %v; want unchanged", outcome, err)
	}

	if _, _, err := db.DeleteRoom(ctx, r.Name, alice); err != nil {
		t.Fatal(err)
	}
	if _, outcome, err := db.addParticipant(ctx, stale, carol, nil); err != nil || outcome != roomGone {
		t.Errorf("addParticipant on a deleted room = %v, %v; want room gone", outcome, err)
	}
	if outcome, err := db.removeParticipant(ctx, withCarol, carol, false); err != nil || outcome != roomGone {
		t.Errorf("removeParticipant on a deleted room = %v, %v; want room gone", outcome, err)
	}
	// Neither wrote a row: the name is free.
	if n := countRows(t, db, `SELECT count(*) FROM chat_rooms WHERE room_name = ?`, r.Name); n != 0 {
		t.Errorf("chat_rooms rows after joins and leaves of a deleted room = %d, want none", n)
	}
}

func loginsOfRefs(us []store.UserRef) []string {
	var out []string
	for _, u := range us {
		out = append(out, u.Login)
	}
	return out
}

// TestJoinRacingDeleteLeavesNothing races joins and leaves with the delete
// of the room: afterwards nothing of the room is left in its days'
// partitions or the index, and nobody lists it. Only a listing row of
// today may be left, by a join whose pre-written message was taken back
// after the delete (see unwriteMessage).
func TestJoinRacingDeleteLeavesNothing(t *testing.T) {
	const rounds, joiners = 4, 6
	cfg := testConfig(t)
	dbs := []*DB{mustOpen(t, cfg), mustOpen(t, cfg)}
	ctx := t.Context()
	creator := mustUser(t, dbs[0], "creator")
	users := make([]store.UserRef, joiners)
	for i := range users {
		users[i] = mustUser(t, dbs[0], fmt.Sprintf("racer%d", i))
	}
	today := int(store.BucketOf(time.Now()))
	for round := range rounds {
		r := mustRoom(t, dbs[0], "race", store.PublicRoom, creator)
		// Half of them in already, to leave during the delete.
		for _, u := range users[:joiners/2] {
			if _, _, err := dbs[0].JoinRoom(ctx, r.Name, u); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, u := range users {
			wg.Go(func() {
				<-start
				var err error
				if i < joiners/2 {
					_, err = dbs[i%2].LeaveRoom(ctx, r.Name, u)
				} else {
					_, _, err = dbs[i%2].JoinRoom(ctx, r.Name, u)
				}
				if err != nil && !errors.Is(err, store.ErrNotFound) {
					t.Errorf("round %d: %s racing the delete = %v", round, u.Login, err)
				}
			})
		}
		wg.Go(func() {
			<-start
			if _, _, err := dbs[1].DeleteRoom(ctx, r.Name, creator); err != nil {
				t.Errorf("round %d: DeleteRoom = %v", round, err)
			}
		})
		close(start)
		wg.Wait()

		for _, table := range []string{"room_events", "chat_room_messages"} {
			if n := countRows(t, dbs[0], `SELECT count(*) FROM `+table+` WHERE room_name = ? AND time_bucket = ?`, r.Name, today); n != 0 {
				t.Errorf("round %d: %d rows of %s left after the delete, want none", round, n, table)
			}
		}
		if listed, err := dbs[0].listedBuckets(ctx, roomBuckets, r.Name); err != nil || len(listed) > 1 || len(listed) == 1 && int(listed[0]) != today {
			t.Errorf("round %d: listing after the delete = %v, %v; want none, or today's at most", round, listed, err)
		}
		for _, u := range append([]store.UserRef{creator}, users...) {
			iter := dbs[0].query(ctx, `SELECT room_name FROM messages_by_author WHERE author_login = ? AND time_bucket = ?`, u.Login, today).Iter()
			var room string
			for iter.Scan(&room) {
				if room == r.Name {
					t.Errorf("round %d: a message of %s in the deleted room is left in messages_by_author", round, u.Login)
				}
			}
			if err := iter.Close(); err != nil {
				t.Fatal(err)
			}
			if got, err := dbs[0].User(ctx, u.Login); err != nil || slices.Contains(got.ChatRooms, r.Name) {
				t.Errorf("round %d: rooms of %s = %v, %v; want without the deleted room", round, u.Login, got.ChatRooms, err)
			}
		}
		if n := countRows(t, dbs[0], `SELECT count(*) FROM chat_rooms WHERE room_name = ?`, r.Name); n != 0 {
			t.Errorf("round %d: chat_rooms rows after the delete = %d, want none", round, n)
		}
	}
}

// TestFormerMembersForgotten: a member who left a group loses its entry
// when the group is deleted, so a later group of the same name, of which
// they are no member, is not in their inbox with the old group's last
// message.
func TestFormerMembersForgotten(t *testing.T) {
	db := mustOpen(t, testConfig(t))
	ctx := t.Context()
	alice, bob, carol := mustUser(t, db, "alice"), mustUser(t, db, "bob"), mustUser(t, db, "carol")
	g := mustRoom(t, db, "former", store.PrivateGroup, alice)
	r, _, err := db.AddGroupMember(ctx, g.Name, alice, bob, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	secret := store.Message{Room: g.Name, ID: store.NewMessageID(), Author: alice, Content: "the old group's secret"}
	if err := db.PostGroupMessage(ctx, secret, r.Participants); err != nil {
		t.Fatal(err)
	}
	if _, err := db.LeaveGroup(ctx, g.Name, bob, time.Now()); err != nil {
		t.Fatal(err)
	}
	if c := mustConv(t, db, ctx, bob.Login, g.Name); c.LastMessage.ID != secret.ID {
		t.Fatalf("bob's entry after leaving = %+v, want it kept with the last message", c)
	}
	// A hide reaches the entry of a former member too.
	if _, err := db.HideMessage(ctx, secret, alice); err != nil {
		t.Fatal(err)
	}
	if c := mustConv(t, db, ctx, bob.Login, g.Name); !c.LastMessage.Hidden {
		t.Errorf("bob's last message after alice hid it = %+v, want hidden", c.LastMessage)
	}
	if _, _, err := db.DeleteRoom(ctx, g.Name, alice); err != nil {
		t.Fatal(err)
	}
	if c, err := db.Conversation(ctx, bob.Login, g.Name); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("bob's entry of the deleted group = %+v, %v; want ErrNotFound", c, err)
	}
	if err := db.CreateRoom(ctx, store.Room{Name: g.Name, Kind: store.PrivateGroup, Creator: carol, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	inbox, err := db.Inbox(ctx, bob.Login)
	if err != nil || len(inbox) != 0 {
		t.Errorf("bob's inbox with a new group of the name = %+v, %v; want empty", inbox, err)
	}
	// The log of the deleted group went with it; its messages too, so
	// bob's inbox log leaves out its events.
	if evs, err := db.RoomEvents(ctx, g.Name, store.MessageID{}, 10); err != nil || len(evs) != 0 {
		t.Errorf("RoomEvents of the new group = %v, %v; want none of the old", kindsOf(evs), err)
	}
	if evs, err := db.InboxEvents(ctx, bob.Login, store.MessageID{}, 10); err != nil || len(evs) != 0 {
		t.Errorf("bob's inbox log = %v, %v; want nothing of the deleted group", kindsOf(evs), err)
	}
}

// TestLogsSkipGone pages through logs in which the events of a deleted
// group lie between others: pages stay full, and events join their
// messages as they are now, from any day.
func TestLogsSkipGone(t *testing.T) {
	db := mustOpen(t, testConfig(t))
	ctx := t.Context()
	alice, bob := mustUser(t, db, "alice"), mustUser(t, db, "bob")
	dm := store.DirectConversationID(alice.Login, bob.Login)
	g := mustRoom(t, db, "doomed", store.PrivateGroup, alice)
	r, _, err := db.AddGroupMember(ctx, g.Name, alice, bob, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 5 {
		m := store.Message{Room: dm, ID: store.NewMessageID(), Author: alice, Content: fmt.Sprint("dm ", i)}
		if err := db.SendDirect(ctx, m, bob); err != nil {
			t.Fatal(err)
		}
		want = append(want, string(store.DirectMessage)+":"+m.Content)
		for j := range 3 {
			gm := store.Message{Room: g.Name, ID: store.NewMessageID(), Author: alice, Content: fmt.Sprint("group ", i, j)}
			if err := db.PostGroupMessage(ctx, gm, r.Participants); err != nil {
				t.Fatal(err)
			}
		}
		if i == 2 {
			e, err := db.MarkRead(ctx, bob.Login, dm, m.ID)
			if err != nil || e.Kind != store.UnreadChanged || e.Room != dm || e.Message != nil {
				t.Fatalf("MarkRead = %+v, %v", e, err)
			}
			want = append(want, string(store.UnreadChanged))
		}
	}
	before := allEvents(t, "InboxEvents", 100, func(after store.MessageID, n int) ([]store.Event, error) {
		return db.InboxEvents(ctx, bob.Login, after, n)
	})
	if len(before) != 1+5+15+1 { // added, direct messages, group messages, mark-read
		t.Errorf("bob's inbox log before the delete = %v, want %d events", kindsOf(before), 22)
	}
	if _, _, err := db.DeleteRoom(ctx, g.Name, alice); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 2, 4} {
		got := allEvents(t, "InboxEvents", n, func(after store.MessageID, n int) ([]store.Event, error) {
			return db.InboxEvents(ctx, bob.Login, after, n)
		})
		if !slices.Equal(kindsOf(got), want) {
			t.Errorf("bob's inbox log in pages of %d = %v, want %v", n, kindsOf(got), want)
		}
	}

	// A room's log: a hide of a message two days old joins the message
	// from its own day, hidden, and so does the replayed post.
	room := mustRoom(t, db, "hides", store.PublicRoom, alice)
	old := store.Message{Room: room.Name, ID: store.MessageIDAt(time.Now().Add(-49 * time.Hour)), Author: alice, Content: "old"}
	if err := db.PostMessage(ctx, old); err != nil {
		t.Fatal(err)
	}
	fresh := mustPost(t, db, room.Name, alice, "fresh")
	hid, err := db.HideMessage(ctx, old, bob)
	if err != nil || hid.Kind != store.MessageHidden || hid.User != bob || hid.Message == nil || !hid.Message.Hidden || hid.ID.Compare(fresh.ID) <= 0 {
		t.Fatalf("HideMessage = %+v, %v; want a fresh MessageHidden event by bob", hid, err)
	}
	evs := allEvents(t, "RoomEvents", 1, func(after store.MessageID, n int) ([]store.Event, error) {
		return db.RoomEvents(ctx, room.Name, after, n)
	})
	if got, want := kindsOf(evs), []string{"MESSAGE_POSTED:old", "MESSAGE_POSTED:fresh", "MESSAGE_HIDDEN:old"}; !slices.Equal(got, want) {
		t.Fatalf("room log = %v, want %v", got, want)
	}
	if !evs[0].Message.Hidden || evs[1].Message.Hidden || !evs[2].Message.Hidden || evs[2].User != bob {
		t.Errorf("room log = %+v; want the old message hidden in both its events", evs)
	}
	// After a cursor in the old day: the rest only.
	if got, err := db.RoomEvents(ctx, room.Name, old.ID, 10); err != nil || len(got) != 2 || got[0].ID != fresh.ID {
		t.Errorf("RoomEvents after the old post = %v, %v; want the fresh post and the hide", kindsOf(got), err)
	}
	// A direct message's hide logs nothing in a room.
	dmMsg := store.Message{Room: dm, ID: store.NewMessageID(), Author: bob, Content: "x"}
	if err := db.SendDirect(ctx, dmMsg, alice); err != nil {
		t.Fatal(err)
	}
	if e, err := db.HideMessage(ctx, dmMsg, bob); err != nil || e.Kind != "" {
		t.Errorf("HideMessage of a direct message = %+v, %v; want the zero Event", e, err)
	}
	if evs, err := db.RoomEvents(ctx, dm, store.MessageID{}, 10); err != nil || len(evs) != 0 {
		t.Errorf("RoomEvents of a direct conversation = %v, %v; want none", kindsOf(evs), err)
	}
}

// TestGroupAddLeaveOnce races adds of one user to a group by two members,
// then leaves: one add and one leave apply and log, the losers' system
// messages and inbox events are taken back, and the user's one window is
// where the winners' messages say.
func TestGroupAddLeaveOnce(t *testing.T) {
	cfg := testConfig(t)
	dbs := []*DB{mustOpen(t, cfg), mustOpen(t, cfg)}
	ctx := t.Context()
	alice, bob, carol := mustUser(t, dbs[0], "alice"), mustUser(t, dbs[0], "bob"), mustUser(t, dbs[0], "carol")
	g := mustRoom(t, dbs[0], "gonce", store.PrivateGroup, alice)
	if _, _, err := dbs[0].AddGroupMember(ctx, g.Name, alice, bob, time.Now()); err != nil {
		t.Fatal(err)
	}
	const racers = 6
	var (
		mu             sync.Mutex
		adds, leaves   []store.Event
		addErr, leaveE []error
	)
	run := func(op func(i int) (store.Event, error), logged *[]store.Event, errs *[]error) {
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range racers {
			wg.Go(func() {
				<-start
				e, err := op(i)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					*errs = append(*errs, err)
				} else if e.Kind != "" {
					*logged = append(*logged, e)
				}
			})
		}
		close(start)
		wg.Wait()
	}
	base := time.Now()
	run(func(i int) (store.Event, error) {
		by := []store.UserRef{alice, bob}[i%2]
		_, e, err := dbs[i%2].AddGroupMember(ctx, g.Name, by, carol, base.Add(time.Duration(i)*time.Millisecond))
		return e, err
	}, &adds, &addErr)
	if len(addErr) != 0 || len(adds) != 1 {
		t.Fatalf("%d racing adds: %d logged, errors %v; want one logged", racers, len(adds), addErr)
	}
	run(func(i int) (store.Event, error) {
		return dbs[i%2].LeaveGroup(ctx, g.Name, carol, time.Now().Add(time.Second))
	}, &leaves, &leaveE)
	if len(leaves) != 1 || len(leaveE) != racers-1 {
		t.Fatalf("%d racing leaves: %d logged, errors %v; want one logged", racers, len(leaves), leaveE)
	}
	evs, err := dbs[0].RoomEvents(ctx, g.Name, store.MessageID{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	var carols []store.Event
	for _, e := range evs {
		if e.User.Login == carol.Login {
			carols = append(carols, e)
		}
	}
	if len(carols) != 2 || carols[0].ID != adds[0].ID || carols[1].ID != leaves[0].ID {
		t.Errorf("carol's events in the group log = %v, want the one add and the one leave", kindsOf(carols))
	}
	inbox, err := dbs[0].InboxEvents(ctx, carol.Login, store.MessageID{}, 100)
	if err != nil || len(inbox) != 1 || inbox[0].Kind != store.AddedToGroup || inbox[0].ID != adds[0].ID {
		t.Errorf("carol's inbox log = %v, %v; want the one AddedToGroup", kindsOf(inbox), err)
	}
	c := mustConv(t, dbs[0], ctx, carol.Login, g.Name)
	if len(c.Windows) != 1 || c.Windows[0].To.IsZero() {
		t.Errorf("carol's windows = %v, want one, closed", c.Windows)
	}
}
