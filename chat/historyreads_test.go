package chat

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/killrchat/chatql/store"
)

// blockingReader is a page reader whose reads wait for release, and whose
// result says which read it was and how many posts it saw.
type blockingReader struct {
	reads   atomic.Int32
	posts   atomic.Int32 // "acknowledged posts": a read sees those made before it began
	release chan struct{}
}

func (b *blockingReader) read(ctx context.Context, room string, before store.MessageID, n int) ([]store.Message, error) {
	seen := b.posts.Load()
	read := b.reads.Add(1)
	<-b.release
	return []store.Message{{Room: room, Content: strconv.Itoa(int(read)) + "/" + strconv.Itoa(int(seen))}}, nil
}

func TestHistoryReadsShareTheNextRead(t *testing.T) {
	b := &blockingReader{release: make(chan struct{})}
	var h historyReads
	page := historyPage{room: "hall", n: 51}
	ctx := context.Background()

	first := make(chan []store.Message)
	go func() {
		msgs, err := h.read(ctx, page, b.read)
		if err != nil {
			t.Error(err)
		}
		first <- msgs
	}()
	waitUntil(t, func() bool { return b.reads.Load() == 1 })
	// A post is acknowledged while the first read is in flight; every
	// request that comes after it must see it.
	b.posts.Add(1)
	const later = 10
	var wg sync.WaitGroup
	results := make([][]store.Message, later)
	for i := range later {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msgs, err := h.read(ctx, page, b.read)
			if err != nil {
				t.Error(err)
			}
			results[i] = msgs
		}()
	}
	// One that gives up leaves the others waiting.
	gone, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := h.read(gone, page, b.read); !errors.Is(err, context.Canceled) {
		t.Fatalf("a canceled request got %v", err)
	}
	waitUntil(t, func() bool { // every later request, and the one gone, asked for the next read
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.inFlight[page].next != nil && h.inFlight[page].next.waiting == later+1
	})
	close(b.release)
	if got := (<-first)[0].Content; got != "1/0" {
		t.Fatalf("the first request got read %q", got)
	}
	wg.Wait()
	for i, msgs := range results {
		if len(msgs) != 1 || msgs[0].Content != "2/1" {
			t.Fatalf("later request %d got %v, want the second read, which saw the post", i, msgs)
		}
	}
	if n := b.reads.Load(); n != 2 {
		t.Fatalf("%d store reads for %d requests, want 2", n, 1+later)
	}
	// Nothing is left in flight, and a new request reads again.
	if msgs, err := h.read(ctx, page, b.read); err != nil || msgs[0].Content != "3/1" {
		t.Fatalf("a request after the others got %v, %v", msgs, err)
	}
	if len(h.inFlight) != 0 {
		t.Fatalf("%d reads left in flight", len(h.inFlight))
	}
}

// A read that panics fails its requests, and the page is read again next
// time.
func TestHistoryReadPanicFailsItsRequests(t *testing.T) {
	var h historyReads
	page := historyPage{room: "hall", n: 51}
	_, err := h.read(context.Background(), page, func(context.Context, string, store.MessageID, int) ([]store.Message, error) {
		panic("boom")
	})
	if err == nil {
		t.Fatal("a panicking read succeeded")
	}
	msgs, err := h.read(context.Background(), page, func(_ context.Context, room string, _ store.MessageID, _ int) ([]store.Message, error) {
		return []store.Message{{Room: room}}, nil
	})
	if err != nil || len(msgs) != 1 {
		t.Fatalf("the read after a panic got %v, %v", msgs, err)
	}
}
