package chat

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
func (s *Service) NewTyping() *presence.Typing {
	return &presence.Typing{Tell: func(ev store.Event) {
		ctx := context.Background()
		if !store.IsDirectConversation(ev.Room) {
			s.publishTo(ctx, broker.RoomTopic(ev.Room), ev)
			return
		}
		peer, other := store.DirectParties(ev.Room)
		if peer == ev.User.Login {
			peer = other
		}
		s.publishTo(ctx, broker.UserTopic(peer), ev)
	}}
}

// Typing starts or stops the caller's typing in a conversation they take
// part in (see the schema).
func (s *Service) Typing(ctx context.Context, me store.UserRef, conversation string, active bool) (bool, error) {
	err := s.limit(ctx, ratelimit.Typing, me)
	if err != nil {
		return false, err
	}
	if !active {
		s.Typists.Stop(conversation, me.Login)
		return false, nil
	}
	if store.IsDirectConversation(conversation) {
		var peer store.User
		if peer, err = s.directPeer(ctx, conversation, me); err == nil {
			err = s.mayWriteTo(ctx, me, peer.Login, "typing notices")
		}
	} else {
		_, err = s.participant(ctx, conversation, me)
	}
	if err != nil {
		return false, err
	}
	s.Typists.Start(conversation, me)
	return true, nil
}
