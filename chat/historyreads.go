package chat

import (
	"context"
	"fmt"
	"sync"

	"github.com/killrchat/chatql/store"
)

// historyReads shares the store reads of identical history pages (the same
// room, cursor and size) among the requests that ask for them at once: a
// hot room's readers, or a crowd of apps opening it after a broadcast, make
// one store read at a time per page, not one each.
//
// A request never takes the result of a read that began before it arrived,
// since that read may have missed a message whose post was acknowledged
// just before (read-your-writes, on this instance and on any other): while
// a read of a page is in flight, the requests that come ask for the next
// read of that page, one they all share, which starts when the one in
// flight ends. The zero value is ready to use.
type historyReads struct {
	mu       sync.Mutex
	inFlight map[historyPage]*historyRead
}

type historyPage struct {
	room   string
	before store.MessageID
	n      int
}

// pageReader reads a page of a room's history: Store.Messages.
type pageReader func(ctx context.Context, room string, before store.MessageID, n int) ([]store.Message, error)

// historyRead is one store read of a page, shared by its requests.
type historyRead struct {
	ctx  context.Context // its first request's, without its cancellation
	done chan struct{}   // closed when msgs and err are set
	msgs []store.Message
	err  error
	next *historyRead // the read that starts when this one ends; nil if nobody asked
	// waiting counts the requests that asked for it while the read before
	// it was in flight.
	waiting int
}

// read returns the page, read by read (a store read of it) after the call.
// The waiters of a shared read share its slice, which nobody changes (as
// store.Store's Messages says of its pages).
func (h *historyReads) read(ctx context.Context, page historyPage, read pageReader) ([]store.Message, error) {
	h.mu.Lock()
	if h.inFlight == nil {
		h.inFlight = make(map[historyPage]*historyRead)
	}
	r := h.inFlight[page]
	if r == nil {
		// Nothing in flight: this request reads, and those that come
		// meanwhile share the next read.
		r = &historyRead{ctx: context.WithoutCancel(ctx), done: make(chan struct{})}
		h.inFlight[page] = r
		h.mu.Unlock()
		h.run(page, r, read)
		return r.msgs, r.err
	}
	if r.next == nil {
		r.next = &historyRead{ctx: context.WithoutCancel(ctx), done: make(chan struct{})}
	}
	next := r.next
	next.waiting++
	h.mu.Unlock()
	select {
	case <-next.done:
		return next.msgs, next.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// run makes the read r, then starts the next one if anybody asked for it.
// A panic of the read fails it, and not the server: the next read may run
// on a goroutine of its own.
func (h *historyReads) run(page historyPage, r *historyRead, read pageReader) {
	defer h.finish(page, r, read)
	defer func() {
		if p := recover(); p != nil {
			r.msgs, r.err = nil, fmt.Errorf("reading the history of %q: panic: %v", page.room, p)
		}
	}()
	r.msgs, r.err = read(r.ctx, page.room, page.before, page.n)
}

// finish hands r's result to its requests and starts the next read.
func (h *historyReads) finish(page historyPage, r *historyRead, read pageReader) {
	h.mu.Lock()
	next := r.next
	if next != nil {
		h.inFlight[page] = next
	} else {
		delete(h.inFlight, page)
	}
	h.mu.Unlock()
	close(r.done)
	if next != nil {
		go h.run(page, next, read)
	}
}
