package live

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/executor"

	"github.com/killrchat/chatql/chat"
	"github.com/killrchat/chatql/graph"
	"github.com/killrchat/chatql/resolvers"
	"github.com/killrchat/chatql/store"
)

// BenchmarkRoomEventEncode is the per-event cost of the shared encoder:
// executing roomEvents' selection over a new event (once per event per
// selection), and finding an event already encoded (every other
// subscriber of it).
func BenchmarkRoomEventEncode(b *testing.B) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	// Every UserSummary shows the author's current names, from the cache
	// (filled by the first event).
	res := &resolvers.Resolver{Service: &chat.Service{Log: log, Profiles: chat.NewProfiles(namesStore{}, log, 0, time.Hour)}}
	exec := executor.New(graph.NewExecutableSchema(graph.Config{Resolvers: res}))
	query := `subscription($r: String!) { roomEvents(room: $r) { kind room cursor message { id content system postedAt author { login firstname lastname } } user { login } } }`
	rc, errs := exec.CreateOperationContext(graphql.StartOperationTrace(context.Background()), &graphql.RawParams{Query: query, Variables: map[string]any{"r": "hall"}})
	if errs != nil {
		b.Fatal(errs)
	}
	field, _, ok := roomEventsField(rc)
	if !ok {
		b.Fatal("not a roomEvents subscription")
	}
	encs := encoders{schema: res.FeedSchema, errors: graphql.DefaultErrorPresenter, epoch: res.Profiles.Epoch, seesHidden: chat.SeesHiddenContent}
	enc := encs.acquire(context.Background(), rc, field)
	defer encs.release(enc)
	author := store.UserRef{Login: "alice", Firstname: "Alice", Lastname: "Liddell"}
	event := func() *store.Event {
		ev := store.PostedEvent(store.Message{Room: "hall", ID: store.NewMessageID(), Author: author, Content: "hello, this is a message of a typical length"})
		return &ev
	}
	b.Run("new event", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := enc.encode(event(), author); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoded before", func(b *testing.B) {
		ev := event()
		if _, err := enc.encode(ev, author); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := enc.encode(ev, author); err != nil {
				b.Fatal(err)
			}
		}
	})
	// Each new event encoded for 100 subscribers at once, as a room's
	// fan-out wakes them: one executes it, the others find it (or wait for
	// it, in the lock, if they come while it runs).
	b.Run("new event, 100 subscribers at once", func(b *testing.B) {
		const subscribers = 100
		var ev atomic.Pointer[store.Event]
		start := make([]chan struct{}, subscribers)
		var done sync.WaitGroup
		for i := range start {
			start[i] = make(chan struct{})
			go func() {
				for range start[i] {
					if _, err := enc.encode(ev.Load(), author); err != nil {
						panic(err)
					}
					done.Done()
				}
			}()
		}
		defer func() {
			for _, c := range start {
				close(c)
			}
		}()
		b.ReportAllocs()
		for b.Loop() {
			ev.Store(event())
			done.Add(subscribers)
			for _, c := range start {
				c <- struct{}{}
			}
			done.Wait()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*subscribers), "ns/delivery")
	})
}

// namesStore knows every user as Alice Liddell.
type namesStore struct{ store.Store }

func (namesStore) Names(_ context.Context, logins []string) (map[string]store.PublicProfile, error) {
	out := make(map[string]store.PublicProfile, len(logins))
	for _, l := range logins {
		out[l] = store.PublicProfile{UserRef: store.UserRef{Login: l, Firstname: "Alice", Lastname: "Liddell"}}
	}
	return out, nil
}
