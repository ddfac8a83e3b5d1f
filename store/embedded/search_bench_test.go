package embedded

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/killrchat/chatql/store"
	"github.com/killrchat/chatql/store/storetest"
)

var searchBenchMessages = flag.Int("search-messages", 5000, "messages BenchmarkSearch indexes before it searches")

// BenchmarkSearch: indexing and searching on the embedded store
// (storetest.BenchmarkSearch), with the index's size on disk.
func BenchmarkSearch(b *testing.B) {
	dir := b.TempDir()
	db := open(b, filepath.Join(dir, "store"))
	defer db.Close()
	storetest.BenchmarkSearch(b, db, 20, *searchBenchMessages)
	b.ReportMetric(float64(dirSize(b, searchDir(filepath.Join(dir, "store"))))/float64(*searchBenchMessages), "index-B/msg")
}

// BenchmarkPostSearchOnOff posts with the search index on and off, 8
// posters at once: what indexing costs a post. With the index on, the time
// runs until the indexer has applied every post.
func BenchmarkPostSearchOnOff(b *testing.B) {
	for _, on := range []bool{true, false} {
		b.Run(fmt.Sprintf("search=%v", on), func(b *testing.B) {
			db := open(b, b.TempDir())
			defer db.Close()
			idx := db.search
			if !on {
				db.search = nil
				defer func() { db.search = idx }()
			}
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
			// The posts' indexing counts: the timer runs until the index
			// has every post.
			if on {
				if err := idx.caughtUp(ctx); err != nil {
					b.Fatal(err)
				}
			}
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
