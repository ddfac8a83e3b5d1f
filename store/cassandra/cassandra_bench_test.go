package cassandra

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
	"github.com/killrchat/chatql/store/storetest"
)

// benchKeyspace is the keyspace of the benchmarks, apart from the tests'
// (which TestMain drops at every run).
const benchKeyspace = "chat_bench"

// benchDB opens the benchmark keyspace on the nodes of
// CHAT_BENCH_CASSANDRA_HOSTS, or of CHAT_CASSANDRA_HOSTS, and skips without
// either. `make bench` sets the first, so that the test binary's TestMain,
// which drops the test keyspace when CHAT_CASSANDRA_HOSTS is set, leaves
// the keyspace of concurrently running tests alone.
func benchDB(b *testing.B) *DB { return benchDBIn(b, benchKeyspace) }

// benchDBIn is benchDB in keyspace.
func benchDBIn(b *testing.B, keyspace string) *DB {
	b.Helper()
	hosts := os.Getenv("CHAT_BENCH_CASSANDRA_HOSTS")
	if hosts == "" {
		hosts = os.Getenv("CHAT_CASSANDRA_HOSTS")
	}
	var list []string
	for _, h := range strings.Split(hosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			list = append(list, h)
		}
	}
	if len(list) == 0 {
		b.Skip("neither CHAT_BENCH_CASSANDRA_HOSTS nor CHAT_CASSANDRA_HOSTS is set: skipping the Cassandra benchmarks")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	db, err := Open(ctx, Config{Hosts: list, Keyspace: keyspace, Replication: "SimpleStrategy:1"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}

// BenchmarkCassandraPostMessage is one message write (the bucket listing is
// buffered) to a public room of participants=0 (a room the store does not
// know: no inbox order to move) or of 10 (as chatload's bare room: the
// room moves in each one's inbox order, see roomActivityWrites), from
// parallel posters: at -cpu 2 that is 2 in flight per GOMAXPROCS unit, as
// b.RunParallel runs; SetParallelism raises it to the concurrency of a
// busy server.
func BenchmarkCassandraPostMessage(b *testing.B) {
	db := benchDB(b)
	ctx := context.Background()
	author := store.UserRef{Login: "bench-author", Firstname: "Bench", Lastname: "Author"}
	for _, participants := range []int{0, 10} {
		room := fmt.Sprintf("bench-%08x", rand.Uint32())
		if participants > 0 {
			benchPublicRoom(b, db, room, author, participants)
		}
		for _, par := range []int{1, 8} {
			b.Run(fmt.Sprintf("participants=%d/parallelism=%d", participants, par), func(b *testing.B) {
				b.SetParallelism(par)
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						m := store.Message{Room: room, ID: store.NewMessageID(), Author: author, Content: "The quick brown fox jumps over the lazy dog."}
						if err := db.PostMessage(ctx, m); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
	}
}

// benchPublicRoom creates the public room, by creator, with n participants
// in all.
func benchPublicRoom(b *testing.B, db *DB, room string, creator store.UserRef, n int) {
	b.Helper()
	ctx := context.Background()
	users := []store.UserRef{creator}
	for i := 1; i < n; i++ {
		users = append(users, store.UserRef{Login: fmt.Sprintf("bench-user-%03d", i), Firstname: "Bench", Lastname: fmt.Sprint("User ", i)})
	}
	for _, u := range users {
		if err := db.CreateUser(ctx, store.Account{User: store.User{UserRef: u}, PassHash: []byte("x")}); err != nil && !errors.Is(err, store.ErrConflict) {
			b.Fatal(err)
		}
	}
	if err := db.CreateRoom(ctx, store.Room{Name: room, Creator: creator, CreatedAt: time.Now(), Participants: []store.UserRef{creator}}); err != nil {
		b.Fatal(err)
	}
	for _, u := range users[1:] {
		if _, _, err := db.JoinRoom(ctx, room, u); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCassandraMessagesPage reads the newest page of 50 of a room.
func BenchmarkCassandraMessagesPage(b *testing.B) {
	db := benchDB(b)
	ctx := context.Background()
	room := fmt.Sprintf("bench-%08x", rand.Uint32())
	author := store.UserRef{Login: "bench-author", Firstname: "Bench", Lastname: "Author"}
	for i := range 200 {
		m := store.Message{Room: room, ID: store.NewMessageID(), Author: author, Content: fmt.Sprint("message ", i)}
		if err := db.PostMessage(ctx, m); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		page, err := db.Messages(ctx, room, store.MessageID{}, 50)
		if err != nil || len(page) != 50 {
			b.Fatalf("Messages = %d messages, %v", len(page), err)
		}
	}
}

// benchCassandraRoom creates a room of n participants, the creator and
// n-1 users added in one join, and returns it with its participants.
func benchCassandraRoom(b *testing.B, db *DB, n int) store.Room {
	b.Helper()
	ctx := context.Background()
	creator := store.UserRef{Login: "bench-creator", Firstname: "Bench", Lastname: "Creator"}
	room := store.Room{Name: fmt.Sprintf("bench-%08x", rand.Uint32()), Creator: creator, CreatedAt: time.Now()}
	if err := db.CreateRoom(ctx, room); err != nil {
		b.Fatal(err)
	}
	room.Participants = []store.UserRef{creator}
	for i := 1; i < n; i++ {
		room.Participants = append(room.Participants, store.UserRef{Login: fmt.Sprintf("bench-user-%04d", i), Firstname: "Bench", Lastname: fmt.Sprintf("User %d", i)})
	}
	if n > 1 {
		q := db.query(ctx, `UPDATE chat_rooms SET participants = participants + ? WHERE room_name = ? IF EXISTS`, toUDTs(room.Participants[1:]), room.Name)
		if applied, err := execCAS(q, nil); err != nil || !applied {
			b.Fatalf("adding %d participants: applied %v, %v", n-1, applied, err)
		}
	}
	return room
}

// BenchmarkCassandraRoomRead is the participant check before Membership:
// the room's row with its whole participant set, decoded.
func BenchmarkCassandraRoomRead(b *testing.B) {
	db := benchDB(b)
	ctx := context.Background()
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("participants=%d", n), func(b *testing.B) {
			room := benchCassandraRoom(b, db, n)
			b.ReportAllocs()
			for b.Loop() {
				r, err := db.Room(ctx, room.Name)
				if err != nil || len(r.Participants) != n {
					b.Fatalf("Room = %d participants, %v", len(r.Participants), err)
				}
			}
		})
	}
}

// BenchmarkCassandraMembership is the participant check since Membership:
// the room's row with only the slice of the participants set of one login.
func BenchmarkCassandraMembership(b *testing.B) {
	db := benchDB(b)
	ctx := context.Background()
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("participants=%d", n), func(b *testing.B) {
			room := benchCassandraRoom(b, db, n)
			login := room.Participants[n/2].Login
			b.ReportAllocs()
			for b.Loop() {
				m, err := db.Membership(ctx, room.Name, login)
				if err != nil || !m.Participant {
					b.Fatalf("Membership(%q) = %+v, %v", login, m, err)
				}
			}
		})
	}
}

// BenchmarkCassandraPostPath is the store side of a post to a public room
// as the resolver makes it, check then write, one post at a time, with
// either check: check=room reads the whole room (the resolver before
// Membership), check=membership asks Membership.
func BenchmarkCassandraPostPath(b *testing.B) {
	db := benchDB(b)
	ctx := context.Background()
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("participants=%d", n), func(b *testing.B) {
			room := benchCassandraRoom(b, db, n)
			author := room.Creator
			checks := []struct {
				name  string
				check func() error
			}{
				{"room", func() error {
					r, err := db.Room(ctx, room.Name)
					if err == nil && !r.HasParticipant(author.Login) {
						err = fmt.Errorf("%q is no participant", author.Login)
					}
					return err
				}},
				{"membership", func() error {
					m, err := db.Membership(ctx, room.Name, author.Login)
					if err == nil && !m.Participant {
						err = fmt.Errorf("%q is no participant", author.Login)
					}
					return err
				}},
			}
			for _, c := range checks {
				b.Run("check="+c.name, func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						if err := c.check(); err != nil {
							b.Fatal(err)
						}
						m := store.Message{Room: room.Name, ID: store.NewMessageID(), Author: author, Content: "The quick brown fox jumps over the lazy dog."}
						if err := db.PostMessage(ctx, m); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}

// BenchmarkCassandraInbox reads an inbox of 20 conversations
// (storetest.BenchmarkInbox).
func BenchmarkCassandraInbox(b *testing.B) {
	storetest.BenchmarkInbox(b, benchDB(b))
}

// BenchmarkCassandraSearch: indexing and searching on the Cassandra store
// (storetest.BenchmarkSearch), 2000 messages in 20 rooms.
func BenchmarkCassandraSearch(b *testing.B) {
	storetest.BenchmarkSearch(b, benchDB(b), 20, 2000)
}

var searchScale = flag.Int("search-scale", 0, "messages BenchmarkCassandraSearchAtScale loads (0: it is skipped)")

// BenchmarkCassandraSearchAtScale is storetest.RunSearchScale on Cassandra
// (BENCHMARKS.md), in its own keyspace (chat_bench_search, then
// CHAT_TEST_KEYSPACE_TAG), run only when -search-scale gives its size:
//
//	CHAT_BENCH_CASSANDRA_HOSTS=127.0.0.1 go test -run '^$' -bench BenchmarkCassandraSearchAtScale -benchtime 1x -timeout 3h ./store/cassandra/ -args -search-scale 100000
//
// The terms are written with the message, so there is no index to turn
// off: no on/off comparison. The sizes are those of the keyspace's SSTables
// and SAI index files (system_views), without what the memtables hold.
func BenchmarkCassandraSearchAtScale(b *testing.B) {
	if *searchScale <= 0 {
		b.Skip("-search-scale is not set")
	}
	keyspace := "chat_bench_search" + os.Getenv("CHAT_TEST_KEYSPACE_TAG")
	db := benchDBIn(b, keyspace)
	storetest.RunSearchScale(b, db, storetest.SearchScale{
		Messages: *searchScale, Rooms: 100, Searched: 20, Posters: 32, Span: 365 * 24 * time.Hour,
		Searches: 200,
		Sizes:    func() (map[string]int64, error) { return db.diskSizes(keyspace) },
	})
}

// diskSizes are the sizes on disk of keyspace's tables and of its SAI
// indexes, in bytes, from the node's virtual tables.
func (db *DB) diskSizes(keyspace string) (map[string]int64, error) {
	sizes := map[string]int64{}
	var table string
	var mib int64
	it := db.session.Query(`SELECT table_name, mebibytes FROM system_views.disk_usage WHERE keyspace_name = ?`, keyspace).Iter()
	for it.Scan(&table, &mib) {
		sizes["tables"] += mib << 20
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("system_views.disk_usage: %w", err)
	}
	var index string
	var perColumn int64
	it = db.session.Query(`SELECT index_name, per_column_disk_size FROM system_views.sai_sstable_indexes WHERE keyspace_name = ?`, keyspace).Iter()
	for it.Scan(&index, &perColumn) {
		sizes["sai-"+index] += perColumn
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("system_views.sai_sstable_indexes: %w", err)
	}
	return sizes, nil
}
