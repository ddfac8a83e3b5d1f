package resolvers

import (
	"context"
	"sync"

	"github.com/killrchat/chatql/graph/model"
	"github.com/killrchat/chatql/store"
)

// How subscription streams meet the transports that serve them. A stream
// that fails after it started (its subscriber fell behind, the server is
// shutting down) cannot return an error from its resolver any more; it
// leaves the error where the transport looks for it when the stream's
// channel closes.

type streamErrorKey struct{}

// streamError holds why a stream ended.
type streamError struct {
	mu  sync.Mutex
	err error
}

// WithStreamError returns a context in which a subscription's stream
// records why it failed, and a function that reads it once the stream's
// channel is closed (nil if it ended normally). Transports that cannot
// report errors mid-stream (server-sent events) omit it; failures are then
// logged.
func WithStreamError(ctx context.Context) (context.Context, func() error) {
	slot := &streamError{}
	return context.WithValue(ctx, streamErrorKey{}, slot), func() error {
		slot.mu.Lock()
		defer slot.mu.Unlock()
		return slot.err
	}
}

// endStream records why a stream ended, for its transport. A stream whose
// subscriber already left has nobody to tell.
func (r *Resolver) endStream(ctx context.Context, err error) {
	if err == nil || ctx.Err() != nil {
		return
	}
	if slot, ok := ctx.Value(streamErrorKey{}).(*streamError); ok {
		slot.mu.Lock()
		slot.err = err
		slot.mu.Unlock()
		return
	}
	r.Log.WarnContext(ctx, "subscription ended; the client must resubscribe", "err", err)
}

type roomEventFeedKey struct{}

// WithRoomEventFeed returns a context in which the roomEvents resolver
// serves the given channel instead of a room: a transport that executes an
// operation once for many subscribers of a room feeds it the events they
// have each been cleared to see, and writes the one result to all of them.
func WithRoomEventFeed(ctx context.Context, feed <-chan *model.RoomEvent) context.Context {
	return context.WithValue(ctx, roomEventFeedKey{}, feed)
}

func roomEventFeed(ctx context.Context) (<-chan *model.RoomEvent, bool) {
	feed, ok := ctx.Value(roomEventFeedKey{}).(<-chan *model.RoomEvent)
	return feed, ok
}

// SeesHiddenContent reports whether viewer may read the content of the
// hidden message m: only its author may. Everyone else sees it blank.
func SeesHiddenContent(m *store.Message, viewer store.UserRef) bool {
	return viewer.Login != "" && viewer.Login == m.Author.Login
}
