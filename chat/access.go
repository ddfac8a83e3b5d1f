package chat

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/killrchat/chatql/store"
)

// Who may do what, in one vocabulary:
//
//   - a room is visible to a caller who may learn it exists: every public
//     room, and the private groups they are or were a member of. Others'
//     groups are NOT_FOUND, so names reveal nothing.
//   - a participant (a current member of a group) reads, posts and follows
//     the room: participant; the post's audience: postAudience.
//   - a message is readable by the parties of its direct conversation, the
//     participants of its public room, and whoever was a member of its
//     group when it was posted and is not banned from it: the reader's
//     view (readers.go), which mayRead applies.
//   - a room's creator and moderators remove and ban participants
//     (store.ModerationAction.Check) and hide and delete others' messages:
//     mayModerate.
//   - a direct conversation is its two parties': directPeer.
//   - a room's settings (banner, title, slow mode, icon, pins, invite
//     links) are changed by those roomRights names: mayChange.
//
// A room's subscription is the reader's view too (FollowRoom); it checks
// again that the viewer takes part when it catches up after a gap.

// notParticipant is the refusal of someone who does not take part in a
// room: only participants read, post and follow it.
func notParticipant(room string, u store.UserRef) error {
	return fmt.Errorf("%w: %s is not a participant of room %q; join it first", store.ErrForbidden, u.Login, room)
}

// readableMessage returns the message with this id if me may read its
// conversation; otherwise NOT_FOUND, so ids do not reveal what exists.
func (s *Service) readableMessage(ctx context.Context, id string, me store.UserRef) (store.Message, error) {
	mid, err := store.ParseMessageID(id)
	if err != nil {
		return store.Message{}, err
	}
	msg, err := s.Store.Message(ctx, mid)
	if err != nil {
		return store.Message{}, err
	}
	if err := s.mayRead(ctx, msg, me); err != nil {
		if errors.Is(err, store.ErrForbidden) || errors.Is(err, store.ErrNotFound) {
			return store.Message{}, fmt.Errorf("message %s: %w", id, store.ErrNotFound)
		}
		return store.Message{}, err
	}
	return msg, nil
}

// mayRead checks that me may read msg, by me's Reader of its conversation
// (see readers.go). Returns ErrForbidden or ErrNotFound otherwise.
func (s *Service) mayRead(ctx context.Context, msg store.Message, me store.UserRef) error {
	r, err := s.reader(ctx, me, msg.Room)
	if err != nil {
		return err
	}
	if !r.Sees(msg) {
		return fmt.Errorf("%w: %s was not a member of %q when message %s was posted", store.ErrForbidden, me.Login, msg.Room, msg.ID)
	}
	return nil
}

// participant checks that u takes part in the room, from the room's
// membership (Store.Membership): one small read whatever the room's size.
// Returns ErrNotFound or ErrForbidden.
func (s *Service) participant(ctx context.Context, name string, u store.UserRef) (store.RoomMembership, error) {
	m, err := s.Store.Membership(ctx, name, u.Login)
	if err != nil {
		return store.RoomMembership{}, err
	}
	if !m.Participant {
		return store.RoomMembership{}, notParticipant(name, u)
	}
	return m, nil
}

// directPeer returns the other party of the direct conversation with this
// id, if me is one of its parties and the other exists; otherwise
// NOT_FOUND, so ids reveal nothing.
func (s *Service) directPeer(ctx context.Context, conversation string, me store.UserRef) (store.User, error) {
	a, b := store.DirectParties(conversation)
	peer := a
	switch me.Login {
	case a:
		peer = b
	case b:
	default:
		return store.User{}, fmt.Errorf("conversation %q: %w", conversation, store.ErrNotFound)
	}
	if store.DirectConversationID(a, b) != conversation || peer == me.Login || store.ValidateLogin(peer) != nil {
		return store.User{}, fmt.Errorf("conversation %q: %w", conversation, store.ErrNotFound)
	}
	return s.Store.User(ctx, peer)
}

