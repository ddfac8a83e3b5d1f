package broker

import (
	"context"
	"errors"
	"iter"
	"maps"
	"math"
	"slices"
	"sync"
	"sync/atomic"
)

// DefaultBufferSize is how many events a subscriber may fall behind by
// before it is cut off with ErrSlowSubscriber.
const DefaultBufferSize = 256

// Subscription is one subscriber's view of a topic: a queue of the events
// it has not read yet, which grows with the backlog up to the hub's buffer
// size (an idle subscription holds no buffer).
//
// It is read either by waiting (Next, or Wait then Poll) or, with no
// goroutine parked on it, by a callback (Notify) that says when Poll has
// something, after which the reader polls until the queue is empty.
//
// When the subscription ends, Err says why. Events queued before the end
// can still be read: they are a gap-free prefix of the topic's events, so
// the last one read is a safe resume cursor. Events are shared by every
// subscriber of the topic: read, never modify.
type Subscription struct {
	topic *topic
	// at is its place among the topic's subscribers, -1 once ended (under
	// hub.mu); limit the most events its queue may hold.
	at, limit int32

	mu    sync.Mutex
	queue []*Event // unread events, oldest first, from head
	head  int
	// end is why the subscription ended (closedByOwner for nil); nil
	// while it has not.
	end    error
	notify func()        // called when an event arrives in an empty queue, or at the end
	signal chan struct{} // Wait's wake-up, made by the first Wait
}

// closedByOwner is why a subscription its owner closed ended: Err reports
// nil.
var closedByOwner = errors.New("broker: subscription closed")

// Poll returns the next queued event without waiting. When none is queued
// it returns nil, and ended reports whether none ever will be (Err says
// why).
func (s *Subscription) Poll() (ev *Event, ended bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.head == len(s.queue) {
		return nil, s.end != nil
	}
	ev = s.queue[s.head]
	s.queue[s.head] = nil
	s.head++
	if s.head == len(s.queue) {
		// Drained: keep a small buffer for the next burst, release a big
		// one, so an idle subscriber holds little however busy it was.
		if cap(s.queue) > 16 {
			s.queue = nil
		} else {
			s.queue = s.queue[:0]
		}
		s.head = 0
	}
	return ev, false
}

// Pending reports whether Poll has something: an event, or the end.
func (s *Subscription) Pending() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.head < len(s.queue) || s.end != nil
}

// Next waits for the next event until ctx ends. ok is false when the
// subscription has ended (Err says why) or ctx has.
func (s *Subscription) Next(ctx context.Context) (ev *Event, ok bool) {
	for {
		ev, ended := s.Poll()
		if ev != nil {
			return ev, true
		}
		if ended || !s.Wait(ctx) {
			return nil, false
		}
	}
}

// Wait waits until Poll has something (an event, or the end), and reports
// false if ctx ended first. It may return early; callers poll in a loop.
// A subscription is read either by waiting or through Notify, not both.
func (s *Subscription) Wait(ctx context.Context) bool {
	s.mu.Lock()
	if s.signal == nil {
		s.signal = make(chan struct{}, 1)
		s.notify = s.wakeWaiter
	}
	ready := s.head < len(s.queue) || s.end != nil
	s.mu.Unlock()
	if ready {
		return true
	}
	select {
	case <-s.signal:
		return true
	case <-ctx.Done():
		return false
	}
}

func (s *Subscription) wakeWaiter() {
	select {
	case s.signal <- struct{}{}:
	default:
	}
}

// Notify sets f to be called when an event arrives in the empty queue and
// when the subscription ends, and calls it at once if Poll already has
// something. f runs on the delivering goroutine, under the hub's lock: it
// must return quickly and must not call into the subscription or the
// broker (start a goroutine that polls).
func (s *Subscription) Notify(f func()) {
	s.mu.Lock()
	s.notify = f
	ready := s.head < len(s.queue) || s.end != nil
	s.mu.Unlock()
	if ready {
		f()
	}
}

// Err returns why the subscription ended: ErrSlowSubscriber, ErrClosed, or
// nil if it was closed by its owner or is still live.
func (s *Subscription) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.end == closedByOwner {
		return nil
	}
	return s.end
}

// Limit is the most events the subscription queues: a reader this far
// behind is cut off.
func (s *Subscription) Limit() int { return int(s.limit) }

// Close ends the subscription. It is safe to call more than once.
func (s *Subscription) Close() { s.topic.hub.end(s, nil) }

// push queues ev, or reports false if the queue is full. It returns the
// callback to call if the queue was empty.
func (s *Subscription) push(ev *Event) (notify func(), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.queue) - s.head
	if n >= int(s.limit) {
		return nil, false
	}
	if s.head > 0 && len(s.queue) == cap(s.queue) {
		// Reuse the read part of the buffer before growing it.
		copy(s.queue, s.queue[s.head:])
		clear(s.queue[n:])
		s.queue, s.head = s.queue[:n], 0
	}
	s.queue = append(s.queue, ev)
	if n == 0 {
		return s.notify, true
	}
	return nil, true
}

