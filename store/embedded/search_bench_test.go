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

var searchBulkMessages = flag.Int("search-bulk", 0, "messages BenchmarkSearchBulk loads (0: skip it)")

// BenchmarkSearchBulk loads -search-bulk messages straight into the store
// (batches of a thousand, as an import would: through addMessage, index
// included) over 50 rooms and 60 days, then measures searches across all
// the rooms, a page of 20, newest first: one word (p50, p99), two words,
// and the index's share of the store on disk.
//
//	go test -run '^$' -bench BenchmarkSearchBulk -benchtime 2000x ./store/embedded -args -search-bulk=1000000
func BenchmarkSearchBulk(b *testing.B) {
	if *searchBulkMessages == 0 {
		b.Skip("-search-bulk=N loads N messages")
	}
	db := open(b, b.TempDir())
	defer db.Close()
	const rooms, days = 50, 60
	var names []string
	for i := range rooms {
		names = append(names, fmt.Sprintf("room-%02d", i))
	}
	author := store.UserRef{Login: "loader"}
	r := rand.New(rand.NewPCG(1, 1))
	start, from := time.Now(), time.Now().Add(-days*24*time.Hour)
	step := days * 24 * time.Hour / time.Duration(*searchBulkMessages)
	const perBatch = 1000
	for done := 0; done < *searchBulkMessages; done += perBatch {
		batch := db.batch()
		for i := done; i < min(done+perBatch, *searchBulkMessages); i++ {
			m := store.Message{Room: names[i%rooms], ID: store.MessageIDAt(from.Add(time.Duration(i) * step)), Author: author, Content: storetest.SearchBenchText(r)}
			if err := db.addMessage(batch, m); err != nil {
				b.Fatal(err)
			}
		}
		if err := batch.commit(); err != nil {
			b.Fatal(err)
		}
	}
	loaded := time.Since(start)
	if err := db.pdb.Flush(); err != nil {
		b.Fatal(err)
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
	b.Logf("%d messages loaded in %v (%.0f/s, index included); on disk %d MiB, the index %d MiB (%.0f B a message)",
		*searchBulkMessages, loaded.Round(time.Second), float64(*searchBulkMessages)/loaded.Seconds(), all>>20, indexBytes>>20, float64(indexBytes)/float64(*searchBulkMessages))

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
