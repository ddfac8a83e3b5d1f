package chat

import (
	"context"
	"time"

	"github.com/killrchat/chatql/ratelimit"
	"github.com/killrchat/chatql/store"
)

// Moderate takes a moderation action of the caller's on login in the room
// (a room they may see: others' groups are NOT_FOUND), publishes its event,
// and returns the room as it is after it. The store checks the caller's
// rights (store.ModerationAction.Check) as the change applies.
func (s *Service) Moderate(ctx context.Context, me store.UserRef, room, login string, kind store.EventKind) (*store.Room, error) {
	if err := s.limit(ctx, ratelimit.RoomChange, me); err != nil {
		return nil, err
	}
	if err := store.ValidateLogin(login); err != nil {
		return nil, err
	}
	if _, err := s.visibleMembership(ctx, room, me); err != nil {
		return nil, err
	}
	target, err := s.Store.User(ctx, login)
	if err != nil {
		return nil, err
	}
	a := store.ModerationAction{Room: room, Kind: kind, By: me, Target: target.UserRef, At: time.Now().UTC()}
	_, err = s.inLine(ctx, room, func() (store.Event, error) {
		ev, err := s.Store.Moderate(ctx, a)
		if kind == store.ParticipantRemoved || kind == store.ParticipantBanned {
			s.membershipEnded(ctx, room, login, err)
		}
		return ev, err
	})
	return s.roomAfter(ctx, room, err)
}
