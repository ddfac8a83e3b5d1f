package cassandra

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

// benchKeyspace is the keyspace of the benchmarks, apart from the tests'
// (which TestMain drops at every run).
const benchKeyspace = "chat_bench"

// benchDB opens the benchmark keyspace on the nodes of
// CHAT_BENCH_CASSANDRA_HOSTS, or of CHAT_CASSANDRA_HOSTS, and skips without
// either. `make bench` sets the first, so that the test binary's TestMain,
// which drops the test keyspace when CHAT_CASSANDRA_HOSTS is set, leaves
// the keyspace of concurrently running tests alone.
func benchDB(b *testing.B) *DB {
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
	db, err := Open(ctx, Config{Hosts: list, Keyspace: benchKeyspace, Replication: "SimpleStrategy:1"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}

// BenchmarkCassandraPostMessage is one message write (the bucket listing is
// buffered), from parallel posters: at -cpu 2 that is 2 in flight per
// GOMAXPROCS unit, as b.RunParallel runs; SetParallelism raises it to the
// concurrency of a busy server.
func BenchmarkCassandraPostMessage(b *testing.B) {
	db := benchDB(b)
	ctx := context.Background()
	room := fmt.Sprintf("bench-%08x", rand.Uint32())
	author := store.UserRef{Login: "bench-author", Firstname: "Bench", Lastname: "Author"}
	for _, par := range []int{1, 8} {
		b.Run(fmt.Sprintf("parallelism=%d", par), func(b *testing.B) {
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
