package chat

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/killrchat/chatql/broker"
	"github.com/killrchat/chatql/ratelimit"
	"github.com/killrchat/chatql/store"
)

// CreateRoom stores a new room or private group with me as its creator
// and first participant.
func (s *Service) CreateRoom(ctx context.Context, me store.UserRef, name string, kind store.RoomKind, banner string) (*store.Room, error) {
	if err := s.limit(ctx, ratelimit.RoomChange, me); err != nil {
		return nil, err
	}
	room := store.Room{
		Name:         name,
		Kind:         kind,
		Banner:       banner,
		Creator:      me,
		CreatedAt:    s.now().UTC().Truncate(time.Millisecond), // Cassandra timestamps hold milliseconds
		Participants: []store.UserRef{me},
	}
	if err := room.Validate(); err != nil {
		return nil, err
	}
	if err := s.callerMayTakePartInAnother(ctx, me); err != nil {
		return nil, err
	}
	if err := s.Store.CreateRoom(ctx, room); err != nil {
		return nil, err
	}
	s.publishTo(ctx, broker.UserTopic(me.Login), store.Event{Kind: store.RoomEntered, Room: name, User: me})
	return &room, nil
}

// Join adds me to a public room's participants; a private group takes
// members by AddGroupMember only.
func (s *Service) Join(ctx context.Context, me store.UserRef, room string) (*store.Room, error) {
	if err := s.limit(ctx, ratelimit.RoomChange, me); err != nil {
		return nil, err
	}
	before, err := s.visibleMembership(ctx, room, me)
	if err != nil {
		return nil, err
	}
	if before.Kind == store.PrivateGroup && !before.Participant {
		return nil, fmt.Errorf("%w: %q is a private group: a member must add you with addGroupMember", store.ErrForbidden, room)
	}
	if !before.Participant {
		if err := s.callerMayTakePartInAnother(ctx, me); err != nil {
			return nil, err
		}
	}
	var after store.Room
	joined, err := s.inLine(ctx, room, func() (joined store.Event, err error) {
		after, joined, err = s.Store.JoinRoom(ctx, room, me)
		return joined, err
	})
	if err != nil {
		return nil, err
	}
	if !joined.ID.IsZero() {
		// For the caller's syncs (see Sync).
		s.publishTo(ctx, broker.UserTopic(me.Login), store.Event{Kind: store.RoomEntered, Room: room, User: me, Message: joined.Message})
	}
	return &after, nil
}

// Leave takes me out of a room or group; a group's former member keeps
// reading what was posted while they were in it.
func (s *Service) Leave(ctx context.Context, me store.UserRef, room string) (*store.Room, error) {
	if err := s.limit(ctx, ratelimit.RoomChange, me); err != nil {
		return nil, err
	}
	before, err := s.visibleMembership(ctx, room, me)
	if err != nil {
		return nil, err
	}
	_, err = s.inLine(ctx, room, func() (left store.Event, err error) {
		if before.Kind == store.PrivateGroup {
			left, err = s.Store.LeaveGroup(ctx, room, me, s.now())
		} else {
			left, err = s.Store.LeaveRoom(ctx, room, me)
		}
		s.membershipEnded(ctx, room, me.Login, err)
		return left, err
	})
	return s.roomAfter(ctx, room, err)
}

// roomAfter is the room as a change that ended with err left it.
func (s *Service) roomAfter(ctx context.Context, room string, err error) (*store.Room, error) {
	if err != nil {
		return nil, err
	}
	after, err := s.Store.Room(ctx, room)
	if err != nil {
		return nil, err
	}
	return &after, nil
}