// finish marks s ended with err (the first reason sticks) and returns the
// callback to call.
func (s *Subscription) finish(err error) func() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		err = closedByOwner
	}
	s.end = err
	return s.notify
}

// Hub fans events out to the local subscribers of each topic. Each
// subscriber has a queue of at most the buffer size; delivery never blocks,
// and a subscriber whose queue is full is cut off. A broker feeds its hub
// from wherever its events come from (in-process posts, a Redis channel).
//
// Memory is bounded by (subscribers × buffer size) event pointers: nothing
// else queues, and an idle subscriber's queue is empty.
type Hub struct {
	bufferSize int
	// onIdle, if set, is called without locks held after the last subscriber
	// of a topic leaves, so a broker can drop its upstream subscription.
	onIdle func(topic string)

	// mu is held exclusively while delivering, so deliveries are totally
	// ordered and a subscriber that misses one event (full queue) is cut
	// off before the next delivery can reach it: subscribers never see gaps.
	// A subscription's own lock is taken inside it.
	mu     sync.RWMutex
	topics map[string]*topic
	closed bool

	// slow counts the subscribers cut off because their queue was full.
	slow atomic.Uint64
}

// Slow counts the subscribers cut off with ErrSlowSubscriber so far.
func (h *Hub) Slow() uint64 { return h.slow.Load() }

// Counts returns how many topics have local subscribers, and how many
// subscribers they have.
func (h *Hub) Counts() (topics, subscribers int) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for _, t := range h.topics {
		subscribers += len(t.subs)
	}
	return len(h.topics), subscribers
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
	bufferSize = min(bufferSize, math.MaxInt32)
	return &Hub{bufferSize: bufferSize, onIdle: onIdle, topics: make(map[string]*topic)}
}

// BufferSize is the capacity of each subscriber's buffer.
func (h *Hub) BufferSize() int { return h.bufferSize }

// Add registers a new subscriber of topic. first reports whether it is the
// topic's only subscriber, so a broker knows to subscribe upstream.
func (h *Hub) Add(name string) (sub *Subscription, first bool, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, false, ErrClosed
	}
	t := h.topics[name]
	if t == nil {
		t = &topic{hub: h, name: name}
		h.topics[name] = t
	}
	sub = &Subscription{topic: t, at: int32(len(t.subs)), limit: int32(h.bufferSize)}
	t.subs = append(t.subs, sub)
	return sub, len(t.subs) == 1, nil
}

// Active reports whether topic has local subscribers.
func (h *Hub) Active(topic string) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.topics[topic] != nil
}

// Topics returns the topics that have local subscribers.
func (h *Hub) Topics() []string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return slices.Collect(maps.Keys(h.topics))
}

// Deliver hands ev to every subscriber of topic without waiting: those
// whose buffers are full are cut off with ErrSlowSubscriber.
func (h *Hub) Deliver(topic string, ev Event) {
	shared := &ev // one copy for all subscribers; queues hold pointers
	h.mu.Lock()
	idle := false
	for s := range h.topics[topic].each() {
		notify, ok := s.push(shared)
		if !ok {
			// Cut off now, under the lock, rather than after it: a later
			// delivery must not slip into a queue the reader has just
			// drained, or the subscriber would resume after a lost event.
			h.slow.Add(1)
			idle = h.endLocked(s, ErrSlowSubscriber) || idle
		} else if notify != nil {
			notify()
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
	for s := range h.topics[topic].each() {
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
	for name, t := range h.topics {
		for s := range t.each() {
			if h.endLocked(s, ErrClosed) {
				idle = append(idle, name)
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
		h.onIdle(s.topic.name)
	}
}

// endLocked ends s with err and reports whether its topic was left without
// subscribers. Ending is idempotent: the first reason sticks. A
// subscription is among its topic's subscribers until it ends, so having a
// place there says it has not.
func (h *Hub) endLocked(s *Subscription, err error) (idle bool) {
	if s.at < 0 {
		return false
	}
	if notify := s.finish(err); notify != nil {
		notify()
	}
	t := s.topic
	last := len(t.subs) - 1
	t.subs[s.at] = t.subs[last]
	t.subs[s.at].at = s.at
	t.subs[last] = nil
	t.subs = t.subs[:last]
	s.at = -1
	if last == 0 {
		delete(h.topics, t.name)
		return true
	}
	return false
}

// topic is a topic with local subscribers: a slice of them, which a
// delivery walks faster than a set, and the topic's name, which they share.
type topic struct {
	hub  *Hub
	name string
	subs []*Subscription
}

// each yields the topic's subscribers, last first, so that one ended on
// the way (endLocked moves the last into its place) leaves none out; none
// if t is nil.
func (t *topic) each() iter.Seq[*Subscription] {
	return func(yield func(*Subscription) bool) {
		if t == nil {
			return
		}
		for i := len(t.subs) - 1; i >= 0; i-- {
			if i < len(t.subs) && !yield(t.subs[i]) {
				return
			}
		}
	}
}
