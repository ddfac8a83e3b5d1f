package resolvers

import (
	"context"
	"fmt"

	"github.com/killrchat/chatql/broker"
	"github.com/killrchat/chatql/store"
)

// participantRoom reads the room and checks that u takes part in it: only
// participants read and post. Returns ErrNotFound or ErrForbidden.
func (r *Resolver) participantRoom(ctx context.Context, name string, u store.UserRef) (store.Room, error) {
	room, err := r.Store.Room(ctx, name)
	if err != nil {
		return store.Room{}, err
	}
	if !room.HasParticipant(u.Login) {
		return store.Room{}, fmt.Errorf("%w: %s is not a participant of room %q; join it first", store.ErrForbidden, u.Login, name)
	}
	return room, nil
}

// recordMembership stores the system message of a join or leave and
// publishes it as the event of that kind.
func (r *Resolver) recordMembership(ctx context.Context, kind broker.EventKind, room string, u store.UserRef, text string) error {
	msg := store.Message{Room: room, ID: store.NewMessageID(), Author: u, Content: text, System: true}
	if err := r.Store.PostMessage(ctx, msg); err != nil {
		return err
	}
	r.publish(ctx, broker.Event{Kind: kind, Room: room, Message: &msg, User: u})
	return nil
}

// publish hands ev to the broker. The write it reports is already stored,
// so a failed publish only delays live delivery until subscribers resume;
// it is logged, not returned.
func (r *Resolver) publish(ctx context.Context, ev broker.Event) {
	if err := r.Broker.Publish(ctx, broker.RoomTopic(ev.Room), ev); err != nil {
		r.Log.WarnContext(ctx, "publish failed; subscribers will catch up from the store", "room", ev.Room, "kind", ev.Kind, "err", err)
	}
}

// pageSize validates a connection's `first` argument.
func pageSize(first *int, def int) (int, error) {
	if first == nil {
		return def, nil
	}
	if *first < 1 || *first > MaxPageSize {
		return 0, store.Invalidf("invalid first: %d; it must be between 1 and %d", *first, MaxPageSize)
	}
	return *first, nil
}

// parseCursor reads an optional message cursor; nil means "from the newest".
func parseCursor(cursor *string) (store.MessageID, error) {
	if cursor == nil || *cursor == "" {
		return store.MessageID{}, nil
	}
	return store.ParseMessageID(*cursor)
}

// deref reads an optional string argument; absent means empty.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
