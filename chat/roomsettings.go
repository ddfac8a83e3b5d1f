package chat

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/killrchat/chatql/broker"
	"github.com/killrchat/chatql/ratelimit"
	"github.com/killrchat/chatql/store"
)

// SettingsChange is what a caller asks to change of a room's settings:
// each field given (non-nil) is set.
type SettingsChange struct {
	Banner          *string
	Title           *string
	SlowModeSeconds *int
}

// SetRoomSettings changes the room's banner (its topic), a group's title
// or its slow mode, each as roomRights allows me, logs and publishes
// ROOM_SETTINGS_CHANGED, and returns the room. A change of slow mode drops
// the room's cached memberships on every instance, so the next posts read
// it.
func (s *Service) SetRoomSettings(ctx context.Context, me store.UserRef, room string, c SettingsChange) (*store.Room, error) {
	if err := s.limit(ctx, ratelimit.RoomChange, me); err != nil {
		return nil, err
	}
	m, err := s.visibleMembership(ctx, room, me)
	if err != nil {
		return nil, err
	}
	change := store.RoomSettingsChange{Room: room, By: me, Banner: c.Banner, Title: c.Title}
	if c.SlowModeSeconds != nil {
		if *c.SlowModeSeconds < 0 || *c.SlowModeSeconds > int(store.MaxSlowMode/time.Second) {
			return nil, store.Invalidf("invalid slowModeSeconds: 0 (off) to %d", int(store.MaxSlowMode/time.Second))
		}
		d := time.Duration(*c.SlowModeSeconds) * time.Second
		change.SlowMode = &d
	}
	for _, f := range []struct {
		setting roomSetting
		given   bool
	}{{settingBanner, c.Banner != nil}, {settingTitle, c.Title != nil}, {settingSlowMode, c.SlowModeSeconds != nil}} {
		if f.given {
			if err := mayChange(m, f.setting); err != nil {
				return nil, err
			}
		}
	}
	if err := change.Validate(m.Kind); err != nil {
		return nil, err
	}
	var after store.Room
	_, err = s.inLine(ctx, room, func() (ev store.Event, err error) {
		after, ev, err = s.Store.SetRoomSettings(ctx, change)
		return ev, err
	})
	if err != nil {
		return nil, err
	}
	if change.SlowMode != nil {
		s.membershipEnded(ctx, room, "", nil)
	}
	return &after, nil
}

// PinnedMessage is a pin as its reader sees it: the pin and its message.
type PinnedMessage struct {
	store.Pin
	Message store.Message
}

// pinnable reads the message id of a room or group me takes part in, for
// pinning: the message me reads, and me's membership of its room.
func (s *Service) pinnable(ctx context.Context, me store.UserRef, id string) (store.Message, store.RoomMembership, error) {
	msg, err := s.readableMessage(ctx, id, me)
	if err != nil {
		return store.Message{}, store.RoomMembership{}, err
	}
	if store.IsDirectConversation(msg.Room) {
		return store.Message{}, store.RoomMembership{}, store.Invalidf("invalid message: %s is a direct message; only rooms and groups pin messages", id)
	}
	m, err := s.Store.Membership(ctx, msg.Room, me.Login)
	if err != nil {
		return store.Message{}, store.RoomMembership{}, err
	}
	if err := mayChange(m, settingPins); err != nil {
		return store.Message{}, store.RoomMembership{}, err
	}
	return msg, m, nil
}

// PinMessage pins a message of a room or group to it, as roomRights allows
// me, and publishes MESSAGE_PINNED. A deleted message is not pinned; at
// most store.MaxPins per room.
func (s *Service) PinMessage(ctx context.Context, me store.UserRef, id string) (*store.Message, error) {
	if err := s.limit(ctx, ratelimit.RoomChange, me); err != nil {
		return nil, err
	}
	msg, _, err := s.pinnable(ctx, me, id)
	if err != nil {
		return nil, err
	}
	if msg.Deleted {
		return nil, store.Invalidf("invalid message: %s was deleted", id)
	}
	_, err = s.inLine(ctx, msg.Room, func() (store.Event, error) {
		return s.Store.PinMessage(ctx, msg.Room, store.Pin{Message: msg.ID, By: me, At: s.now()})
	})
	if err != nil {
		return nil, err
	}
	return &msg, nil
}

