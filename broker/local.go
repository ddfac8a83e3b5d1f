package broker

import (
	"context"
	"sync/atomic"
)

// Local is the in-process broker of a single server instance: Publish
// delivers straight to the local subscribers.
type Local struct {
	hub       *Hub
	published atomic.Uint64
}

var _ Broker = (*Local)(nil)

// NewLocal returns an in-process broker with per-subscriber buffers of
// bufferSize events (DefaultBufferSize if zero).
func NewLocal(bufferSize int) *Local { return &Local{hub: NewHub(bufferSize, nil)} }

// Publish delivers ev to topic's subscribers without waiting for any of them.
func (b *Local) Publish(ctx context.Context, topic string, ev Event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.published.Add(1)
	b.hub.Deliver(topic, ev)
	return nil
}

// Flush returns at once: Publish has delivered to every subscriber there is.
func (b *Local) Flush(context.Context) error { return nil }

// Stats returns the broker's counts now.
func (b *Local) Stats() Stats {
	topics, subscribers := b.hub.Counts()
	return Stats{Published: b.published.Load(), SlowSubscribers: b.hub.Slow(), Topics: topics, Subscribers: subscribers}
}

// Subscribe returns a live subscription to topic.
func (b *Local) Subscribe(ctx context.Context, topic string) (*Subscription, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sub, _, err := b.hub.Add(topic)
	return sub, err
}

// Close ends every subscription with ErrClosed.
func (b *Local) Close() error {
	b.hub.Close()
	return nil
}
