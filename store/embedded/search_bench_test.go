package embedded

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
	"github.com/killrchat/chatql/store/storetest"
)

var (
	searchBenchMessages = flag.Int("search-messages", 5000, "messages BenchmarkSearch indexes before it searches")
	searchScale         = flag.Int("search-scale", 0, "messages BenchmarkSearchAtScale loads (0: it is skipped)")
	searchScaleDir      = flag.String("search-scale-dir", "", "where BenchmarkSearchAtScale puts its store (default: a temporary directory, removed after)")
)

// BenchmarkSearchAtScale is storetest.RunSearchScale on the embedded store
// (BENCHMARKS.md), run only when -search-scale gives its size:
//
//	go test -run '^$' -bench BenchmarkSearchAtScale -benchtime 1x -timeout 3h ./store/embedded/ -args -search-scale 1000000
func BenchmarkSearchAtScale(b *testing.B) {
	if *searchScale <= 0 {
		b.Skip("-search-scale is not set")
	}
	dir := *searchScaleDir
	if dir == "" {
		dir = b.TempDir()
	}
	dir = filepath.Join(dir, "store")
	db := open(b, dir)
	defer db.Close()
	idx := db.search
	defer func() { db.search = idx }() // before Close, even if the run fails with the index off
	storetest.RunSearchScale(b, db, storetest.SearchScale{
		Messages: *searchScale, Rooms: 100, Searched: 20, Posters: 8, Span: 365 * 24 * time.Hour,
		Searches: 500, Toggled: 10_000,
		SetSearch: func(on bool) {
			db.search = nil
			if on {
				db.search = idx
			}
		},
		CaughtUp: func() error { return idx.caughtUp(context.Background()) },
		Sizes: func() (map[string]int64, error) {
			return map[string]int64{"index": dirSize(b, searchDir(dir)), "store": dirSize(b, dir)}, nil
		},
	})
}

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
