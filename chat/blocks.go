package chat

import (
	"context"
	"fmt"

	"github.com/killrchat/chatql/ratelimit"
	"github.com/killrchat/chatql/store"
)

// MutedNotice reports whether ev is the notice of a group post (an
// UNREAD_CHANGED with its message) in a group login muted: a muted
// conversation counts no unread, so its inbox subscription is not told of
// them. One row's read per notice; when it fails, the notice goes (one too
// many beats one lost).
func (s *Service) MutedNotice(ctx context.Context, login string, ev *store.Event) bool {
	if ev.Kind != store.UnreadChanged || ev.Message == nil {
		return false
	}
	muted, err := s.Store.Mutes(ctx, login, ev.Room)
	return err == nil && muted
}

// SetBlock blocks or unblocks login for the caller and returns whom the
// caller blocks now.
func (s *Service) SetBlock(ctx context.Context, me store.UserRef, login string, block bool) ([]store.UserRef, error) {
	err := s.limit(ctx, ratelimit.RoomChange, me)
	if err != nil {
		return nil, err
	}
	if err := store.ValidateLogin(login); err != nil {
		return nil, err
	}
	if login == me.Login {
		return nil, store.Invalidf("invalid login: you cannot block yourself")
	}
	if block {
		var u store.User
		if u, err = s.Store.User(ctx, login); err != nil {
			return nil, err
		}
		err = s.Store.Block(ctx, me.Login, u.UserRef)
	} else {
		err = s.Store.Unblock(ctx, me.Login, login)
	}
	if err != nil {
		return nil, err
	}
	return s.Store.BlockedUsers(ctx, me.Login)
}

// mayWriteTo checks that neither me nor peer blocked the other: a block
// stops direct messages, typing and additions to groups both ways. what
// names what is refused, for the error: "direct messages", say.
func (s *Service) mayWriteTo(ctx context.Context, me store.UserRef, peer, what string) error {
	iBlock, peerBlocks, err := s.Store.BlocksBetween(ctx, me.Login, peer)
	switch {
	case err != nil:
		return err
	case peerBlocks:
		return fmt.Errorf("%w: %s does not accept %s from you", store.ErrForbidden, peer, what)
	case iBlock:
		return fmt.Errorf("%w: you blocked %s; unblock them first", store.ErrForbidden, peer)
	}
	return nil
}

// Mute mutes or unmutes a conversation the caller takes part
// in (unmuting needs no part: a conversation left stays unmutable).
func (s *Service) Mute(ctx context.Context, me store.UserRef, conversation string, muted bool) (bool, error) {
	err := s.limit(ctx, ratelimit.RoomChange, me)
	if err != nil {
		return false, err
	}
	if !muted {
		return false, s.Store.Unmute(ctx, me.Login, conversation)
	}
	if store.IsDirectConversation(conversation) {
		_, err = s.directPeer(ctx, conversation, me)
	} else {
		_, err = s.participant(ctx, conversation, me)
	}
	if err != nil {
		return false, err
	}
	return true, s.Store.Mute(ctx, me.Login, conversation)
}
