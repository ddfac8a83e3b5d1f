package chat

import (
	"context"
	"time"

	"github.com/killrchat/chatql/broker"
	"github.com/killrchat/chatql/store"
	"github.com/killrchat/chatql/tracing"
)

// publishEvent hands an event the store logged to the broker, for the
// conversation's live subscribers: a room's or group's, or both parties'
// inboxes for a direct conversation's. The zero event (the store logged
// nothing) is not published.
func (s *Service) publishEvent(ctx context.Context, ev store.Event) {
	if ev.ID.IsZero() {
		return
	}
	if !store.IsDirectConversation(ev.Room) {
		s.publishTo(ctx, broker.RoomTopic(ev.Room), ev)
		return
	}
	a, b := store.DirectParties(ev.Room)
	s.publishTo(ctx, broker.UserTopic(a), ev)
	s.publishTo(ctx, broker.UserTopic(b), ev)
}

// changedMessage returns the message id as a change that logged ev left
// it: the event's, or, when the change logged nothing (an edit older than
// the message's last), as stored.
func (s *Service) changedMessage(ctx context.Context, ev store.Event, id store.MessageID) (*store.Message, error) {
	if ev.Message != nil {
		return ev.Message, nil
	}
	m, err := s.Store.Message(ctx, id)
	if err != nil {
		return nil, err
	}
	return &m, nil
}

// publishTo hands ev to the broker on any topic (a user's inbox topic). The
// write it reports is already stored and logged, so a failed publish only
// delays live delivery until subscribers catch up from the log; it is
// logged, not returned. It publishes even when the request that made the
// write has ended (its client went away): the subscribers have nothing
// else to tell them of the event.
func (s *Service) publishTo(ctx context.Context, topic string, ev store.Event) {
	markPublished(ctx)
	publishing := context.WithoutCancel(ctx)
	var err error
	if tracing.FromContext(ctx) == nil {
		// Untraced, as nearly every publish is: no clock read, and no
		// attributes built (they would be allocated for every event).
		err = s.Broker.Publish(publishing, topic, ev)
	} else {
		start := time.Now()
		err = s.Broker.Publish(publishing, topic, ev)
		tracing.Record(ctx, "broker.publish", tracing.Producer, start, err, tracing.Attr{Key: "chat.topic", Value: topic}, tracing.Attr{Key: "chat.event", Value: string(ev.Kind)})
	}
	if err != nil {
		s.Log.WarnContext(ctx, "publish failed; subscribers will catch up from the log", "topic", topic, "kind", ev.Kind, "err", err)
	}
}

// visibleRooms pages the rooms the caller may see, reading on past others'
// private groups until the page is full or the rooms run out.
func (s *Service) visibleRooms(ctx context.Context, me store.UserRef, after string, limit int) ([]store.Room, error) {
	var page []store.Room
	for len(page) < limit {
		rooms, err := s.Store.Rooms(ctx, after, limit)
		if err != nil {
			return nil, err
		}
		for _, room := range rooms {
			if room.Kind != store.PrivateGroup || room.HasParticipant(me.Login) {
				page = append(page, room)
			}
		}
		if len(rooms) < limit {
			break
		}
		after = rooms[len(rooms)-1].Name
	}
	return page[:min(len(page), limit)], nil
}
