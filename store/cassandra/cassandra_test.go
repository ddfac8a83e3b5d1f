package cassandra

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/killrchat/chatql/internal/testenv"
	"github.com/killrchat/chatql/store"
	"github.com/killrchat/chatql/store/storetest"
)

// testKeyspace is dropped and created afresh by every run of the tests.
// CHAT_TEST_KEYSPACE_TAG, when set, is appended, so that runs from several
// checkouts can share one node without dropping each other's keyspace.
var testKeyspace = "chat_test" + os.Getenv("CHAT_TEST_KEYSPACE_TAG")

// testHosts returns the nodes of CHAT_CASSANDRA_HOSTS, or nil.
func testHosts() []string {
	var hosts []string
	for _, h := range strings.Split(os.Getenv("CHAT_CASSANDRA_HOSTS"), ",") {
		if h = strings.TrimSpace(h); h != "" {
			hosts = append(hosts, h)
		}
	}
	return hosts
}

// TestMain drops the test keyspace, so every run starts from a clean slate
// and applies the schema from scratch.
func TestMain(m *testing.M) {
	if hosts := testHosts(); len(hosts) > 0 {
		if err := dropTestKeyspace(hosts); err != nil {
			fmt.Fprintf(os.Stderr, "cassandra tests: drop keyspace %s: %v\n", testKeyspace, err)
			os.Exit(1)
		}
	}
	os.Exit(m.Run())
}

func dropTestKeyspace(hosts []string) error {
	session, err := gocql.NewCluster(hosts...).CreateSession()
	if err != nil {
		return err
	}
	defer session.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return execDDL(ctx, session, "DROP KEYSPACE IF EXISTS "+testKeyspace)
}

// testConfig returns the configuration of the test keyspace. It skips the
// test when no node is configured, unless CHAT_REQUIRE_BACKENDS=1 (CI).
func testConfig(t *testing.T) Config {
	t.Helper()
	hosts := testHosts()
	if len(hosts) == 0 {
		testenv.Missing(t, "CHAT_CASSANDRA_HOSTS is not set", "the Cassandra backend tests")
	}
	return Config{Hosts: hosts, Keyspace: testKeyspace, Replication: "SimpleStrategy:1"}
}