// UnpinMessage unpins a message, as roomRights allows me, and publishes
// MESSAGE_UNPINNED. Unpinning a message that is not pinned changes
// nothing.
func (s *Service) UnpinMessage(ctx context.Context, me store.UserRef, id string) (*store.Message, error) {
	if err := s.limit(ctx, ratelimit.RoomChange, me); err != nil {
		return nil, err
	}
	msg, _, err := s.pinnable(ctx, me, id)
	if err != nil {
		return nil, err
	}
	_, err = s.inLine(ctx, msg.Room, func() (store.Event, error) {
		return s.Store.UnpinMessage(ctx, msg.Room, msg.ID, me)
	})
	if err != nil {
		return nil, err
	}
	return &msg, nil
}

// Pins are the room's pinned messages that me reads, the newest pin first:
// a message of a group's member outside their windows, a deleted message,
// and a hidden one (but for its author) are not shown pinned. None for who
// may read nothing of the room.
func (s *Service) Pins(ctx context.Context, me store.UserRef, room string) ([]PinnedMessage, error) {
	rd, err := s.reader(ctx, me, room)
	if errors.Is(err, store.ErrForbidden) || errors.Is(err, store.ErrNotFound) {
		return []PinnedMessage{}, nil
	}
	if err != nil {
		return nil, err
	}
	pins, err := s.Store.Pins(ctx, room)
	if err != nil {
		return nil, err
	}
	msgs, err := s.pinnedMessages(ctx, pins)
	if err != nil {
		return nil, err
	}
	shown := []PinnedMessage{}
	for i, p := range pins {
		if msg, found := msgs[i]; found && rd.SeesContent(msg) {
			shown = append(shown, PinnedMessage{Pin: p, Message: msg})
		}
	}
	return shown, nil
}

// pinReads is how many pinned messages Pins reads at once.
const pinReads = 8

// pinnedMessages reads the pinned messages, pinReads at a time (each is a
// partition of its own on Cassandra): by the pin's index, those found.
func (s *Service) pinnedMessages(ctx context.Context, pins []store.Pin) (map[int]store.Message, error) {
	var (
		mu    sync.Mutex
		found = map[int]store.Message{}
		errs  []error
		wg    sync.WaitGroup
		slots = make(chan struct{}, pinReads)
	)
	for i, p := range pins {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			msg, err := s.Store.Message(ctx, p.Message)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				found[i] = msg
			case !errors.Is(err, store.ErrNotFound):
				errs = append(errs, err)
			}
		})
	}
	wg.Wait()
	return found, errors.Join(errs...)
}

// Invite links: defaults and the token's form.
const (
	DefaultInviteUses     = 1
	DefaultInviteLifetime = 7 * 24 * time.Hour
	// invitePrefix starts every token, so that a leaked one is
	// recognisable (secret scanners).
	invitePrefix = "chatinv_"
	// inviteTokenBytes of randomness: 256 bits.
	inviteTokenBytes = 32
)

// NewInvite is a group's new invite link: its token, shown once, and the
// invite as stored.
type NewInvite struct {
	Token  string
	Invite store.Invite
}

// CreateInvite makes an invite link to a private group, as roomRights
// allows me, valid for maxUses joins (nil: DefaultInviteUses) until
// lifetime has passed (nil: DefaultInviteLifetime). Only the token's
// SHA-256 is stored: the token is shown once.
func (s *Service) CreateInvite(ctx context.Context, me store.UserRef, group string, maxUses *int, lifetime *time.Duration) (*NewInvite, error) {
	if err := s.limit(ctx, ratelimit.RoomChange, me); err != nil {
		return nil, err
	}
	m, err := s.visibleMembership(ctx, group, me)
	if err != nil {
		return nil, err
	}
	if err := mayChange(m, settingInvites); err != nil {
		return nil, err
	}
	uses, life := DefaultInviteUses, DefaultInviteLifetime
	if maxUses != nil {
		uses = *maxUses
	}
	if lifetime != nil {
		life = *lifetime
	}
	if uses < 1 || uses > store.MaxInviteUses {
		return nil, store.Invalidf("invalid maxUses: 1 to %d", store.MaxInviteUses)
	}
	if life < time.Minute || life > store.MaxInviteLifetime {
		return nil, store.Invalidf("invalid expiresInSeconds: 60 to %d", int(store.MaxInviteLifetime/time.Second))
	}
	secret := make([]byte, inviteTokenBytes)
	rand.Read(secret) // never fails (crypto/rand)
	token := invitePrefix + base64.RawURLEncoding.EncodeToString(secret)
	now := s.now().UTC().Truncate(time.Millisecond)
	inv := store.Invite{Room: group, Hash: store.InviteHash(token), CreatedBy: me, CreatedAt: now, ExpiresAt: now.Add(life), MaxUses: uses}
	if err := s.Store.CreateInvite(ctx, inv); err != nil {
		return nil, err
	}
	return &NewInvite{Token: token, Invite: inv}, nil
}

