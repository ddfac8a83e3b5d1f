package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The kinds of room settings events, each logged in the room's log.
const (
	// RoomSettingsChanged: User changed the room's banner (its topic), a
	// group's title, or the slow mode. Message is the system message that
	// records it, whose id the event shares.
	RoomSettingsChanged EventKind = "ROOM_SETTINGS_CHANGED"
	// MessagePinned: User pinned Message to the room.
	MessagePinned EventKind = "MESSAGE_PINNED"
	// MessageUnpinned: User unpinned Message.
	MessageUnpinned EventKind = "MESSAGE_UNPINNED"
)

// Limits of the room settings.
const (
	MaxTitleLength = 80 // characters of a group's title
	// MaxSlowMode is the longest interval slow mode may set between a
	// member's posts.
	MaxSlowMode = 6 * time.Hour
	// MaxPins bounds a room's pinned messages: they are read whole.
	MaxPins = 50
	// MaxInvites bounds a group's open invite links, read whole to list
	// them.
	MaxInvites = 20
	// MaxInviteUses bounds an invite's use limit; MaxInviteLifetime its
	// expiry.
	MaxInviteUses     = 1000
	MaxInviteLifetime = 30 * 24 * time.Hour
)

// RoomSettingsChange changes a room's settings: each field given (non-nil)
// replaces the stored one, the others are kept.
type RoomSettingsChange struct {
	Room string
	// By is who changes them; the chat core checks they may.
	By UserRef
	// Banner is the line shown under the room's name: its topic.
	Banner *string
	// Title is the name a private group shows instead of its name; empty
	// for none. A public room has none.
	Title *string
	// SlowMode is the least time between two posts of a member (not of a
	// moderator or the creator); zero for none.
	SlowMode *time.Duration
}

// Validate checks the change's fields, for a room of kind.
func (c RoomSettingsChange) Validate(kind RoomKind) error {
	if c.Banner == nil && c.Title == nil && c.SlowMode == nil {
		return Invalidf("invalid settings: give banner, title or slowModeSeconds")
	}
	if c.Banner != nil {
		if err := validateText("banner", *c.Banner, 0, MaxBannerLength, oneLine); err != nil {
			return err
		}
	}
	if c.Title != nil {
		if kind != PrivateGroup {
			return Invalidf("invalid title: only a private group shows a title; a public room is known by its name")
		}
		if err := validateText("title", *c.Title, 0, MaxTitleLength, oneLine); err != nil {
			return err
		}
	}
	if c.SlowMode != nil {
		if *c.SlowMode < 0 || *c.SlowMode > MaxSlowMode || *c.SlowMode%time.Second != 0 {
			return Invalidf("invalid slowModeSeconds: 0 (off) to %d whole seconds", int(MaxSlowMode/time.Second))
		}
	}
	return nil
}

// Apply returns r with the change's fields replaced, and whether any
// changed.
func (c RoomSettingsChange) Apply(r Room) (Room, bool) {
	before := r
	if c.Banner != nil {
		r.Banner = *c.Banner
	}
	if c.Title != nil {
		r.Title = *c.Title
	}
	if c.SlowMode != nil {
		r.SlowMode = *c.SlowMode
	}
	return r, r.Banner != before.Banner || r.Title != before.Title || r.SlowMode != before.SlowMode
}

// Note is the text of the system message that records the change of
// before's settings to after's.
func (c RoomSettingsChange) Note(before, after Room) string {
	var parts []string
	if before.Banner != after.Banner {
		parts = append(parts, "set the topic to "+strconv.Quote(after.Banner))
	}
	if before.Title != after.Title {
		parts = append(parts, "set the title to "+strconv.Quote(after.Title))
	}
	if before.SlowMode != after.SlowMode {
		if after.SlowMode == 0 {
			parts = append(parts, "turned slow mode off")
		} else {
			parts = append(parts, "set slow mode to one post every "+after.SlowMode.String())
		}
	}
	return c.By.Login + " " + strings.Join(parts, ", ")
}

// NewEvent is the RoomSettingsChanged event of the change of before to
// after, with its system message, under a fresh id.
func (c RoomSettingsChange) NewEvent(before, after Room) Event {
	id := NewMessageID()
	m := Message{Room: c.Room, ID: id, Author: c.By, Content: c.Note(before, after), System: true}
	return Event{ID: id, Kind: RoomSettingsChanged, Room: c.Room, User: c.By, Message: &m}
}

// A Pin is a message pinned to a room.
type Pin struct {
	Message MessageID
	By      UserRef
	At      time.Time
}

