// Package stream turns a room's or an inbox's event log and its live broker
// topic into one ordered stream per subscriber: the events logged after the
// subscriber's cursor, then the live ones, with no gap and no duplicate. An
// event flows one way: store → broker → stream → transport → client. The
// transports (live/ for websockets, gqlgen's for server-sent events) drive
// streams; the resolvers only open them.
package stream

import (
	"context"
	"sync/atomic"

	"github.com/killrchat/chatql/broker"
	"github.com/killrchat/chatql/store"
)

// replayPage is how many logged events a catch-up reads per store call.
const replayPage = 100

// Source opens streams over a store's logs and a broker's topics. It counts
// the streams it opened, so a server (and its tests) can tell when a new
// stream is live and when all have ended.
type Source struct {
	Store  store.Store
	Broker broker.Broker

	open    atomic.Int64
	started atomic.Int64
}

// Open is how many streams of this source hold a live subscription now.
func (s *Source) Open() int64 { return s.open.Load() }

// Started is how many streams this source ever subscribed. Unlike Open, it
// grows with every new stream whatever other streams end meanwhile, so a
// caller that saw it grow knows a stream it opened is live.
func (s *Source) Started() int64 { return s.started.Load() }

// subscribe subscribes to topic and counts the stream open.
func (s *Source) subscribe(ctx context.Context, topic string) (*broker.Subscription, error) {
	sub, err := s.Broker.Subscribe(ctx, topic)
	if err != nil {
		return nil, err
	}
	s.open.Add(1)
	s.started.Add(1)
	return sub, nil
}

// seen remembers the ids a stream delivered, to recognise a repeat. Repeats
// come from a catch-up overlapping the live stream, which holds at most the
// subscriber queue (256 by default) of undelivered events, and from live
// events of several servers arriving slightly out of order. It keeps the
// last rememberedIDs, or twice the queue if that is more (remembering):
// bounded memory.
type seen struct {
	ids *seenIDs // nil until the first: an idle stream holds none
}

type seenIDs struct {
	// recent holds the last size delivered ids, oldest first, as a ring
	// once full (next is where the oldest is); newest is the highest.
	// Live events arrive in id order, so a repeat check is one comparison;
	// only an id older than newest is looked for in recent.
	recent     []store.MessageID
	next, size int
	newest     store.MessageID
}

// rememberedIDs is how many delivered ids a stream keeps, at least.
const rememberedIDs = 1024

// remembering is how many delivered ids a stream whose subscription queues
// queued events at most keeps: a replay overlaps the live stream by as
// many, all of which it must recognise (CHAT_SUBSCRIBER_QUEUE may be
// larger than the default), with room to spare for late repeats.
func remembering(queued int) int { return max(rememberedIDs, 2*queued) }

// first records id unless it was recorded before, and reports whether it
// is new; the last size ids are kept (remembering). The zero id (an event
// no log holds) is always new.
func (s *seen) first(id store.MessageID, size int) bool {
	if id.IsZero() {
		return true
	}
	if s.delivered(id) {
		return false
	}
	s.remember(id, size)
	return true
}

// delivered reports whether id is among the remembered delivered ids.
func (s *seen) delivered(id store.MessageID) bool {
	if s.ids == nil || id.Compare(s.ids.newest) > 0 {
		return false
	}
	for _, r := range s.ids.recent {
		if r == id {
			return true
		}
	}
	return false
}

// remember records a delivered id, forgetting the oldest once size are
// kept (the size of the first call).
func (s *seen) remember(id store.MessageID, size int) {
	if s.ids == nil {
		s.ids = &seenIDs{newest: id, size: size}
	}
	ids := s.ids
	if id.Compare(ids.newest) > 0 {
		ids.newest = id
	}
	if len(ids.recent) < ids.size {
		ids.recent = append(ids.recent, id)
		return
	}
	ids.recent[ids.next] = id
	ids.next = (ids.next + 1) % ids.size
}

// resumeFrom is where a catch-up starts after the broker may have lost
// events: the oldest id still remembered (everything after it that is not
// remembered is new to the subscriber), or floor, whichever is later.
func (s *seen) resumeFrom(floor store.MessageID) store.MessageID {
	if s.ids == nil {
		return floor
	}
	oldest := s.ids.recent[s.ids.next%len(s.ids.recent)]
	if oldest.Compare(floor) < 0 {
		return floor
	}
	return oldest
}
