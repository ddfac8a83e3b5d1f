package resolvers

import (
	"context"

	"github.com/killrchat/chatql/broker"
	"github.com/killrchat/chatql/presence"
	"github.com/killrchat/chatql/ratelimit"
	"github.com/killrchat/chatql/store"
)

// NewTyping returns the typing tracker of r's instance, which tells a
// room's or group's typing to its subscribers and a direct conversation's
// to the other party's inbox.
func (r *Resolver) NewTyping() *presence.Typing {
	return &presence.Typing{Tell: func(ev store.Event) {
		ctx := context.Background()
		if !store.IsDirectConversation(ev.Room) {
			r.publishTo(ctx, broker.RoomTopic(ev.Room), ev)
			return
		}
		peer, other := store.DirectParties(ev.Room)
		if peer == ev.User.Login {
			peer = other
		}
		r.publishTo(ctx, broker.UserTopic(peer), ev)
	}}
}

// typing starts or stops the caller's typing in a conversation they take
// part in (see the schema).
func (r *Resolver) typing(ctx context.Context, conversation string, active bool) (bool, error) {
	me, err := r.limitedUser(ctx, ratelimit.Typing)
	if err != nil {
		return false, err
	}
	if !active {
		r.Typists.Stop(conversation, me.Login)
		return false, nil
	}
	if store.IsDirectConversation(conversation) {
		var peer store.User
		if peer, err = r.directPeer(ctx, conversation, me); err == nil {
			err = r.mayWriteTo(ctx, me, peer.Login, "typing notices")
		}
	} else {
		_, err = r.participant(ctx, conversation, me)
	}
	if err != nil {
		return false, err
	}
	r.Typists.Start(conversation, me)
	return true, nil
}
