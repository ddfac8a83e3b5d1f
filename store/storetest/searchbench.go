package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

// searchVocabulary is the words the benchmark's messages are made of: a
// few common ones and many rarer ones, as chat is.
var searchVocabulary = func() []string {
	words := []string{"the", "a", "to", "and", "is", "ok", "yes", "lunch", "meeting", "deploy"}
	for i := range 2000 {
		words = append(words, fmt.Sprintf("w%04d", i))
	}
	return words
}()

// SearchBenchText is a message of 4 to 15 words of the benchmark's
// vocabulary, drawn Zipf-like.
func SearchBenchText(r *rand.Rand) string { return searchBenchText(r) }

// SearchBenchWord is a word of the benchmark's vocabulary drawn as its
// searches draw them: common words more often, rare ones too.
func SearchBenchWord(r *rand.Rand) string {
	return searchVocabulary[int(float64(len(searchVocabulary))*r.Float64()*r.Float64())]
}

func searchBenchText(r *rand.Rand) string {
	n := 4 + r.IntN(12)
	text := ""
	for i := range n {
		if i > 0 {
			text += " "
		}
		// Zipf-like: the first words are drawn far more often.
		text += searchVocabulary[int(float64(len(searchVocabulary))*r.Float64()*r.Float64()*r.Float64())]
	}
	return text
}

// BenchmarkSearch fills rooms rooms with messages messages (posted by 8
// posters at once, their rate reported as posts/s) and measures searches
// of one word across all the rooms, a page of 20: ns/op, and the p50 and
// p99 of the searches in µs.
func BenchmarkSearch(b *testing.B, s store.Store, rooms, messages int) {
	ctx := context.Background()
	author := store.UserRef{Login: fmt.Sprintf("searcher-%08x", rand.Uint32())}
	var names []string
	for i := range rooms {
		r := store.Room{Name: fmt.Sprintf("%s-%03d", author.Login, i), Creator: author, CreatedAt: time.Now(), Participants: []store.UserRef{author}}
		if err := s.CreateRoom(ctx, r); err != nil && i == 0 {
			// The creator need not exist for the message tables.
			b.Logf("CreateRoom: %v", err)
		}
		names = append(names, r.Name)
	}
	start := time.Now()
	var wg sync.WaitGroup
	const posters = 8
	for p := range posters {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(p), 1))
			for i := p; i < messages; i += posters {
				m := store.Message{Room: names[i%rooms], ID: store.NewMessageID(), Author: author, Content: searchBenchText(r)}
				if err := s.PostMessage(ctx, m); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		return
	}
	posted := time.Since(start)
	b.Logf("%d messages in %d rooms posted in %v: %.0f posts/s", messages, rooms, posted.Round(time.Millisecond), float64(messages)/posted.Seconds())

	r := rand.New(rand.NewPCG(7, 7))
	var took []time.Duration
	b.ResetTimer()
	for b.Loop() {
		w := SearchBenchWord(r)
		t := time.Now()
		if _, err := s.SearchMessages(ctx, store.MessageQuery{Conversations: names, Terms: []string{w}, Limit: 20}); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(t))
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(messages)/posted.Seconds(), "posts/s")
}