// Invites are the group's invite links (without their tokens), for those
// roomRights lets manage them.
func (s *Service) Invites(ctx context.Context, me store.UserRef, group string) ([]store.Invite, error) {
	m, err := s.visibleMembership(ctx, group, me)
	if err != nil {
		return nil, err
	}
	if err := mayChange(m, settingInvites); err != nil {
		return nil, err
	}
	return s.Store.Invites(ctx, group)
}

// RevokeInvite deletes the group's invite link with this id (the hash
// Invites shows), as roomRights allows me.
func (s *Service) RevokeInvite(ctx context.Context, me store.UserRef, group, id string) error {
	if err := s.limit(ctx, ratelimit.RoomChange, me); err != nil {
		return err
	}
	m, err := s.visibleMembership(ctx, group, me)
	if err != nil {
		return err
	}
	if err := mayChange(m, settingInvites); err != nil {
		return err
	}
	return s.Store.RevokeInvite(ctx, group, id)
}

// JoinByInvite adds me to the private group of the invite token, as its
// creator would with AddGroupMember: unless me is banned from the group,
// either blocked the other, the creator no longer moderates it, or the
// invite is expired, used up or revoked. A use is counted (a
// compare-and-set, so racing joins never pass the limit) once every check
// passed; joining a group me is in uses nothing.
func (s *Service) JoinByInvite(ctx context.Context, me store.UserRef, token string) (*store.Room, error) {
	if err := s.limit(ctx, ratelimit.RoomChange, me); err != nil {
		return nil, err
	}
	if !strings.HasPrefix(token, invitePrefix) || len(token) > 100 {
		return nil, store.ErrInviteNotFound
	}
	hash := store.InviteHash(token)
	inv, err := s.Store.Invite(ctx, hash)
	if err != nil {
		return nil, err
	}
	if err := inv.Usable(s.now()); err != nil {
		return nil, err
	}
	group, err := s.Store.Room(ctx, inv.Room)
	if errors.Is(err, store.ErrNotFound) || err == nil && group.CreatedAt.After(inv.CreatedAt) {
		return nil, store.ErrInviteNotFound // of a deleted group, maybe one made again under its name
	}
	if err != nil {
		return nil, err
	}
	if group.HasParticipant(me.Login) {
		return &group, nil
	}
	m, err := s.Store.Membership(ctx, group.Name, me.Login)
	if err != nil {
		return nil, err
	}
	if m.Banned {
		return nil, fmt.Errorf("%w: you are banned from this group", store.ErrForbidden)
	}
	inviter, err := s.Store.Membership(ctx, group.Name, inv.CreatedBy.Login)
	if err != nil {
		return nil, err
	}
	if !inviter.Participant || mayChange(inviter, settingInvites) != nil {
		return nil, fmt.Errorf("%w: whoever made the invite link no longer manages the group's invites", store.ErrForbidden)
	}
	if err := s.mayWriteTo(ctx, me, inv.CreatedBy.Login, "invitations"); err != nil {
		return nil, err
	}
	if err := s.callerMayTakePartInAnother(ctx, me); err != nil {
		return nil, err
	}
	if _, err := s.Store.UseInvite(ctx, hash, s.now()); err != nil {
		return nil, err
	}
	var room store.Room
	joined, err := s.inLine(ctx, group.Name, func() (joined store.Event, err error) {
		room, joined, err = s.Store.AddGroupMember(ctx, group.Name, inv.CreatedBy, me, s.windowStart(), s.addedNotices(group.Name, me.Login, inv.CreatedBy)...)
		return joined, err
	})
	if err != nil {
		return nil, err
	}
	if !joined.ID.IsZero() {
		s.publishTo(ctx, broker.UserTopic(me.Login), store.Event{ID: joined.ID, Kind: store.AddedToGroup, Room: group.Name, User: inv.CreatedBy, Message: joined.Message})
	}
	return &room, nil
}
