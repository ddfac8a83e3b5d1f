package resolvers

import (
	"context"
	"fmt"

	"github.com/killrchat/chatql/auth"
	"github.com/killrchat/chatql/ratelimit"
	"github.com/killrchat/chatql/store"
)

// isMuted reports whether the caller muted the conversation: from the
// operation's set of them (one read per query), or in a subscription, one
// row's read.
func (r *Resolver) isMuted(ctx context.Context, conversation string) (bool, error) {
	me, err := auth.UserFrom(ctx)
	if err != nil {
		return false, err
	}
	if l := loaderOf(ctx); l != nil && l.muted != nil {
		muted, err := l.muted.get(func() ([]string, error) { return r.Store.Muted(ctx, me.Login) })
		return muted[conversation], err
	}
	return r.Store.Mutes(ctx, me.Login, conversation)
}

// mutedNotice reports whether ev is the notice of a group post (an
// UNREAD_CHANGED with its message) in a group login muted: a muted
// conversation counts no unread, so its inbox subscription is not told of
// them. One row's read per notice; when it fails, the notice goes (one too
// many beats one lost).
func (r *Resolver) mutedNotice(ctx context.Context, login string, ev *store.Event) bool {
	if ev.Kind != store.UnreadChanged || ev.Message == nil {
		return false
	}
	muted, err := r.Store.Mutes(ctx, login, ev.Room)
	return err == nil && muted
}

// authorBlocked reports whether the caller blocked m's author, as isMuted
// reads mutes; nil in a shared subscription encoding, which has no caller.
func (r *Resolver) authorBlocked(ctx context.Context, m *store.Message) (*bool, error) {
	viewer := viewerOf(ctx)
	if viewer == "" {
		return nil, nil
	}
	var blocked bool
	if l := loaderOf(ctx); l != nil && l.blocked != nil {
		set, err := l.blocked.get(func() ([]string, error) {
			users, err := r.Store.BlockedUsers(ctx, viewer)
			logins := make([]string, len(users))
			for i, u := range users {
				logins[i] = u.Login
			}
			return logins, err
		})
		if err != nil {
			return nil, err
		}
		blocked = set[m.Author.Login]
	} else {
		var err error
		if blocked, err = r.Store.Blocks(ctx, viewer, m.Author.Login); err != nil {
			return nil, err
		}
	}
	return &blocked, nil
}

// setBlock blocks or unblocks login for the caller and returns whom the
// caller blocks now.
func (r *Resolver) setBlock(ctx context.Context, login string, block bool) ([]store.UserRef, error) {
	me, err := r.limitedUser(ctx, ratelimit.RoomChange)
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
		if u, err = r.Store.User(ctx, login); err != nil {
			return nil, err
		}
		err = r.Store.Block(ctx, me.Login, u.UserRef)
	} else {
		err = r.Store.Unblock(ctx, me.Login, login)
	}
	if err != nil {
		return nil, err
	}
	return r.Store.BlockedUsers(ctx, me.Login)
}

// mayWriteTo checks that neither me nor peer blocked the other: a block
// stops direct messages, typing and additions to groups both ways. what
// names what is refused, for the error: "direct messages", say.
func (r *Resolver) mayWriteTo(ctx context.Context, me store.UserRef, peer, what string) error {
	iBlock, peerBlocks, err := r.Store.BlocksBetween(ctx, me.Login, peer)
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

// muteConversation mutes or unmutes a conversation the caller takes part
// in (unmuting needs no part: a conversation left stays unmutable).
func (r *Resolver) muteConversation(ctx context.Context, conversation string, muted bool) (bool, error) {
	me, err := r.limitedUser(ctx, ratelimit.RoomChange)
	if err != nil {
		return false, err
	}
	if !muted {
		return false, r.Store.Unmute(ctx, me.Login, conversation)
	}
	if store.IsDirectConversation(conversation) {
		_, err = r.directPeer(ctx, conversation, me)
	} else {
		_, err = r.participant(ctx, conversation, me)
	}
	if err != nil {
		return false, err
	}
	return true, r.Store.Mute(ctx, me.Login, conversation)
}
