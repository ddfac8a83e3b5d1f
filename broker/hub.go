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
	// when the subscription ends; Err then says why.
	C <-chan Event

	ch    chan Event
	topic string
	hub   *Hub
	err   error // guarded by hub.mu
	ended bool  // guarded by hub.mu
}

// Err returns why the subscription ended: ErrSlowSubscriber, ErrClosed, or
// nil if it was closed by its owner or is still live.
func (s *Subscription) Err() error {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	return s.err
}

// Close ends the subscription. It is safe to call more than once.
func (s *Subscription) Close() { s.hub.end(s, nil) }

// Hub fans events out to the local subscribers of each topic. Each
// subscriber has a bounded buffer; delivery never blocks, and a subscriber
// whose buffer is full is cut off. A broker feeds its hub from wherever its
// events come from (in-process posts, a Redis channel).
type Hub struct {
	bufferSize int
	// onIdle, if set, is called without locks held after the last subscriber
	// of a topic leaves, so a broker can drop its upstream subscription.
	onIdle func(topic string)

	mu     sync.RWMutex
	topics map[string]map[*Subscription]struct{}
	closed bool
}

// NewHub returns a hub with per-subscriber buffers of bufferSize events.
// onIdle may be nil.
func NewHub(bufferSize int, onIdle func(topic string)) *Hub {
	if bufferSize <= 0 {
		bufferSize = DefaultBufferSize
	}
	return &Hub{bufferSize: bufferSize, onIdle: onIdle, topics: make(map[string]map[*Subscription]struct{})}
}

// Add registers a new subscriber of topic. first reports whether it is the
// topic's only subscriber, so a broker knows to subscribe upstream.
func (h *Hub) Add(topic string) (sub *Subscription, first bool, err error) {
	ch := make(chan Event, h.bufferSize)
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
	var slow []*Subscription
	h.mu.RLock()
	for s := range h.topics[topic] {
		select {
		case s.ch <- ev:
		default:
			slow = append(slow, s)
		}
	}
	h.mu.RUnlock()
	for _, s := range slow {
		h.end(s, ErrSlowSubscriber)
	}
}

// End cuts off every subscriber of topic with err.
func (h *Hub) End(topic string, err error) {
	h.mu.RLock()
	subs := make([]*Subscription, 0, len(h.topics[topic]))
	for s := range h.topics[topic] {
		subs = append(subs, s)
	}
	h.mu.RUnlock()
	for _, s := range subs {
		h.end(s, err)
	}
}

// Close ends every subscription with ErrClosed and refuses new ones.
func (h *Hub) Close() {
	h.mu.Lock()
	h.closed = true
	topics := make([]string, 0, len(h.topics))
	for t := range h.topics {
		topics = append(topics, t)
	}
	h.mu.Unlock()
	for _, t := range topics {
		h.End(t, ErrClosed)
	}
}

func (h *Hub) end(s *Subscription, err error) {
	h.mu.Lock()
	if s.ended {
		h.mu.Unlock()
		return
	}
	s.ended, s.err = true, err
	close(s.ch)
	subs := h.topics[s.topic]
	delete(subs, s)
	idle := len(subs) == 0
	if idle {
		delete(h.topics, s.topic)
	}
	h.mu.Unlock()
	if idle && h.onIdle != nil {
		h.onIdle(s.topic)
	}
}
