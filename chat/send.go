package chat

import (
	"context"
	"errors"

	"github.com/killrchat/chatql/store"
)

// sendOnce stores and publishes msg with send, unless the caller's
// clientMessageId names a message already: then it returns that message,
// stores nothing and publishes its live event again with announce. A name
// whose message is missing is a first send that did not finish (it
// failed, or the server died, after the claim): the retry finishes it
// under the claimed id, and the store's writes, all idempotent, make two
// racing finishes one message.
//
// The event is published again because the first send may have stored
// the message and died before its event left the instance: nobody
// following live would ever get it, since nothing tells them of a gap.
// Subscribers who did get it drop the repeat by its id.
func (s *Service) sendOnce(ctx context.Context, clientMessageID *string, msg store.Message, send func(*store.Message) error, announce func(store.Message)) (*store.Message, error) {
	if clientMessageID != nil {
		if err := store.ValidateClientMessageID(*clientMessageID); err != nil {
			return nil, err
		}
		prior, claimed, err := s.Store.ClaimClientMessage(ctx, msg.Author.Login, *clientMessageID, store.ClientMessage{Room: msg.Room, ID: msg.ID})
		if err != nil {
			return nil, err
		}
		if !claimed {
			if prior.Room != msg.Room {
				return nil, store.Invalidf("invalid clientMessageId: %q names your message in another conversation", *clientMessageID)
			}
			stored, err := s.Store.Message(ctx, prior.ID)
			if err == nil {
				announce(stored)
				return &stored, nil
			}
			if !errors.Is(err, store.ErrNotFound) {
				return nil, err
			}
			msg.ID = prior.ID
		}
	}
	if err := send(&msg); err != nil {
		return nil, err
	}
	return &msg, nil
}
