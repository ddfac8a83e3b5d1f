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

// TestBucketFlush checks that a post's bucket reaches messages_bucket: by
// the flusher, by Close, and at once for a day other than today.
func TestBucketFlush(t *testing.T) {
	cfg := testConfig(t)
	ctx := t.Context()
	author := store.UserRef{Login: "flusher", Firstname: "F", Lastname: "L"}
	post := func(db *DB, room string, id store.MessageID) store.Bucket {
		t.Helper()
		if err := db.PostMessage(ctx, store.Message{Room: room, ID: id, Author: author, Content: "hi"}); err != nil {
			t.Fatalf("PostMessage(%q) = %v", room, err)
		}
		return store.BucketOf(id.Time())
	}
	listed := func(db *DB, room string) []store.Bucket {
		t.Helper()
		got, err := db.listedBuckets(ctx, roomBuckets, room)
		if err != nil {
			t.Fatalf("listedBuckets(%q) = %v", room, err)
		}
		return got
	}

	t.Run("Flusher", func(t *testing.T) {
		cfg := cfg
		cfg.BucketFlushInterval = 20 * time.Millisecond
		db := mustOpen(t, cfg)
		tickRoom := unique("flush-tick")
		b := post(db, tickRoom, store.NewMessageID())
		for deadline := time.Now().Add(10 * time.Second); !slices.Equal(listed(db, tickRoom), []store.Bucket{b}); {
			if time.Now().After(deadline) {
				t.Fatalf("bucket %d of flush-tick not listed after 10s; listed: %v", b, listed(db, tickRoom))
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	t.Run("Close", func(t *testing.T) {
		cfg := cfg
		cfg.BucketFlushInterval = 15 * time.Second // no tick during the test
		db := mustOpen(t, cfg)
		closeRoom := unique("flush-close")
		b := post(db, closeRoom, store.NewMessageID())
		post(db, closeRoom, store.NewMessageID()) // same pair: queued once
		if got := listed(db, closeRoom); len(got) != 0 {
			t.Fatalf("bucket listed before any flush: %v; want the post to add no write of its own", got)
		}
		if err := db.Close(); err != nil {
			t.Fatalf("Close() = %v", err)
		}
		reader := mustOpen(t, cfg)
		if got := listed(reader, closeRoom); !slices.Equal(got, []store.Bucket{b}) {
			t.Errorf("buckets listed after Close = %v, want [%d]", got, b)
		}
	})
	t.Run("OldDay", func(t *testing.T) {
		cfg := cfg
		cfg.BucketFlushInterval = 15 * time.Second
		db := mustOpen(t, cfg)
		oldRoom := unique("flush-old")
		b := post(db, oldRoom, store.MessageIDAt(time.Now().Add(-72*time.Hour)))
		if got := listed(db, oldRoom); !slices.Equal(got, []store.Bucket{b}) {
			t.Errorf("buckets listed right after an old post = %v, want [%d]", got, b)
		}
	})
}

// TestDeleteRoomCleanUp deletes a room its creator left, so the condition
// participants = {} must match an empty (null) set, and checks that the
// listing of its old buckets goes with it.
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
	if err := db.LeaveRoom(ctx, room.Name, creator.UserRef); err != nil {
		t.Fatal(err)
	}
	got, err := db.DeleteRoom(ctx, room.Name, creator.Login)
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
		t.Errorf("buckets listed after DeleteRoom = %v, %v; want none older than yesterday", listed, err)
	}
}
