package chat

import (
	"context"
	"sync/atomic"
	"time"
)

// publishWait bounds how long an operation's answer waits for its events
// to leave the instance (Broker.Flush).
const publishWait = time.Second

type publishedKey struct{}

// WatchPublished returns a context for an operation that records whether
// it published a live event, and a function that reports it: an operation
// that did waits for Flush before it answers (resolvers.AwaitPublished).
func WatchPublished(ctx context.Context) (_ context.Context, published func() bool) {
	var p atomic.Bool
	return context.WithValue(ctx, publishedKey{}, &p), p.Load
}

// Flush waits until the live events this instance published have left it
// for every instance's subscribers (Broker.Flush), within publishWait: a
// broker slower than that delays live delivery, not the answer, and its
// subscribers still get the events. A wait that ends unfinished is logged
// at debug level only: the broker logs the outage behind it once.
func (s *Service) Flush(ctx context.Context) {
	wait, cancel := context.WithTimeout(context.WithoutCancel(ctx), publishWait)
	defer cancel()
	if err := s.Broker.Flush(wait); err != nil {
		s.Log.DebugContext(ctx, "the mutation's live events have not left the instance yet; answering anyway", "err", err)
	}
}

// markPublished records that the operation of ctx published an event.
func markPublished(ctx context.Context) {
	if p, ok := ctx.Value(publishedKey{}).(*atomic.Bool); ok {
		p.Store(true)
	}
}