// postAudience checks that u may post to the room, as participant does,
// and returns its kind and, for a private group, the members whose inboxes
// the post goes to. Only a group's post needs them, so only a group's
// costs a read of the whole room (made after the membership read, and
// checked again by it). A public room's membership that allows posting is
// cached (see Memberships): the next posts read nothing. slow is the
// room's slow mode for u: zero for its creator and moderators.
func (s *Service) postAudience(ctx context.Context, name string, u store.UserRef) (kind store.RoomKind, members []store.UserRef, slow time.Duration, err error) {
	known, epoch := s.knownPoster(name, u.Login)
	if known {
		return store.PublicRoom, nil, 0, nil // the cache holds no room in slow mode
	}
	m, err := s.participant(ctx, name, u)
	if err == nil {
		s.rememberMembership(epoch, m)
	}
	if err == nil && !m.Moderates() {
		slow = m.SlowMode
	}
	if err != nil || m.Kind != store.PrivateGroup {
		return m.Kind, nil, slow, err
	}
	group, err := s.Store.Room(ctx, name)
	if err != nil {
		return "", nil, 0, err
	}
	if !group.HasParticipant(u.Login) {
		return "", nil, 0, notParticipant(name, u)
	}
	return group.Kind, group.Participants, slow, nil
}

// visibleRoom reads a room the caller may see: any public room, and the
// private groups they are in. Others' groups are NOT_FOUND, so names do not
// reveal that a group exists.
func (s *Service) visibleRoom(ctx context.Context, name string, me store.UserRef) (store.Room, error) {
	room, err := s.Store.Room(ctx, name)
	if err != nil {
		return store.Room{}, err
	}
	if err := s.checkVisible(ctx, name, room.Kind, room.HasParticipant(me.Login), nil, me); err != nil {
		return store.Room{}, err
	}
	return room, nil
}

// visibleMembership is visibleRoom for callers that need the room's kind
// and whether me takes part, not the room: it reads the membership only.
func (s *Service) visibleMembership(ctx context.Context, name string, me store.UserRef) (store.RoomMembership, error) {
	m, err := s.Store.Membership(ctx, name, me.Login)
	if err != nil {
		return store.RoomMembership{}, err
	}
	if err := s.checkVisible(ctx, name, m.Kind, m.Participant, &m.Banned, me); err != nil {
		return store.RoomMembership{}, err
	}
	return m, nil
}

// checkVisible is the rule of visibleRoom: a private group me is not in is
// NOT_FOUND unless me has its inbox entry (a former member) and was not
// banned from it (a banned user reads nothing of the group, its members
// included).
// banned is whether me is banned from it, if the caller read it already
// (nil: read it here, when it matters).
func (s *Service) checkVisible(ctx context.Context, name string, kind store.RoomKind, participant bool, banned *bool, me store.UserRef) error {
	if kind != store.PrivateGroup || participant {
		return nil
	}
	if _, err := s.Store.Conversation(ctx, me.Login, name); err != nil {
		return fmt.Errorf("room %q: %w", name, store.ErrNotFound)
	}
	if banned == nil {
		m, err := s.Store.Membership(ctx, name, me.Login)
		if err != nil {
			return err
		}
		banned = &m.Banned
	}
	if *banned {
		return fmt.Errorf("room %q: %w", name, store.ErrNotFound)
	}
	return nil
}