// DeleteRoom deletes a room me created, with its messages and its icon.
func (s *Service) DeleteRoom(ctx context.Context, me store.UserRef, room string) (*store.Room, error) {
	if err := s.limit(ctx, ratelimit.RoomChange, me); err != nil {
		return nil, err
	}
	files, err := s.roomFiles(ctx, room, me)
	if err != nil {
		return nil, err
	}
	var deleted store.Room
	_, err = s.inLine(ctx, room, func() (ev store.Event, err error) {
		deleted, ev, err = s.Store.DeleteRoom(ctx, room, me)
		s.membershipEnded(ctx, room, "", err)
		return ev, err
	})
	if err != nil {
		return nil, err
	}
	s.discardRoomFiles(ctx, files)
	s.dropRoomWebhooks(ctx, room)
	if deleted.Icon != nil {
		s.discardPicture(ctx, *deleted.Icon)
	}
	return &deleted, nil
}

// AddGroupMember adds login to a private group me is a member of, unless
// either blocked the other, and tells them (ADDED_TO_GROUP).
func (s *Service) AddGroupMember(ctx context.Context, me store.UserRef, group, login string) (*store.Room, error) {
	if err := s.limit(ctx, ratelimit.RoomChange, me); err != nil {
		return nil, err
	}
	if err := store.ValidateLogin(login); err != nil {
		return nil, err
	}
	u, err := s.Store.User(ctx, login)
	if err != nil {
		return nil, err
	}
	if err := s.mayWriteTo(ctx, me, login, "additions to groups"); err != nil {
		return nil, err
	}
	if !slices.Contains(u.ChatRooms, group) {
		if err := s.mayTakePartInAnother(u, false); err != nil {
			return nil, err
		}
	}
	var room store.Room
	joined, err := s.inLine(ctx, group, func() (joined store.Event, err error) {
		room, joined, err = s.Store.AddGroupMember(ctx, group, me, u.UserRef, s.windowStart(), s.addedNotices(group, login, me)...)
		return joined, err
	})
	if err != nil {
		return nil, err
	}
	if !joined.ID.IsZero() {
		s.publishTo(ctx, broker.UserTopic(login), store.Event{ID: joined.ID, Kind: store.AddedToGroup, Room: group, User: me, Message: joined.Message})
	}
	return &room, nil
}

// Room is the room called name, if me may see it: any public room, and the
// private groups me is or was in. Others' groups are NOT_FOUND, so names
// do not reveal that a group exists.
func (s *Service) Room(ctx context.Context, me store.UserRef, name string) (store.Room, error) {
	return s.visibleRoom(ctx, name, me)
}

// RoomsNamed reads the rooms with these names that me may see, in the
// order given, passing over those gone (deleted meanwhile) or hidden.
func (s *Service) RoomsNamed(ctx context.Context, me store.UserRef, names []string) ([]store.Room, error) {
	rooms := make([]store.Room, 0, len(names))
	for _, name := range names {
		r, err := s.visibleRoom(ctx, name, me)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		rooms = append(rooms, r)
	}
	return rooms, nil
}

// Rooms pages the rooms me may see, in the store's stable order after the
// room named after.
func (s *Service) Rooms(ctx context.Context, me store.UserRef, after string, limit int) ([]store.Room, error) {
	return s.visibleRooms(ctx, me, after, limit)
}

// ReadMarks are up to n of a room's read marks, for its participants: a
// public room's, and a group's read receipts (see sendReceipt), none for
// a member who sends none. None for others.
func (s *Service) ReadMarks(ctx context.Context, me store.UserRef, room *store.Room, n int) ([]store.ReadMark, error) {
	if m, err := s.Store.Membership(ctx, room.Name, me.Login); err != nil || !m.Participant {
		return []store.ReadMark{}, nil
	}
	if room.Kind == store.PrivateGroup {
		if sends, err := s.sendsReceipts(ctx, me.Login); err != nil || !sends {
			return []store.ReadMark{}, err
		}
	}
	return s.Store.RoomReadMarks(ctx, room.Name, n)
}

// Bans are the room's bans, for its creator and moderators only (nil for
// others, non-nil for them, if empty).
func (s *Service) Bans(ctx context.Context, me store.UserRef, room *store.Room) ([]string, error) {
	if room.Creator.Login != me.Login && !room.Moderates(me.Login) {
		return nil, nil
	}
	bans, err := s.Store.Bans(ctx, room.Name)
	if err == nil && bans == nil {
		bans = []string{}
	}
	return bans, err
}
