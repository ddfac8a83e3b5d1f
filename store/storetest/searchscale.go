package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

// SearchScale is the search benchmark at scale (BENCHMARKS.md): a history
// of Messages messages loaded through the store, then searches, then posts
// with the index on and off.
type SearchScale struct {
	// Messages are loaded into Rooms rooms, by Posters posters at once,
	// their times spread evenly over Span up to now.
	Messages, Rooms, Posters int
	Span                     time.Duration
	// Searched is how many of the rooms a search covers: the searcher's
	// conversations.
	Searched int
	// Searches is the number of searches of each kind measured.
	Searches int
	// Toggled is the number of posts of each window of the comparison of
	// posts with the index on and off (four windows: on, off, on, off);
	// 0 or SetSearch nil: no comparison.
	Toggled int

	// SetSearch turns the backend's indexing on or off, between windows
	// (nil: it cannot).
	SetSearch func(on bool)
	// CaughtUp returns once the backend's index has every write that
	// answered (nil: a write answers once indexed).
	CaughtUp func() error
	// Sizes reports the sizes on disk worth reporting, in bytes, by name
	// ("index", "store"); nil: none.
	Sizes func() (map[string]int64, error)
}

// RunSearchScale runs the benchmark on s and reports, as metrics: the rate
// of the load (posts/s, with the index on, counting until the index has
// them all), the p50 and p99 of each kind of search in µs, the sizes on
// disk in MB, and the posts/s of the on/off comparison. It runs once,
// whatever b.N (run it with -benchtime 1x), and prints its progress to
// stderr.
func RunSearchScale(b *testing.B, s store.Store, cfg SearchScale) {
	ctx := context.Background()
	progress := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "%s search scale: %s\n", time.Now().Format(time.TimeOnly), fmt.Sprintf(format, args...))
	}
	caughtUp := func() {
		if cfg.CaughtUp != nil {
			if err := cfg.CaughtUp(); err != nil {
				b.Fatal(err)
			}
		}
	}
	tag := fmt.Sprintf("%08x", rand.Uint32())
	authors := make([]store.UserRef, 50)
	for i := range authors {
		authors[i] = store.UserRef{Login: fmt.Sprintf("scale%s-%02d", tag, i)}
		if err := s.CreateUser(ctx, store.Account{User: store.User{UserRef: authors[i]}}); err != nil {
			b.Fatalf("CreateUser: %v", err)
		}
	}
	rooms := make([]string, cfg.Rooms)
	for i := range rooms {
		r := store.Room{Name: fmt.Sprintf("scale%s-%03d", tag, i), Creator: authors[0], CreatedAt: time.Now().Add(-cfg.Span), Participants: authors}
		if err := s.CreateRoom(ctx, r); err != nil {
			b.Fatalf("CreateRoom: %v", err)
		}
		rooms[i] = r.Name
	}
	searched := rooms[:cfg.Searched]
	text := newChatText()

	// The load: message i is at start + i·step, in a room drawn at random.
	start := time.Now().Add(-cfg.Span)
	step := cfg.Span / time.Duration(max(cfg.Messages, 1))
	var next, failed atomic.Int64
	post := func(r *rand.Rand, at time.Time, room string) error {
		m := store.Message{Room: room, ID: store.MessageIDAt(at), Author: authors[r.IntN(len(authors))], Content: text.message(r)}
		return s.PostMessage(ctx, m)
	}
	began := time.Now()
	var wg sync.WaitGroup
	for p := range cfg.Posters {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(p), 11))
			for {
				i := next.Add(1) - 1
				if i >= int64(cfg.Messages) || failed.Load() > 0 {
					return
				}
				if err := post(r, start.Add(time.Duration(i)*step), rooms[r.IntN(len(rooms))]); err != nil {
					if failed.Add(1) == 1 {
						b.Errorf("PostMessage: %v", err)
					}
					return
				}
				if (i+1)%100_000 == 0 {
					progress("%d messages loaded, %.0f posts/s", i+1, float64(i+1)/time.Since(began).Seconds())
				}
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		return
	}
	caughtUp()
	loaded := time.Since(began)
	progress("%d messages in %d rooms loaded and indexed in %v", cfg.Messages, cfg.Rooms, loaded.Round(time.Second))
	b.ReportMetric(float64(cfg.Messages)/loaded.Seconds(), "load-posts/s")
	sizes := func(when string) {
		if cfg.Sizes == nil {
			return
		}
		got, err := cfg.Sizes()
		if err != nil {
			b.Fatal(err)
		}
		for name, n := range got {
			b.ReportMetric(float64(n)/1e6, name+"-MB-"+when)
			progress("%s: %.1f MB %s", name, float64(n)/1e6, when)
		}
	}
	sizes("loaded")

	// The searches, of three kinds, across the searched rooms, a page of
	// 20: a common word (many matches: the newest must be sorted out), a
	// rare word (few matches: the whole history is looked through), and a
	// phrase of two words taken from a message as generated.
	r := rand.New(rand.NewPCG(7, 7))
	kinds := []struct {
		name  string
		query func() store.MessageQuery
	}{
		{"common", func() store.MessageQuery { return store.MessageQuery{Terms: []string{text.words[10+r.IntN(90)]}} }},
		{"rare", func() store.MessageQuery {
			return store.MessageQuery{Terms: []string{text.words[5000+r.IntN(len(text.words)-5000)]}}
		}},
		{"phrase", func() store.MessageQuery {
			for {
				if words := store.Terms(text.message(r)); len(words) >= 2 {
					i := r.IntN(len(words) - 1)
					return store.MessageQuery{Phrases: [][]string{words[i : i+2]}}
				}
			}
		}},
	}
	for _, kind := range kinds {
		var took []time.Duration
		hits := 0
		for range cfg.Searches {
			q := kind.query()
			q.Conversations, q.Limit = searched, 20
			t := time.Now()
			page, err := s.SearchMessages(ctx, q)
			if err != nil {
				b.Fatalf("SearchMessages(%+v): %v", q, err)
			}
			took = append(took, time.Since(t))
			hits += len(page.Messages)
		}
		slices.Sort(took)
		p50, p99 := took[len(took)/2], took[len(took)*99/100]
		b.ReportMetric(float64(p50.Microseconds()), kind.name+"-p50-µs")
		b.ReportMetric(float64(p99.Microseconds()), kind.name+"-p99-µs")
		progress("%d searches of a %s: p50 %v, p99 %v, %.1f hits a search", cfg.Searches, kind.name, p50, p99, float64(hits)/float64(cfg.Searches))
	}

	// Posts now, in the searched rooms, the index on and off in turn.
	if cfg.Toggled > 0 && cfg.SetSearch != nil {
		var took [2]time.Duration
		for w, on := range []bool{true, false, true, false} {
			caughtUp()
			cfg.SetSearch(on)
			var n atomic.Int64
			t := time.Now()
			for p := range cfg.Posters {
				wg.Go(func() {
					r := rand.New(rand.NewPCG(uint64(p), uint64(100+w)))
					for n.Add(1) <= int64(cfg.Toggled) && !b.Failed() {
						if err := post(r, time.Now(), searched[r.IntN(len(searched))]); err != nil {
							b.Errorf("PostMessage: %v", err)
						}
					}
				})
			}
			wg.Wait()
			if on {
				caughtUp() // the window ends when the index has its posts
			}
			i := 0
			if !on {
				i = 1
			}
			took[i] += time.Since(t)
		}
		cfg.SetSearch(true)
		on, off := float64(2*cfg.Toggled)/took[0].Seconds(), float64(2*cfg.Toggled)/took[1].Seconds()
		b.ReportMetric(on, "posts/s-search-on")
		b.ReportMetric(off, "posts/s-search-off")
		progress("posts with the index on: %.0f/s, off: %.0f/s (%d posters, 2 windows of %d posts each)", on, off, cfg.Posters, cfg.Toggled)
	}
	caughtUp()
	sizes("end")
}