// mustOpen opens the test keyspace and closes it when the test ends.
func mustOpen(t *testing.T, cfg Config) *DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	db, err := Open(ctx, cfg)
	if err != nil {
		t.Fatalf("Open(%s) = %v", cfg.Keyspace, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// unique returns prefix with a random suffix: names stay fresh when tests
// run again (-count) against the same keyspace.
func unique(prefix string) string {
	return fmt.Sprintf("%s-%08x", prefix, rand.Uint32())
}

func TestConformance(t *testing.T) {
	db := mustOpen(t, testConfig(t))
	storetest.RunTests(t, db)
}

func TestConversationConformance(t *testing.T) {
	db := mustOpen(t, testConfig(t))
	storetest.RunConversationTests(t, db)
}

func TestSessionConformance(t *testing.T) {
	db := mustOpen(t, testConfig(t))
	storetest.RunSessionTests(t, db)
}

// TestMigrate applies the schema again, by a second Open and directly:
// nothing changes, and every version stays recorded once, with its first
// time.
func TestMigrate(t *testing.T) {
	cfg := testConfig(t)
	db := mustOpen(t, cfg)
	ctx := t.Context()
	type row struct {
		version int
		applied time.Time
	}
	versions := func() []row {
		t.Helper()
		iter := db.query(ctx, `SELECT version, applied_at FROM schema_migrations`).Iter()
		var rows []row
		var r row
		for iter.Scan(&r.version, &r.applied) {
			rows = append(rows, r)
		}
		if err := iter.Close(); err != nil {
			t.Fatalf("read schema_migrations: %v", err)
		}
		// Rows come in token order.
		slices.SortFunc(rows, func(a, b row) int { return a.version - b.version })
		return rows
	}
	first := versions()
	if len(first) != len(migrations) || first[0].version != 1 || first[len(first)-1].version != migrations[len(migrations)-1].version {
		t.Fatalf("schema_migrations = %v, want one row per migration, 1 to %d", first, len(migrations))
	}

	mustOpen(t, cfg)
	if err := migrate(ctx, db.session, cfg.Keyspace); err != nil {
		t.Fatalf("migrate again = %v, want nil", err)
	}
	if got := versions(); !slices.Equal(got, first) {
		t.Errorf("schema_migrations after migrating again = %v, want %v", got, first)
	}
}

// TestPostListsItsDay checks that an acknowledged post has its day listed,
// for the room and the author, as soon as it is acknowledged: the posting
// process is abandoned without Close, as if it had crashed, and a fresh one
// reads the listing and the history. A post that fails is not remembered,
// so the next post of its day lists it.
func TestPostListsItsDay(t *testing.T) {
	cfg := testConfig(t)
	ctx := t.Context()
	author := store.UserRef{Login: unique("lister"), Firstname: "L", Lastname: "D"}
	room := unique("listed")
	m := store.Message{Room: room, ID: store.NewMessageID(), Author: author, Content: "before the crash"}
	b := store.BucketOf(m.ID.Time())

	crashed, err := Open(ctx, cfg)
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	t.Cleanup(func() { crashed.session.Close() }) // only after the checks
	if err := crashed.PostMessage(ctx, m); err != nil {
		t.Fatalf("PostMessage = %v", err)
	}

	fresh := mustOpen(t, cfg)
	for _, f := range []bucketFamily{roomBuckets, authorBuckets} {
		key := map[bucketFamily]string{roomBuckets: room, authorBuckets: author.Login}[f]
		if got, err := fresh.listedBuckets(ctx, f, key); err != nil || !slices.Equal(got, []store.Bucket{b}) {
			t.Errorf("%s of %q = %v, %v; want [%d] right after the acknowledgement", f, key, got, err, b)
		}
	}
	if got, err := fresh.Messages(ctx, room, store.MessageID{}, 10); err != nil || len(got) != 1 || got[0].ID != m.ID {
		t.Errorf("Messages(%q) from a fresh process = %v, %v; want the acknowledged message", room, got, err)
	}

	failed, cancel := context.WithCancel(ctx)
	cancel()
	other := store.Message{Room: unique("failed"), ID: store.NewMessageID(), Author: author, Content: "never acknowledged"}
	if err := fresh.PostMessage(failed, other); err == nil {
		t.Fatal("PostMessage with a cancelled context = nil, want an error")
	}
	if l := (listing{roomBuckets, other.Room, store.BucketOf(other.ID.Time())}); fresh.listed.has(l, time.Now()) {
		t.Error("the day of a failed post is remembered as listed")
	}
}

// TestDeleteRoomCleanUp deletes a room its creator left, so the condition
// participants = {} must match an empty (null) set, and checks that the
// whole listing goes with it.
func TestDeleteRoomCleanUp(t *testing.T) {
	db := mustOpen(t, testConfig(t))
	ctx := t.Context()
	creator := store.Account{User: store.User{UserRef: store.UserRef{Login: unique("lonely"), Firstname: "L", Lastname: "O"}}, PassHash: []byte("h")}
	if err := db.CreateUser(ctx, creator); err != nil {
		t.Fatal(err)
	}
	room := store.Room{Name: unique("empty"), Creator: creator.UserRef, CreatedAt: time.Now()}
	if err := db.CreateRoom(ctx, room); err != nil {
		t.Fatal(err)
	}
	old := store.Message{Room: room.Name, ID: store.MessageIDAt(time.Now().Add(-72 * time.Hour)), Author: creator.UserRef, Content: "old"}
	if err := db.PostMessage(ctx, old); err != nil {
		t.Fatal(err)
	}
	if _, err := db.LeaveRoom(ctx, room.Name, creator.UserRef); err != nil {
		t.Fatal(err)
	}
	got, _, err := db.DeleteRoom(ctx, room.Name, creator.UserRef)
	if err != nil {
		t.Fatalf("DeleteRoom of a room without participants = %v, want nil", err)
	}
	if len(got.Participants) != 0 {
		t.Errorf("DeleteRoom returned participants %v, want none", got.Participants)
	}
	if _, err := db.Room(ctx, room.Name); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Room after DeleteRoom = %v, want ErrNotFound", err)
	}
	if listed, err := db.listedBuckets(ctx, roomBuckets, room.Name); err != nil || len(listed) != 0 {
		t.Errorf("buckets listed after DeleteRoom = %v, %v; want none", listed, err)
	}
}

// TestSettleJoin settles joins whose outcome was left unknown: a join that
// did not apply, and one to a room deleted meanwhile, lose their listing
// and message; one that applied keeps them; and a later join of the same
// user keeps its listing, since the take-back is at the first join's
// timestamp.
func TestSettleJoin(t *testing.T) {
	db := mustOpen(t, testConfig(t))
	ctx := t.Context()
	account := func(prefix string) store.UserRef {
		a := store.Account{User: store.User{UserRef: store.UserRef{Login: unique(prefix), Firstname: "S", Lastname: "J"}}, PassHash: []byte("h")}
		if err := db.CreateUser(ctx, a); err != nil {
			t.Fatal(err)
		}
		return a.UserRef
	}
	creator, joiner := account("creator"), account("joiner")
	room := store.Room{Name: unique("settled"), Creator: creator, CreatedAt: time.Now()}
	if err := db.CreateRoom(ctx, room); err != nil {
		t.Fatal(err)
	}
	rooms := func(u store.UserRef) []string {
		t.Helper()
		got, err := db.User(ctx, u.Login)
		if err != nil {
			t.Fatal(err)
		}
		return got.ChatRooms
	}
	// A join that wrote its listing and message, but whose compare-and-set
	// did not apply.
	unknownJoin := func(u store.UserRef) (int64, store.Message) {
		t.Helper()
		at := time.Now().UnixMicro()
		if err := db.query(ctx, addUserRoomAt, at, []string{room.Name}, u.Login).Exec(); err != nil {
			t.Fatal(err)
		}
		m := systemMessage(room.Name, store.NewMessageID(), u, u.Login+" joined the room")
		if err := db.writeMessage(ctx, m, store.ParticipantJoined, nil); err != nil {
			t.Fatal(err)
		}
		return at, m
	}

	at, m := unknownJoin(joiner)
	if err := db.trySettleJoin(room.Name, joiner, at, m); err != nil {
		t.Fatal(err)
	}
	if got := rooms(joiner); slices.Contains(got, room.Name) {
		t.Errorf("a join that did not apply left %q in the user's rooms %v", room.Name, got)
	}
	if msgs, err := db.Messages(ctx, room.Name, store.MessageID{}, 10); err != nil || slices.ContainsFunc(msgs, func(x store.Message) bool { return x.ID == m.ID }) {
		t.Errorf("a join that did not apply left its message: %v, %v", msgs, err)
	}

	// A later join of the same user, its compare-and-set still to come,
	// keeps its listing: the take-back of the earlier one, even when it
	// comes last, removes the earlier write only.
	early, _ := unknownJoin(joiner)
	time.Sleep(time.Millisecond) // the later write's timestamp is later
	later, _ := unknownJoin(joiner)
	if err := db.trySettleJoin(room.Name, joiner, early, store.Message{}); err != nil {
		t.Fatal(err)
	}
	if got := rooms(joiner); !slices.Contains(got, room.Name) {
		t.Errorf("settling an earlier join took the later join's listing: rooms %v", got)
	}
	if err := db.trySettleJoin(room.Name, joiner, later, store.Message{}); err != nil {
		t.Fatal(err)
	}
	if got := rooms(joiner); slices.Contains(got, room.Name) {
		t.Errorf("settling the later join left its listing: rooms %v", got)
	}

	// A join that applied stands.
	applied := account("applied")
	if _, _, err := db.JoinRoom(ctx, room.Name, applied); err != nil {
		t.Fatal(err)
	}
	if err := db.trySettleJoin(room.Name, applied, time.Now().UnixMicro(), store.Message{}); err != nil {
		t.Fatal(err)
	}
	if got := rooms(applied); !slices.Contains(got, room.Name) {
		t.Errorf("settling a join that applied took its listing: rooms %v", got)
	}

	// A join to a room deleted meanwhile loses its listing.
	late := account("late")
	at, m = unknownJoin(late)
	if _, _, err := db.DeleteRoom(ctx, room.Name, creator); err != nil {
		t.Fatal(err)
	}
	if got := rooms(late); !slices.Contains(got, room.Name) {
		t.Fatalf("the delete's clean-up removed the listing of a non-participant: rooms %v", got)
	}
	if err := db.trySettleJoin(room.Name, late, at, m); err != nil {
		t.Fatal(err)
	}
	if got := rooms(late); slices.Contains(got, room.Name) {
		t.Errorf("a join to a deleted room left it in the user's rooms %v", got)
	}
}

func TestSearchConformance(t *testing.T) {
	db := mustOpen(t, testConfig(t))
	storetest.RunSearchTests(t, db)
}
