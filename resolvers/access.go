package resolvers

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/killrchat/chatql/store"
)

// readableMessage returns the message with this id if me may read its
// conversation; otherwise NOT_FOUND, so ids do not reveal what exists.
func (r *Resolver) readableMessage(ctx context.Context, id string, me store.UserRef) (store.Message, error) {
	mid, err := store.ParseMessageID(id)
	if err != nil {
		return store.Message{}, err
	}
	msg, err := r.Store.Message(ctx, mid)
	if err != nil {
		return store.Message{}, err
	}
	if err := r.mayRead(ctx, msg, me); err != nil {
		if errors.Is(err, store.ErrForbidden) || errors.Is(err, store.ErrNotFound) {
			return store.Message{}, fmt.Errorf("message %s: %w", id, store.ErrNotFound)
		}
		return store.Message{}, err
	}
	return msg, nil
}

// mayRead checks that me may read msg: a party of its direct conversation,
// a participant of its public room, or a member of its group at the time it
// was posted. Returns ErrForbidden otherwise.
func (r *Resolver) mayRead(ctx context.Context, msg store.Message, me store.UserRef) error {
	if store.IsDirectConversation(msg.Room) {
		if a, b, _ := strings.Cut(msg.Room, ":"); a == me.Login || b == me.Login {
			return nil
		}
		return store.ErrForbidden
	}
	m, err := r.Store.Membership(ctx, msg.Room, me.Login)
	if err != nil {
		return err
	}
	if m.Kind != store.PrivateGroup {
		if m.Participant {
			return nil
		}
		return store.ErrForbidden
	}
	windows, err := r.groupWindows(ctx, msg.Room, me)
	if err != nil {
		return err
	}
	at := msg.ID.Time()
	for _, w := range windows {
		if !at.Before(w.From) && (w.To.IsZero() || at.Before(w.To)) {
			return nil
		}
	}
	return store.ErrForbidden
}
