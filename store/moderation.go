package store

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// The kinds of moderation events: the changes a room's creator and its
// moderators make to who may take part, each logged in the room's log like
// a join. The event's User is the participant acted on; its Message is the
// system message that records the action, whose Author is who acted (the
// creator or a moderator) and whose id the event shares.
const (
	// ModeratorAppointed: the creator made User, a participant, a
	// moderator.
	ModeratorAppointed EventKind = "MODERATOR_APPOINTED"
	// ModeratorDismissed: the creator made User a plain participant again.
	ModeratorDismissed EventKind = "MODERATOR_DISMISSED"
	// ParticipantRemoved: a moderator (or the creator) removed User from
	// the room; from a private group, which ends User's membership window.
	ParticipantRemoved EventKind = "PARTICIPANT_REMOVED"
	// ParticipantBanned: a moderator (or the creator) banned User's login,
	// removing User from the room if they took part: a banned login cannot
	// join or be added until unbanned.
	ParticipantBanned EventKind = "PARTICIPANT_BANNED"
	// ParticipantUnbanned: a moderator (or the creator) lifted User's ban.
	ParticipantUnbanned EventKind = "PARTICIPANT_UNBANNED"
)

// MaxModerators bounds a room's moderators: they are read with every room.
const MaxModerators = 100

// A ModerationAction is one change a room's creator or moderator makes: its
// Kind is the event it logs.
type ModerationAction struct {
	Room string
	Kind EventKind
	// By acts: the room's creator, or (but for appointing and dismissing
	// moderators) one of its moderators.
	By UserRef
	// Target is the user acted on.
	Target UserRef
	// At is when: the system message's time and, for a member removed or
	// banned from a private group, the end of their window.
	At time.Time
}

// RoomAuthority is what a moderation action is checked against: a room's
// creator, moderators, participants and bans as one read (or one
// conditional write's current values) found them.
type RoomAuthority struct {
	Creator string
	// Moderators is how many moderators the room has.
	Moderators  int
	Moderator   func(login string) bool
	Participant func(login string) bool
	Banned      func(login string) bool
}

// Validate checks the action's own fields, before any read.
func (a ModerationAction) Validate() error {
	switch a.Kind {
	case ModeratorAppointed, ModeratorDismissed, ParticipantRemoved, ParticipantBanned, ParticipantUnbanned:
	default:
		return Invalidf("%s is no moderation action", Quote(string(a.Kind)))
	}
	if a.By.Login == a.Target.Login {
		return Invalidf("a moderator does not act on themselves: leave the room with leaveRoom")
	}
	return nil
}

// Check decides the action against the room as s describes it: whether by
// may take it (ErrForbidden otherwise), whether the target is where it must
// be (ErrNotFound: removing or appointing someone who takes no part), and
// whether it changes anything (appointing a moderator again, banning a
// banned login, lifting a ban there is not, dismissing one who is no
// moderator: no change, and nothing is logged).
//
// The creator appoints and dismisses moderators; the creator and the
// moderators remove, ban and unban; a moderator does not act on another
// moderator, and nobody on the creator.
func (a ModerationAction) Check(s RoomAuthority) (change bool, err error) {
	by, target := a.By.Login, a.Target.Login
	creator := by == s.Creator
	switch {
	case target == s.Creator:
		return false, fmt.Errorf("%w: nobody may act on the creator of room %q", ErrForbidden, a.Room)
	case a.Kind == ModeratorAppointed || a.Kind == ModeratorDismissed:
		if !creator {
			return false, fmt.Errorf("%w: only the creator of room %q appoints and dismisses its moderators", ErrForbidden, a.Room)
		}
	case !creator && !s.Moderator(by):
		return false, fmt.Errorf("%w: only the creator and the moderators of room %q may", ErrForbidden, a.Room)
	case !creator && s.Moderator(target):
		return false, fmt.Errorf("%w: %s is a moderator of room %q: only its creator may act on them", ErrForbidden, Quote(target), a.Room)
	}
	switch a.Kind {
	case ModeratorAppointed:
		if !s.Participant(target) {
			return false, fmt.Errorf("user %s in room %q: %w", Quote(target), a.Room, ErrNotFound)
		}
		if s.Moderator(target) {
			return false, nil
		}
		if s.Moderators >= MaxModerators {
			return false, Invalidf("room %q has %d moderators already, the most it may have", a.Room, MaxModerators)
		}
		return true, nil
	case ModeratorDismissed:
		return s.Moderator(target), nil
	case ParticipantRemoved:
		if !s.Participant(target) {
			return false, fmt.Errorf("user %s in room %q: %w", Quote(target), a.Room, ErrNotFound)
		}
		return true, nil
	case ParticipantBanned:
		return !s.Banned(target), nil
	}
	return s.Banned(target), nil // ParticipantUnbanned
}

// Removes reports whether the action takes the target out of the room,
// given whether they take part now.
func (a ModerationAction) Removes(participant bool) bool {
	return participant && (a.Kind == ParticipantRemoved || a.Kind == ParticipantBanned)
}

// Note is the text of the system message that records the action.
func (a ModerationAction) Note() string {
	by, target := a.By.Login, a.Target.Login
	switch a.Kind {
	case ModeratorAppointed:
		return by + " made " + target + " a moderator"
	case ModeratorDismissed:
		return by + " dismissed " + target + " as a moderator"
	case ParticipantRemoved:
		return by + " removed " + target + " from the room"
	case ParticipantBanned:
		return by + " banned " + target + " from the room"
	}
	return by + " lifted the ban of " + target
}

// NewEvent is the event the action logs, with its system message, under a
// fresh id no earlier than At. A backend makes it after reading the state
// the action is checked against, so that the log orders the action after
// every change that state holds (the join of a participant it removes).
func (a ModerationAction) NewEvent() Event {
	at := time.Now()
	if a.At.After(at) {
		at = a.At
	}
	id := MessageIDAt(at)
	m := Message{Room: a.Room, ID: id, Author: a.By, Content: a.Note(), System: true}
	return Event{ID: id, Kind: a.Kind, Room: a.Room, User: a.Target, Message: &m}
}

// EndsMembership reports whether ev takes login out of its room: their own
// leave, or a moderator removing or banning them. A stream of theirs ends
// with it.
func EndsMembership(ev *Event, login string) bool {
	switch ev.Kind {
	case ParticipantLeft, ParticipantRemoved, ParticipantBanned:
		return ev.User.Login == login
	}
	return false
}

// Moderation keeps what a room's creator and moderators decide.
type Moderation interface {
	// Moderate takes the action, checked by ModerationAction.Check against
	// the room as it is when the write applies: a conditional write of the
	// room's row (on Cassandra, IF creator_login = ? AND participants = ?
	// AND moderators = ?, and the target's ban), retried with the fresh
	// row while others change it, so an action racing a join, a leave,
	// another action or the room's deletion loses nothing and resurrects
	// nothing. A removal or ban of a participant takes them out as a leave
	// does (their rooms; a group's window closes at At and they become a
	// former member) and ends their moderator role; a leave ends it too.
	// The system message and event (see ModerationAction.Event) are
	// written with it. Returns the event, or the zero Event when nothing
	// changed. Returns ErrNotFound if the room does not exist, and Check's
	// errors.
	Moderate(ctx context.Context, a ModerationAction) (Event, error)

	// Bans returns the logins banned from the room, sorted.
	Bans(ctx context.Context, room string) ([]string, error)
}

// Moderates reports whether login is among the room's moderators.
func (r Room) Moderates(login string) bool {
	return slices.ContainsFunc(r.Moderators, func(u UserRef) bool { return u.Login == login })
}