// mayModerate checks that me may hide or delete msg (the verb says which,
// for the error): its author may, and in a room or group its creator and
// its moderators.
func (s *Service) mayModerate(ctx context.Context, msg store.Message, me store.UserRef, verb string) error {
	if msg.Author.Login == me.Login {
		return nil
	}
	if !store.IsDirectConversation(msg.Room) {
		m, err := s.Store.Membership(ctx, msg.Room, me.Login)
		if err == nil && m.Moderates() {
			return nil
		}
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	return fmt.Errorf("%w: only the author, or the room's creator or a moderator, may %s a message", store.ErrForbidden, verb)
}

// replyRoot returns the root of the thread a reply in the conversation
// joins: the message replyTo names, which me must be able to read, or that
// message's own root; and the author of the message replied to, who is told
// of the reply. Nil replyTo: no thread, the zero id.
func (s *Service) replyRoot(ctx context.Context, replyTo *string, conversation string, me store.UserRef) (root store.MessageID, parentAuthor string, err error) {
	if replyTo == nil {
		return store.MessageID{}, "", nil
	}
	parent, err := s.readableMessage(ctx, *replyTo, me)
	if err != nil {
		return store.MessageID{}, "", err
	}
	switch {
	case parent.Room != conversation:
		return store.MessageID{}, "", store.Invalidf("invalid replyTo: message %s is in another conversation", *replyTo)
	case parent.Deleted:
		return store.MessageID{}, "", fmt.Errorf("message %s was deleted: %w", *replyTo, store.ErrNotFound)
	case parent.System:
		return parent.ID, "", nil
	case !parent.ReplyTo.IsZero():
		return parent.ReplyTo, parent.Author.Login, nil
	}
	return parent.ID, parent.Author.Login, nil
}

// DefaultMaxRoomsPerUser is how many rooms and groups a user may take part
// in at once. Every room a user is in costs each of their inbox reads an
// unread count and each of their presence changes a publish: the cap bounds
// what one user's requests cost the server.
const DefaultMaxRoomsPerUser = 1000

// roomsPerUser is the cap in force.
func (s *Service) roomsPerUser() int {
	if s.MaxRoomsPerUser > 0 {
		return s.MaxRoomsPerUser
	}
	return DefaultMaxRoomsPerUser
}

// mayTakePartInAnother refuses u a room more when they take part in as
// many as a user may (BAD_USER_INPUT): who is the caller, or the member a
// group adds. Joins racing each other may pass the cap by the few a user's
// rate limit lets through at once.
func (s *Service) mayTakePartInAnother(u store.User, caller bool) error {
	if n := s.roomsPerUser(); len(u.ChatRooms) >= n {
		if caller {
			return store.Invalidf("you take part in %d rooms and groups, the most a user may: leave one first", n)
		}
		return store.Invalidf("%s takes part in %d rooms and groups, the most a user may", u.Login, n)
	}
	return nil
}

// callerMayTakePartInAnother is mayTakePartInAnother for the caller, whose
// rooms it reads.
func (s *Service) callerMayTakePartInAnother(ctx context.Context, me store.UserRef) error {
	u, err := s.Store.User(ctx, me.Login)
	if err != nil {
		return err
	}
	return s.mayTakePartInAnother(u, true)
}

// A roomSetting is something about a room its members may change, some of
// them: roomRights says who.
type roomSetting string

// The settings of a room.
const (
	settingBanner   roomSetting = "banner"
	settingTitle    roomSetting = "title"
	settingSlowMode roomSetting = "slow mode"
	settingIcon     roomSetting = "icon"
	settingPins     roomSetting = "pinned messages"
	settingInvites  roomSetting = "invite links"
)

// Who may change a setting: any participant, or its creator and
// moderators only.
type changers int

const (
	anyParticipant changers = iota + 1
	moderators
)

// roomRights is the one table of who may change what, by kind of room. A
// public room is open to anyone, so its look and its pins are its
// moderators'; a private group's members add members, and so share its
// look and pins. Slow mode limits the members, and invite links let
// strangers in: both are the moderators' in either kind. A public room has
// no title (its name is its title) and no invite links (anyone may join).
//
// Two roles, creator and moderators, are enough for this table: every
// setting is either everyone's or the moderators', and the creator's own
// powers (deleting the room, appointing moderators) are single. A new role
// would be a new value of changers here.
var roomRights = map[roomSetting]map[store.RoomKind]changers{
	settingBanner:   {store.PublicRoom: moderators, store.PrivateGroup: anyParticipant},
	settingTitle:    {store.PrivateGroup: anyParticipant},
	settingSlowMode: {store.PublicRoom: moderators, store.PrivateGroup: moderators},
	settingIcon:     {store.PublicRoom: moderators, store.PrivateGroup: anyParticipant},
	settingPins:     {store.PublicRoom: moderators, store.PrivateGroup: anyParticipant},
	settingInvites:  {store.PrivateGroup: moderators},
}

// mayChange checks that the member m may change the setting of their room
// (roomRights): FORBIDDEN otherwise, BAD_USER_INPUT for a setting the
// room's kind does not have.
func mayChange(m store.RoomMembership, setting roomSetting) error {
	who, ok := roomRights[setting][m.Kind]
	switch {
	case !ok && m.Kind == store.PrivateGroup:
		return store.Invalidf("a private group has no %s", setting)
	case !ok:
		return store.Invalidf("a public room has no %s", setting)
	case who == moderators && !m.Moderates():
		return fmt.Errorf("%w: only the creator and moderators of %q may change its %s", store.ErrForbidden, m.Room, setting)
	case who == moderators:
		return nil // the creator moderates whether or not they take part, as in moderation
	case !m.Participant:
		return fmt.Errorf("%w: only the members of %q may change its %s", store.ErrForbidden, m.Room, setting)
	}
	return nil
}
