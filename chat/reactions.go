package chat

import (
	"context"

	"github.com/killrchat/chatql/ratelimit"
	"github.com/killrchat/chatql/store"
)

// React adds or removes the caller's reaction to the message id.
func (s *Service) React(ctx context.Context, me store.UserRef, id, emoji string, add bool) (*store.Message, error) {
	if err := s.limit(ctx, ratelimit.Post, me); err != nil {
		return nil, err
	}
	if err := store.ValidateEmoji(emoji); err != nil {
		return nil, err
	}
	msg, err := s.readableMessage(ctx, id, me)
	if err != nil {
		return nil, err
	}
	if _, err := s.inLine(ctx, msg.Room, func() (store.Event, error) { return s.Store.React(ctx, msg, me, emoji, add) }); err != nil {
		return nil, err
	}
	return &msg, nil
}
