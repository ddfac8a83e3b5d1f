package broker

import (
	"sync"
)

// DefaultBufferSize is how many events a subscriber may fall behind by
// before it is cut off with ErrSlowSubscriber.
const DefaultBufferSize = 256

// Subscription is one subscriber's view of a topic.
type Subscription struct {
	// C delivers the events in the order the hub received them. It is closed
	// when the subscription ends; Err then says why. Events buffered before
	// the end can still be read: they are a gap-free prefix of the topic's
	// events, so the last one read is a safe resume cursor.
	// Events are shared by every subscriber of the topic: read, never modify.
	C <-chan *Event

	ch    chan *Event
	topic string
	hub   *Hub
	err   error // guarded by hub.mu
	ended bool  // guarded by hub.mu
}

// Err returns why the subscription ended: ErrSlowSubscriber, ErrClosed, or
// nil if it was closed by its owner or is still live.
func (s *Subscription) Err() error {
	s.hub.mu.RLock()
	defer s.hub.mu.RUnlock()
	return s.err
}

// Close ends the subscription. It is safe to call more than once.
func (s *Subscription) Close() { s.hub.end(s, nil) }

// Hub fans events out to the local subscribers of each topic. Each
// subscriber has a fixed-size buffer; delivery never blocks, and a
// subscriber whose buffer is full is cut off. A broker feeds its hub from
// wherever its events come from (in-process posts, a Redis channel).
//
// Memory is bounded by (subscribers × buffer size) events: nothing else
// queues.
type Hub struct {
	bufferSize int
	// onIdle, if set, is called without locks held after the last subscriber
	// of a topic leaves, so a broker can drop its upstream subscription.
	onIdle func(topic string)

	// mu is held exclusively while delivering, so deliveries are totally
	// ordered and a subscriber that misses one event (full buffer) is cut
	// off before the next delivery can reach it: subscribers never see gaps.
	mu     sync.RWMutex
	topics map[string]map[*Subscription]struct{}
	closed bool
}

// NewHub returns a hub with per-subscriber buffers of bufferSize events
// (DefaultBufferSize if bufferSize <= 0). onIdle may be nil. Because it runs
// after the hub's lock is released, a new subscriber may already have
// arrived when onIdle is called: a broker must check Active before it drops
// its upstream subscription.
func NewHub(bufferSize int, onIdle func(topic string)) *Hub {
	if bufferSize <= 0 {
		bufferSize = DefaultBufferSize
	}
	return &Hub{bufferSize: bufferSize, onIdle: onIdle, topics: make(map[string]map[*Subscription]struct{})}
}

// BufferSize is the capacity of each subscriber's buffer.
func (h *Hub) BufferSize() int { return h.bufferSize }

// Add registers a new subscriber of topic. first reports whether it is the
// topic's only subscriber, so a broker knows to subscribe upstream.
func (h *Hub) Add(topic string) (sub *Subscription, first bool, err error) {
	ch := make(chan *Event, h.bufferSize)
	sub = &Subscription{C: ch, ch: ch, topic: topic, hub: h}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, false, ErrClosed
	}
	subs := h.topics[topic]
	if subs == nil {
		subs = make(map[*Subscription]struct{})
		h.topics[topic] = subs
	}
	subs[sub] = struct{}{}
	return sub, len(subs) == 1, nil
}

// Active reports whether topic has local subscribers.
func (h *Hub) Active(topic string) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.topics[topic]) > 0
}

// Topics returns the topics that have local subscribers.
func (h *Hub) Topics() []string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	out := make([]string, 0, len(h.topics))
	for t := range h.topics {
		out = append(out, t)
	}
	return out
}

// Deliver hands ev to every subscriber of topic without waiting: those
// whose buffers are full are cut off with ErrSlowSubscriber.
func (h *Hub) Deliver(topic string, ev Event) {
	shared := &ev // one copy for all subscribers; queues hold pointers
	h.mu.Lock()
	idle := false
	for s := range h.topics[topic] {
		select {
		case s.ch <- shared:
		default:
			// Cut off now, under the lock, rather than after it: a later
			// delivery must not slip into a buffer the reader has just
			// drained, or the subscriber would resume after a lost event.
			idle = h.endLocked(s, ErrSlowSubscriber) || idle
		}
	}
	h.mu.Unlock()
	if idle && h.onIdle != nil {
		h.onIdle(topic)
	}
}

// End cuts off every subscriber of topic with err.
func (h *Hub) End(topic string, err error) {
	h.mu.Lock()
	idle := false
	for s := range h.topics[topic] {
		idle = h.endLocked(s, err) || idle
	}
	h.mu.Unlock()
	if idle && h.onIdle != nil {
		h.onIdle(topic)
	}
}

// Close ends every subscription with ErrClosed and refuses new ones.
func (h *Hub) Close() {
	h.mu.Lock()
	h.closed = true
	var idle []string
	for topic, subs := range h.topics {
		for s := range subs {
			if h.endLocked(s, ErrClosed) {
				idle = append(idle, topic)
			}
		}
	}
	h.mu.Unlock()
	if h.onIdle != nil {
		for _, topic := range idle {
			h.onIdle(topic)
		}
	}
}

func (h *Hub) end(s *Subscription, err error) {
	h.mu.Lock()
	idle := h.endLocked(s, err)
	h.mu.Unlock()
	if idle && h.onIdle != nil {
		h.onIdle(s.topic)
	}
}

// endLocked ends s with err and reports whether its topic was left without
// subscribers. Ending is idempotent: the first reason sticks. The channel is
// closed under the exclusive lock, so no delivery can be sending on it.
func (h *Hub) endLocked(s *Subscription, err error) (idle bool) {
	if s.ended {
		return false
	}
	s.ended, s.err = true, err
	close(s.ch)
	subs := h.topics[s.topic]
	delete(subs, s)
	if len(subs) == 0 {
		delete(h.topics, s.topic)
		return true
	}
	return false
}
