package resolvers

import (
	"context"
	"time"

	"github.com/killrchat/chatql/auth"
	"github.com/killrchat/chatql/ratelimit"
	"github.com/killrchat/chatql/store"
)

// moderate takes a moderation action of the caller's on login in the room
// (a room they may see: others' groups are NOT_FOUND), publishes its event,
// and returns the room as it is after it. The store checks the caller's
// rights (store.ModerationAction.Check) as the change applies.
func (r *Resolver) moderate(ctx context.Context, room, login string, kind store.EventKind) (*store.Room, error) {
	me, err := r.limitedUser(ctx, ratelimit.RoomChange)
	if err != nil {
		return nil, err
	}
	if err := store.ValidateLogin(login); err != nil {
		return nil, err
	}
	if _, err := r.visibleMembership(ctx, room, me); err != nil {
		return nil, err
	}
	target, err := r.Store.User(ctx, login)
	if err != nil {
		return nil, err
	}
	w := r.beginRoomWrite(ctx, room)
	defer w.end()
	a := store.ModerationAction{Room: room, Kind: kind, By: me, Target: target.UserRef, At: time.Now().UTC()}
	ev, err := r.Store.Moderate(ctx, a)
	if kind == store.ParticipantRemoved || kind == store.ParticipantBanned {
		r.membershipEnded(ctx, room, login, err)
	}
	if err != nil {
		return nil, err
	}
	w.publish(ev)
	after, err := r.Store.Room(ctx, room)
	if err != nil {
		return nil, err
	}
	return &after, nil
}

// roomBans is Room.banned: the room's bans, for its creator and moderators
// only (null for others).
func (r *Resolver) roomBans(ctx context.Context, room *store.Room) ([]string, error) {
	me, err := auth.UserFrom(ctx)
	if err != nil {
		return nil, err
	}
	if room.Creator.Login != me.Login && !room.Moderates(me.Login) {
		return nil, nil
	}
	return r.Store.Bans(ctx, room.Name)
}

// actorOf is RoomEvent.by: who took a moderation action, the author of the
// system message that records it; nil for other events.
func actorOf(ev *store.Event) *store.UserRef {
	switch ev.Kind {
	case store.ModeratorAppointed, store.ModeratorDismissed, store.ParticipantRemoved, store.ParticipantBanned, store.ParticipantUnbanned:
		if ev.Message != nil {
			return &ev.Message.Author
		}
	}
	return nil
}
