package embedded

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
	"github.com/killrchat/chatql/store/storetest"
)

var searchBenchMessages = flag.Int("search-messages", 5000, "messages BenchmarkSearch indexes before it searches")

// BenchmarkSearch: indexing and searching on the embedded store
// (storetest.BenchmarkSearch), with the store's size on disk, index
// included.
func BenchmarkSearch(b *testing.B) {
	dir := b.TempDir()
	db := open(b, filepath.Join(dir, "store"))
	defer db.Close()
	storetest.BenchmarkSearch(b, db, 20, *searchBenchMessages)
	b.ReportMetric(float64(dirSize(b, filepath.Join(dir, "store")))/float64(*searchBenchMessages), "store-B/msg")
}

// BenchmarkPostSearchOnOff posts with the search index on and off, 8
// posters at once: what indexing costs a post.
func BenchmarkPostSearchOnOff(b *testing.B) {
	for _, on := range []bool{true, false} {
		b.Run(fmt.Sprintf("search=%v", on), func(b *testing.B) {
			db := open(b, b.TempDir())
			defer db.Close()
			db.searchOff = !on
			author := store.UserRef{Login: "poster"}
			ctx := context.Background()
			b.SetParallelism(2) // 2 × GOMAXPROCS posters
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					m := store.Message{Room: "lobby", ID: store.NewMessageID(), Author: author, Content: "deploy after lunch, the meeting is at noon"}
					if err := db.PostMessage(ctx, m); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

func dirSize(b *testing.B, dir string) int64 {
	var n int64
	err := filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}

var (
	searchBulkMessages = flag.Int("search-bulk", 0, "messages BenchmarkSearchBulk loads (0: skip it)")
	searchBulkDir      = flag.String("search-bulk-dir", "", "where BenchmarkSearchBulk keeps its store, to search it again without loading it again (default: a temporary directory)")
)

// BenchmarkSearchBulk loads -search-bulk messages straight into the store
// (batches of a thousand, as an import would: through addMessage, index
// included) over 50 rooms and 60 days, then measures searches across all
// the rooms, a page of 20, newest first: one word (p50, p99), two words,
// and the index's share of the store on disk.
//
//	go test -run '^$' -bench BenchmarkSearchBulk -benchtime 2000x ./store/embedded -args -search-bulk=1000000
//
// With -search-bulk-dir, a store loaded before with as many messages is
// searched again as it is.
func BenchmarkSearchBulk(b *testing.B) {
	if *searchBulkMessages == 0 {
		b.Skip("-search-bulk=N loads N messages")
	}
	dir := *searchBulkDir
	if dir == "" {
		dir = b.TempDir()
	}
	db := open(b, dir)
	defer db.Close()
	const rooms = 50
	var names []string
	for i := range rooms {
		names = append(names, fmt.Sprintf("room-%02d", i))
	}
	loaded := tuple(tableMeta).str(fmt.Sprintf("search_bench_%d", *searchBulkMessages))
	if done, err := db.has(loaded); err != nil {
		b.Fatal(err)
	} else if !done {
		loadSearchBulk(b, db, names, *searchBulkMessages)
		batch := db.batch()
		batch.setEmpty(loaded)
		if err := batch.commit(); err != nil {
			b.Fatal(err)
		}
	}
	words := tuple(tableSearchWords)
	indexBytes, err := db.pdb.EstimateDiskUsage(words, words.end())
	if err != nil {
		b.Fatal(err)
	}
	all, err := db.pdb.EstimateDiskUsage([]byte{0}, []byte{0xff})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%d messages on disk: %d MiB, the index %d MiB (%.0f B a message)",
		*searchBulkMessages, all>>20, indexBytes>>20, float64(indexBytes)/float64(*searchBulkMessages))

	ctx := context.Background()
	for _, kind := range []struct {
		name  string
		words int
	}{{"one-word", 1}, {"two-words", 2}} {
		b.Run(kind.name, func(b *testing.B) {
			r := rand.New(rand.NewPCG(7, 7))
			var took []time.Duration
			for b.Loop() {
				var terms []string
				for range kind.words {
					terms = append(terms, storetest.SearchBenchWord(r))
				}
				t := time.Now()
				if _, err := db.SearchMessages(ctx, store.MessageQuery{Conversations: names, Terms: terms, Limit: 20}); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(t))
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(took[len(took)*99/100].Microseconds()), "p99-µs")
		})
	}
	b.ReportMetric(float64(indexBytes)/float64(*searchBulkMessages), "index-B/msg")
}

// loadSearchBulk writes n messages over the rooms and the last 60 days.
func loadSearchBulk(b *testing.B, db *DB, rooms []string, n int) {
	const days, perBatch = 60, 1000
	author := store.UserRef{Login: "loader"}
	r := rand.New(rand.NewPCG(1, 1))
	start, from := time.Now(), time.Now().Add(-days*24*time.Hour)
	step := days * 24 * time.Hour / time.Duration(n)
	for done := 0; done < n; done += perBatch {
		batch := db.batch()
		for i := done; i < min(done+perBatch, n); i++ {
			m := store.Message{Room: rooms[i%len(rooms)], ID: store.MessageIDAt(from.Add(time.Duration(i) * step)), Author: author, Content: storetest.SearchBenchText(r)}
			if err := db.addMessage(batch, m); err != nil {
				b.Fatal(err)
			}
		}
		if err := batch.commit(); err != nil {
			b.Fatal(err)
		}
	}
	if err := db.pdb.Flush(); err != nil {
		b.Fatal(err)
	}
	took := time.Since(start)
	b.Logf("%d messages loaded in %v (%.0f/s, index included)", n, took.Round(time.Second), float64(n)/took.Seconds())
}
