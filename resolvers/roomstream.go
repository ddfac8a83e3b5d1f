package resolvers

import (
	"context"
	"time"

	"github.com/99designs/gqlgen/graphql/handler/transport"

	"github.com/killrchat/chatql/broker"
	"github.com/killrchat/chatql/graph/model"
	"github.com/killrchat/chatql/store"
)

// rememberedIDs is how many delivered ids a stream keeps to recognise a
// repeat. Repeats come from a catch-up overlapping the live stream, which
// holds at most the subscriber queue (256 by default) of undelivered events,
// and from live events of several servers arriving slightly out of order.
const rememberedIDs = 1024

// roomStream is one subscriber's view of a room: stored messages after its
// cursor, then live events, with no gap and no duplicate.
type roomStream struct {
	r    *Resolver
	room string
	me   store.UserRef
	sub  *broker.Subscription
	out  chan *model.RoomEvent
	// floor bounds what the stream may ever deliver: the resume cursor, or
	// the moment the live subscription started.
	floor store.MessageID

	// seen holds the last rememberedIDs delivered ids; recent lists them
	// oldest first, as a ring once full (next is where the oldest is).
	seen   map[store.MessageID]struct{}
	recent []store.MessageID
	next   int
}

// streamRoom subscribes to the room before reading the store, so nothing
// posted in between is missed, and returns the channel gqlgen reads.
func (r *Resolver) streamRoom(ctx context.Context, room string, me store.UserRef, after store.MessageID) (<-chan *model.RoomEvent, error) {
	floor := after
	if floor.IsZero() {
		floor = store.MinMessageID(time.Now())
	}
	sub, err := r.Broker.Subscribe(ctx, broker.RoomTopic(room))
	if err != nil {
		return nil, err
	}
	s := &roomStream{
		r: r, room: room, me: me, sub: sub, floor: floor,
		out:  make(chan *model.RoomEvent),
		seen: make(map[store.MessageID]struct{}),
	}
	go s.run(ctx, after)
	return s.out, nil
}

func (s *roomStream) run(ctx context.Context, after store.MessageID) {
	defer close(s.out)
	defer s.sub.Close()
	if !after.IsZero() {
		if err := s.catchUp(ctx, after); err != nil {
			s.fail(ctx, err)
			return
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-s.sub.C:
			if !ok {
				if err := s.sub.Err(); err != nil {
					s.fail(ctx, err)
				}
				return
			}
			if ev.Kind == broker.Resync {
				if err := s.catchUp(ctx, s.resyncFrom()); err != nil {
					s.fail(ctx, err)
					return
				}
				continue
			}
			if !s.deliver(ctx, *ev) || s.ends(*ev) {
				return
			}
		}
	}
}

// ends reports whether ev is the last event the subscriber may see.
func (s *roomStream) ends(ev broker.Event) bool {
	return ev.Kind == broker.RoomDeleted || ev.Kind == broker.ParticipantLeft && ev.User.Login == s.me.Login
}

// resyncFrom is where a catch-up starts after the broker may have lost
// events: the oldest id the stream still remembers (everything after it that
// it does not remember is new to the subscriber), or the stream's floor.
func (s *roomStream) resyncFrom() store.MessageID {
	if len(s.recent) == 0 {
		return s.floor
	}
	oldest := s.recent[s.next%len(s.recent)]
	if oldest.Compare(s.floor) < 0 {
		return s.floor
	}
	return oldest
}

// catchUp delivers the stored messages after the cursor, oldest first.
func (s *roomStream) catchUp(ctx context.Context, after store.MessageID) error {
	for {
		msgs, err := s.r.Store.MessagesAfter(ctx, s.room, after, replayPageSize)
		if err != nil {
			return err
		}
		for i := range msgs {
			ev := broker.Event{Kind: broker.MessagePosted, Room: s.room, Message: &msgs[i], User: msgs[i].Author}
			if !s.deliver(ctx, ev) {
				return ctx.Err()
			}
		}
		if len(msgs) < replayPageSize {
			return nil
		}
		after = msgs[len(msgs)-1].ID
	}
}

// deliver sends ev unless it was already delivered; false means the
// subscriber is gone.
func (s *roomStream) deliver(ctx context.Context, ev broker.Event) bool {
	var cursor *string
	if m := ev.Message; m != nil {
		if _, dup := s.seen[m.ID]; dup {
			return true
		}
		s.remember(m.ID)
		c := m.ID.String()
		cursor = &c
	}
	out := &model.RoomEvent{Kind: model.RoomEventKind(ev.Kind), Room: ev.Room, Message: ev.Message, User: &ev.User, Cursor: cursor}
	select {
	case s.out <- out:
		return true
	case <-ctx.Done():
		return false
	}
}

// remember records a delivered id, forgetting the oldest once
// rememberedIDs are kept: constant time, bounded memory.
func (s *roomStream) remember(id store.MessageID) {
	s.seen[id] = struct{}{}
	if len(s.recent) < rememberedIDs {
		s.recent = append(s.recent, id)
		return
	}
	delete(s.seen, s.recent[s.next])
	s.recent[s.next] = id
	s.next = (s.next + 1) % rememberedIDs
}

// fail ends the subscription with err as a GraphQL error.
func (s *roomStream) fail(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return // the client left; nobody to tell
	}
	transport.AddSubscriptionError(ctx, s.r.present(ctx, err))
}