// An Invite is a link that lets whoever holds its token join a private
// group, until it expires, is used up or is revoked. Only the SHA-256 of
// the token is stored.
type Invite struct {
	Room string
	// Hash is the hex SHA-256 of the token, the invite's id.
	Hash      string
	CreatedBy UserRef
	CreatedAt time.Time
	ExpiresAt time.Time
	// MaxUses is how many joins it allows; Uses how many it made.
	MaxUses int
	Uses    int
}

// InviteHash is the stored form of an invite token.
func InviteHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// Usable reports why the invite lets nobody in at `at`, or nil.
func (inv Invite) Usable(at time.Time) error {
	switch {
	case !at.Before(inv.ExpiresAt):
		return fmt.Errorf("%w: the invite link expired", ErrForbidden)
	case inv.Uses >= inv.MaxUses:
		return fmt.Errorf("%w: the invite link was used as often as it may be", ErrForbidden)
	}
	return nil
}

// PostTooSoon is the refusal of a post in slow mode: the member posted less
// than the room's interval ago, and may post again after RetryAfter.
type PostTooSoon struct {
	Room       string
	RetryAfter time.Duration
}

func (e *PostTooSoon) Error() string {
	return fmt.Sprintf("room %q is in slow mode: you may post again in %s", e.Room, e.RetryAfter.Round(time.Second))
}

// RetryAfterSeconds is RetryAfter in whole seconds, rounded up.
func (e *PostTooSoon) RetryAfterSeconds() int {
	return int((e.RetryAfter + time.Second - 1) / time.Second)
}

// ErrInviteNotFound is the answer to a token no invite has (or had).
var ErrInviteNotFound = fmt.Errorf("invite link: %w", ErrNotFound)

// IsPostTooSoon reports whether err is a slow mode refusal.
func IsPostTooSoon(err error) bool { return errors.As(err, new(*PostTooSoon)) }

// RoomSettings keeps what a room's creator, moderators or members set: its
// settings, its pinned messages, the turns slow mode gives its members, and
// a group's invite links.
type RoomSettings interface {
	// SetRoomSettings applies the change to the room's row, conditional on
	// the room existing (it never resurrects a deleted room), with the
	// system message and RoomSettingsChanged event it logs, and returns the
	// room as it is after it and the event; the zero Event when nothing
	// changed. Returns ErrNotFound if the room does not exist.
	SetRoomSettings(ctx context.Context, c RoomSettingsChange) (Room, Event, error)

	// TakePostTurn records that login posts to the room at `at`, unless
	// their previous turn was less than interval before: then it records
	// nothing and returns a *PostTooSoon. Of two racing turns of one login
	// one is refused (a compare-and-set: an LWT on Cassandra).
	TakePostTurn(ctx context.Context, room, login string, at time.Time, interval time.Duration) error

	// PinMessage pins the message, one of the room's, and logs
	// MessagePinned (a fresh id); pinning a pinned message changes nothing
	// and returns the zero Event. Returns ErrInvalid when the room has
	// MaxPins pins (racing pins may pass it by the few that race), and
	// ErrNotFound if the room does not exist.
	PinMessage(ctx context.Context, room string, p Pin) (Event, error)

	// UnpinMessage unpins the message and logs MessageUnpinned; the zero
	// Event if it was not pinned.
	UnpinMessage(ctx context.Context, room string, message MessageID, by UserRef) (Event, error)

	// Pins returns the room's pins, the newest pin first.
	Pins(ctx context.Context, room string) ([]Pin, error)

	// CreateInvite stores a new invite of its room. Returns ErrInvalid when
	// the room has MaxInvites invites.
	CreateInvite(ctx context.Context, inv Invite) error

	// Invites returns the room's invites, the newest first.
	Invites(ctx context.Context, room string) ([]Invite, error)

	// Invite returns the invite with this hash. Returns ErrNotFound.
	Invite(ctx context.Context, hash string) (Invite, error)

	// UseInvite counts one use of the invite, a compare-and-set of its
	// count (an LWT on Cassandra), so racing joins never pass its limit,
	// and returns it as it is after. Returns ErrNotFound if it was revoked,
	// and Invite.Usable's refusals.
	UseInvite(ctx context.Context, hash string, at time.Time) (Invite, error)

	// RevokeInvite deletes the room's invite. Returns ErrNotFound if the
	// room has no invite with this hash.
	RevokeInvite(ctx context.Context, room, hash string) error
}

// ByNewestPin orders pins the newest first, then by message id.
func ByNewestPin(a, b Pin) int {
	if c := b.At.Compare(a.At); c != 0 {
		return c
	}
	return b.Message.Compare(a.Message)
}

// ByNewestInvite orders invites the newest first, then by hash.
func ByNewestInvite(a, b Invite) int {
	if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
		return c
	}
	return strings.Compare(a.Hash, b.Hash)
}
