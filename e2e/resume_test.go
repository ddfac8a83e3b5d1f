package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/chatql/internal/chatclient"
	"github.com/killrchat/chatql/server"
	"github.com/killrchat/chatql/store"
)

// skewedClocks are the offsets of three instances' clocks: up to 100 ms
// apart, so that an instance's post can take an id below one posted
// earlier through another.
var skewedClocks = []time.Duration{0, 100 * time.Millisecond, 35 * time.Millisecond}

// Three instances whose clocks disagree by up to 100 ms post to one room;
// readers on every instance leave and resume at random moments, each time
// on a random instance and protocol, from the last cursor they got. Every
// reader gets every post exactly once, and all in one order (the order in
// which Redis numbered them), though the posts' ids are out of that order;
// whether it resumes from an event's cursor or from a message's id, as a
// page of history gives it.
func TestResumeIsExactAcrossInstances(t *testing.T) {
	cl := startClusterWith(t, len(skewedClocks), redisURL(t), func(i int, c *server.Config) {
		c.IDClock = store.NewIDClock(skewedClocks[i])
	})
	resumeAcrossInstances(t, cl, "skewed", nil)
}

// resumeAcrossInstances runs the test above on the instances of cl (one
// poster on each) in room; during, if not nil, runs while the posts are
// being made and before the readers are done.
func resumeAcrossInstances(t *testing.T, cl *cluster, room string, during func()) {
	const perPoster, readers = 80, 6
	n := len(cl.instances)
	first := cl.instances[0]
	var posters []*chatclient.Client
	for i := range n {
		posters = append(posters, cl.on(i, first.user(t, fmt.Sprintf("poster%d", i))))
	}
	mustDo(t, posters[0], createRoom, map[string]any{"n": room}, nil)
	for _, p := range posters[1:] {
		mustDo(t, p, joinRoom, map[string]any{"r": room}, nil)
	}
	rs := make([]*resumingReader, readers)
	for k := range rs {
		c := first.user(t, fmt.Sprintf("reader%d", k))
		mustDo(t, c, joinRoom, map[string]any{"r": room}, nil)
		r := &resumingReader{room: room, total: perPoster * n, rng: rand.New(rand.NewPCG(uint64(k), 2))}
		for i := range n {
			r.clients = append(r.clients, cl.on(i, c))
		}
		// Each reader's first stream is live before anyone posts.
		r.sub = cl.instances[k%n].subscribe(t, r.clients[k%n], chatclient.GraphQLTransportWS, room, nil)
		rs[k] = r
	}

	total := perPoster * n
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	postErrs := make(chan error, n)
	for i, p := range posters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 1))
			for j := range perPoster {
				if err := p.Do(ctx, postMessage, map[string]any{"r": room, "c": fmt.Sprintf("p%d-%d", i, j)}, nil); err != nil {
					postErrs <- fmt.Errorf("poster %d, post %d: %w", i, j, err)
					return
				}
				time.Sleep(time.Duration(rng.IntN(4)) * time.Millisecond)
			}
		}()
	}
	for _, r := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.err = r.read(ctx)
		}()
	}
	if during != nil {
		during()
	}
	wg.Wait()
	close(postErrs)
	for err := range postErrs {
		t.Fatal(err)
	}

	var inversions int
	for k, r := range rs {
		if r.err != nil {
			t.Fatalf("reader %d after %d posts: %v", k, len(r.posts), r.err)
		}
		if len(r.posts) != total {
			t.Fatalf("reader %d got %d posts, want %d", k, len(r.posts), total)
		}
		if k == 0 {
			for i := 1; i < len(r.posts); i++ {
				if mustID(t, r.posts[i]).Compare(mustID(t, r.posts[i-1])) < 0 {
					inversions++
				}
			}
			continue
		}
		if i := firstDifference(r.posts, rs[0].posts); i >= 0 {
			t.Fatalf("reader %d's post %d is %s, reader 0's %s: not one order", k, i, r.posts[i], rs[0].posts[i])
		}
	}
	if inversions == 0 {
		t.Fatal("every post came in id order: the clocks' skew did not show, so the test proved nothing")
	}
	t.Logf("%d readers got %d posts each in one order; %d came after a greater id", readers, total, inversions)
}

// resumingReader is a reader of the test above: it follows the room until
// it has total posts, reading a few events at a time, then leaving and
// resuming from its last cursor (or its last post's id) on a random
// instance over a random protocol.
type resumingReader struct {
	room    string
	total   int
	rng     *rand.Rand
	clients []*chatclient.Client // one per instance
	sub     *chatclient.Subscription
	posts   []string // the ids of the posts it got, in order
	err     error
}

// read follows the room until the reader has every post. It fails on a
// post that came twice, a cursor whose place in the room's sequence does
// not come after the last one's, or an error.
func (r *resumingReader) read(ctx context.Context) error {
	defer func() { r.sub.Close() }()
	got := make(map[string]bool)
	var cursor string
	var at uint64
	for len(r.posts) < r.total {
		for range 1 + r.rng.IntN(25) {
			next, cancel := context.WithTimeout(ctx, 20*time.Second)
			resp, err := r.sub.Next(next)
			cancel()
			if err != nil {
				return fmt.Errorf("next event after cursor %s: %w", cursor, err)
			}
			if len(resp.Errors) > 0 {
				return fmt.Errorf("next event after cursor %s: %v", cursor, resp.Errors)
			}
			var out struct{ RoomEvents roomEvent }
			if err := json.Unmarshal(resp.Data, &out); err != nil {
				return err
			}
			ev := out.RoomEvents
			if ev.Cursor == nil {
				continue
			}
			c, err := store.ParseCursor(*ev.Cursor)
			if err != nil {
				return err
			}
			if c.Seq != 0 {
				if c.Seq <= at {
					return fmt.Errorf("event %s at %d came after one at %d", c.ID, c.Seq, at)
				}
				at = c.Seq
			}
			cursor = *ev.Cursor
			if ev.Kind != "MESSAGE_POSTED" {
				continue
			}
			if r.rng.IntN(4) == 0 {
				cursor = ev.Message.ID // as a page of history gives it
			}
			if got[ev.Message.ID] {
				return fmt.Errorf("post %s (%s) came twice", ev.Message.ID, ev.Message.Content)
			}
			got[ev.Message.ID] = true
			r.posts = append(r.posts, ev.Message.ID)
			if len(r.posts) == r.total {
				return nil
			}
		}
		r.sub.Close()
		time.Sleep(time.Duration(r.rng.IntN(30)) * time.Millisecond)
		protocol := []string{chatclient.GraphQLTransportWS, chatclient.GraphQLWS}[r.rng.IntN(2)]
		c := r.clients[r.rng.IntN(len(r.clients))]
		sub, err := c.Subscribe(ctx, protocol, roomEvents, map[string]any{"r": r.room, "after": cursor})
		if err != nil {
			return fmt.Errorf("resume after %s: %w", cursor, err)
		}
		r.sub = sub
	}
	return nil
}

func firstDifference(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

func mustID(t *testing.T, s string) store.MessageID {
	t.Helper()
	id, err := store.ParseMessageID(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
