package chat

import (
	"context"
	"errors"
	"slices"

	"github.com/killrchat/chatql/broker"
	"github.com/killrchat/chatql/presence"
	"github.com/killrchat/chatql/store"
)

// Presence limits: how many users one presence query asks about, and how
// many of a room's online participants Room.online lists.
const (
	maxPresenceLogins = 100
	DefaultOnline     = 100
	MaxOnline         = 1000
	// Room.online looks at most maxOnlineScanned participants, by login,
	// asking the registry about onlineChunk at a time (one Redis script
	// each, short enough never to hold Redis up).
	maxOnlineScanned = 10000
	onlineChunk      = 500
)

// NewPresence returns the presence tracker of r's instance on registry: it
// tells each change of a user's state (PRESENCE_CHANGED) to the rooms and
// groups they take part in and to the other user of each of their direct
// conversations: the people who may see it.
func (s *Service) NewPresence(registry presence.Registry) *presence.Tracker {
	return &presence.Tracker{Registry: registry, Log: s.Log, Tell: s.tellPresence}
}

func (s *Service) tellPresence(ctx context.Context, u store.UserRef, online bool) {
	ev := store.Event{Kind: store.PresenceChanged, User: u, Online: online}
	user, err := s.Store.User(ctx, u.Login)
	if err != nil {
		s.Log.WarnContext(ctx, "presence: could not read the user's rooms to tell them", "login", u.Login, "err", err)
		return
	}
	for _, room := range user.ChatRooms {
		ev.Room = room
		s.publishTo(ctx, broker.RoomPresenceTopic(room), ev)
	}
	inbox, err := s.Store.InboxEntries(ctx, u.Login)
	if err != nil {
		s.Log.WarnContext(ctx, "presence: could not read the user's conversations to tell them", "login", u.Login, "err", err)
		return
	}
	for _, c := range inbox {
		if c.Kind == store.DirectConversation {
			ev.Room = c.ID
			s.publishTo(ctx, broker.UserPresenceTopic(c.Peer.Login), ev)
		}
	}
}

// UserName returns login's names for an event about them, or the bare
// login if they cannot be read.
func (s *Service) UserName(ctx context.Context, login string) store.UserRef {
	if u, err := s.Store.User(ctx, login); err == nil {
		return u.UserRef
	}
	return store.UserRef{Login: login}
}

// RoomOnline lists up to n of the room's participants who are online, for
// me if they take part in it (nil otherwise).
func (s *Service) RoomOnline(ctx context.Context, me store.UserRef, room *store.Room, n int) ([]store.UserRef, error) {
	if !room.HasParticipant(me.Login) {
		return nil, nil
	}
	// A request's cost is bounded whatever the room's size: at most
	// maxOnlineScanned participants, onlineChunk per registry call.
	scan := room.Participants[:min(len(room.Participants), maxOnlineScanned)]
	out := []store.UserRef{}
	for len(scan) > 0 && len(out) < n {
		chunk := scan[:min(len(scan), onlineChunk)]
		scan = scan[len(chunk):]
		logins := make([]string, len(chunk))
		for i, p := range chunk {
			logins[i] = p.Login
		}
		flags, err := s.Presence.Online(ctx, logins)
		if err != nil {
			return nil, err
		}
		for i, p := range chunk {
			if flags[i] && len(out) < n {
				out = append(out, p)
			}
		}
	}
	return out, nil
}

// PeerOnline is whether the other user of a direct conversation is online.
func (s *Service) PeerOnline(ctx context.Context, c *store.Conversation) (*bool, error) {
	if c.Kind != store.DirectConversation {
		return nil, nil
	}
	flags, err := s.Presence.Online(ctx, []string{c.Peer.Login})
	if err != nil {
		return nil, err
	}
	return &flags[0], nil
}

// UserPresence is whether a user is online, as one who asked may see it:
// Online is nil for a user they share no room, group or direct
// conversation with.
type UserPresence struct {
	Login  string
	Online *bool
}

// PresenceOf answers me's question of who of logins is online: each
// login's state, for those me shares a room, group or direct conversation
// with.
func (s *Service) PresenceOf(ctx context.Context, me store.UserRef, logins []string) ([]UserPresence, error) {
	if len(logins) == 0 || len(logins) > maxPresenceLogins {
		return nil, store.Invalidf("invalid logins: ask about 1 to %d users", maxPresenceLogins)
	}
	mine, err := s.Store.User(ctx, me.Login)
	if err != nil {
		return nil, err
	}
	out := make([]UserPresence, len(logins))
	var visible []string
	for i, login := range logins {
		out[i].Login = login
		ok, err := s.sharesWith(ctx, mine, login)
		if err != nil {
			return nil, err
		}
		if ok {
			visible = append(visible, login)
		}
	}
	if len(visible) == 0 {
		return out, nil
	}
	flags, err := s.Presence.Online(ctx, visible)
	if err != nil {
		return nil, err
	}
	for i := range out {
		if j := slices.Index(visible, out[i].Login); j >= 0 {
			out[i].Online = &flags[j]
		}
	}
	return out, nil
}

// sharesWith reports whether me shares a room, a group or a direct
// conversation with login (or is login), who may then see me's presence.
func (s *Service) sharesWith(ctx context.Context, me store.User, login string) (bool, error) {
	if login == me.Login {
		return true, nil
	}
	if store.ValidateLogin(login) != nil {
		return false, nil
	}
	other, err := s.Store.User(ctx, login)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, room := range other.ChatRooms {
		if _, ok := slices.BinarySearch(me.ChatRooms, room); ok {
			return true, nil
		}
	}
	_, err = s.Store.Conversation(ctx, me.Login, store.DirectConversationID(me.Login, login))
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}
