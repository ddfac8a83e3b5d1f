package resolvers

import (
	"context"

	"github.com/killrchat/chatql/ratelimit"
	"github.com/killrchat/chatql/store"
)

// react adds or removes the caller's reaction to the message id.
func (r *Resolver) react(ctx context.Context, id, emoji string, add bool) (*store.Message, error) {
	me, err := r.limitedUser(ctx, ratelimit.Post)
	if err != nil {
		return nil, err
	}
	if err := store.ValidateEmoji(emoji); err != nil {
		return nil, err
	}
	msg, err := r.readableMessage(ctx, id, me)
	if err != nil {
		return nil, err
	}
	w := r.beginRoomWrite(ctx, msg.Room)
	defer w.end()
	ev, err := r.Store.React(ctx, msg, me, emoji, add)
	if err != nil {
		return nil, err
	}
	w.publish(ev)
	return &msg, nil
}
