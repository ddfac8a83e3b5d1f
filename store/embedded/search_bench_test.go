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
	storetest.RunSearchScale(b, db, storetest.SearchScale{
		Messages: *searchScale, Rooms: 100, Searched: 20, Posters: 8, Span: 365 * 24 * time.Hour,
		Searches: 500, Toggled: 10_000,
		SetSearch: func(on bool) { db.searchOff = !on },
		Sizes: func() (map[string]int64, error) {
			if err := db.pdb.Flush(); err != nil {
				return nil, err
			}
			words := tuple(tableSearchWords)
			index, err := db.pdb.EstimateDiskUsage(words, words.end())
			return map[string]int64{"index": int64(index), "store": dirSize(b, dir)}, err
		},
	})
}

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