// chatText makes messages that read somewhat like chat to an index: words
// of a vocabulary of 30,000 (the most common English chat words first,
// then made-up words for the long tail), drawn by Zipf's law, 1 to 40 of
// them, mostly under 12, with some capitals and punctuation.
type chatText struct {
	words []string
}

var commonChatWords = strings.Fields(`the i you to a and it is that of in for
	on this be have my we so not but just with are me what do at was like
	can if your get ok no yes all think know will one up about out how now
	there good they thanks it's i'm don't lol time go see more would
	need our when then some back today meeting tomorrow here going been
	make sure also work let really should right could from did can't
	deploy lunch still want sounds great any update let's yeah please
	anyone check team week thing call done looks build test issue fix
	release review merge branch prod server down again night morning
	coffee friday monday weekend people doc link send email later soon`)

func newChatText() *chatText {
	t := &chatText{words: slices.Clone(commonChatWords)}
	seen := map[string]bool{}
	for _, w := range t.words {
		seen[w] = true
	}
	syllables := strings.Fields("ka lo mi ne ra tu be si do fa gen ter pol san vir mon tek dra pli cor ush ent ald ric")
	r := rand.New(rand.NewPCG(1, 2))
	for len(t.words) < 30_000 {
		var w strings.Builder
		for range 2 + r.IntN(3) {
			w.WriteString(syllables[r.IntN(len(syllables))])
		}
		if !seen[w.String()] {
			seen[w.String()] = true
			t.words = append(t.words, w.String())
		}
	}
	return t
}

func (t *chatText) message(r *rand.Rand) string {
	zipf := rand.NewZipf(r, 1.07, 2, uint64(len(t.words)-1))
	n := 1 + int(r.ExpFloat64()*7)
	n = min(n, 40)
	var m strings.Builder
	for i := range n {
		if i > 0 {
			m.WriteByte(' ')
		}
		w := t.words[zipf.Uint64()]
		if i == 0 && r.IntN(2) == 0 {
			w = strings.ToUpper(w[:1]) + w[1:]
		}
		m.WriteString(w)
	}
	m.WriteString([]string{"", "", ".", "!", "?", " :)"}[r.IntN(6)])
	return m.String()
}
