package cassandra

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gocql/gocql"
	"github.com/killrchat/chatql/store"
)

const (
	// selectAuthority reads what a moderation action is checked against.
	selectAuthority = `SELECT creator_login, kind, participants, moderators, banned FROM chat_rooms WHERE room_name = ?`
	selectBans      = `SELECT creator_login, banned FROM chat_rooms WHERE room_name = ?`
	reopenWindow    = `UPDATE conversations_by_user SET left_at = left_at - ?` + summaryRow
	// Every moderation action is a compare-and-set of what its check read:
	// the creator, the participants and the moderators, and for a ban or
	// an unban the target's ban.
	moderationCondition = ` WHERE room_name = ? IF creator_login = ? AND participants = ? AND moderators = ?`
)

// Moderate takes the action as a compare-and-set of the room's row (see
// store.Moderation): it reads the room's authority (creator, participants,
// moderators, bans), checks the action against it, writes the system
// message and its event first, as a join does, then applies the change
// under the condition that what the check read still holds. When it does
// not, it takes its writes back and checks again against the current values (the
// room gone, the action no longer allowed or no longer a change end it),
// writing afresh. Removing or banning a member of a private group closes
// their window at a.At before the change, and reopens it if the change
// does not apply; the participant's rooms lose the room after it applies.
//
// An unknown outcome is settled by a serial read: the room gone is
// rejected, the action's effect present (the target a moderator, gone,
// banned...) applied. That effect may be a concurrent identical action's;
// then both log it, as two racing joins may.
func (db *DB) Moderate(ctx context.Context, a store.ModerationAction) (store.Event, error) {
	if err := a.Validate(); err != nil {
		return store.Event{}, err
	}
	var (
		s    roomState
		kind string
	)
	err := db.query(ctx, selectAuthority, a.Room).Scan(&s.creator, &kind, &s.participants, &s.moderators, &s.banned)
	if errors.Is(err, gocql.ErrNotFound) || err == nil && s.creator == "" {
		return store.Event{}, fmt.Errorf("room %q: %w", a.Room, store.ErrNotFound)
	}
	if err != nil {
		return store.Event{}, fmt.Errorf("cassandra: read the moderators of room %q: %w", a.Room, err)
	}
	group := store.RoomKind(kind) == store.PrivateGroup
	var (
		ev              store.Event
		at              time.Time
		written, closed bool
	)
	takeBack := func(err error) error {
		ctx, cancel := detached(ctx)
		defer cancel()
		fo := newFanout(2)
		if written {
			fo.Go(func() error { return db.unwriteMessage(ctx, *ev.Message, true) })
		}
		if closed {
			fo.Go(func() error {
				return db.query(ctx, reopenWindow, []time.Time{at}, a.Target.Login, a.Room, sentinelID).Exec()
			})
		}
		written, closed = false, false
		if uerr := fo.Wait(); uerr != nil {
			err = errors.Join(err, fmt.Errorf("cassandra: take back the writes of %s in room %q: %w", a.Kind, a.Room, uerr))
		}
		return err
	}
	for attempt := 1; ; attempt++ {
		if attempt > maxCASAttempts {
			return store.Event{}, fmt.Errorf("cassandra: %s in room %q: the room kept changing, gave up after %d attempts", a.Kind, a.Room, maxCASAttempts)
		}
		change, err := a.Check(s.authority())
		if err != nil || !change {
			return store.Event{}, err
		}
		// A fresh event each attempt, made after the read of the state
		// it is conditioned on (see store.ModerationAction.NewEvent).
		ev, at = a.NewEvent(), a.At.Truncate(time.Millisecond)
		removes := a.Removes(hasLogin(s.participants, a.Target.Login))
		var extra []func() error
		if removes && group {
			closed = true
			extra = append(extra, func() error {
				return db.query(ctx, closeWindowStmt, []time.Time{at}, a.Target.Login, a.Room, sentinelID).Exec()
			})
		}
		written = true
		if err := db.writeLogged(ctx, *ev.Message, &ev, extra); err != nil {
			return store.Event{}, takeBack(fmt.Errorf("cassandra: %s in room %q: %w", a.Kind, a.Room, err))
		}
		applied, cur, err := db.casRoom(ctx, a.Room, db.moderationUpdate(ctx, a, s, removes, group),
			func(cur roomState) casOutcome { return settleModeration(a, cur) })
		switch {
		case errors.Is(err, errOutcomeUnknown):
			return store.Event{}, fmt.Errorf("cassandra: %s in room %q: %w", a.Kind, a.Room, err)
		case err != nil:
			return store.Event{}, takeBack(fmt.Errorf("cassandra: %s in room %q: %w", a.Kind, a.Room, err))
		case applied && removes:
			if err := db.query(ctx, removeUserRoom, []string{a.Room}, a.Target.Login).Exec(); err != nil {
				return store.Event{}, fmt.Errorf("cassandra: %s in room %q applied, but removing it from user %q failed: %w", a.Kind, a.Room, a.Target.Login, err)
			}
			fallthrough
		case applied:
			return ev, nil
		}
		if err := takeBack(nil); err != nil {
			return store.Event{}, err
		}
		if cur.creator == "" {
			return store.Event{}, fmt.Errorf("room %q: %w", a.Room, store.ErrNotFound)
		}
		if a.Kind != store.ParticipantBanned && a.Kind != store.ParticipantUnbanned {
			cur.banned = s.banned // not in the condition, so not returned: unchanged for this action
		}
		s = cur
	}
}

// moderationUpdate is the conditional update of the room's row that takes
// the action, conditional on the state s it was checked against.
func (db *DB) moderationUpdate(ctx context.Context, a store.ModerationAction, s roomState, removes, group bool) *gocql.Query {
	target := []string{a.Target.Login}
	var sets []string
	var args []any
	switch a.Kind {
	case store.ModeratorAppointed:
		sets, args = append(sets, "moderators = moderators + ?"), append(args, map[string]userUDT{a.Target.Login: userUDT(a.Target)})
	case store.ModeratorDismissed:
		sets, args = append(sets, "moderators = moderators - ?"), append(args, target)
	case store.ParticipantBanned:
		sets, args = append(sets, "banned = banned + ?"), append(args, map[string]time.Time{a.Target.Login: a.At})
	case store.ParticipantUnbanned:
		sets, args = append(sets, "banned = banned - ?"), append(args, target)
	}
	if removes {
		count, fanout := fanoutOf(without(s.participants, a.Target.Login))
		sets = append(sets, "participants = participants - ?", "participant_count = ?", "inbox_fanout = ?", "moderators = moderators - ?")
		args = append(args, elementsOf(s.participants, a.Target.Login), count, fanout, target)
		if group {
			sets, args = append(sets, "former_members = former_members + ?"), append(args, target)
		}
	}
	stmt := "UPDATE chat_rooms SET " + strings.Join(sets, ", ") + moderationCondition
	args = append(args, a.Room, s.creator, s.participants, s.moderators)
	switch a.Kind {
	case store.ParticipantBanned:
		stmt, args = stmt+" AND banned[?] = null", append(args, a.Target.Login)
	case store.ParticipantUnbanned:
		stmt, args = stmt+" AND banned CONTAINS KEY ?", append(args, a.Target.Login)
	}
	return db.query(ctx, stmt, args...)
}

// authority is the state as store.ModerationAction.Check reads it.
func (s roomState) authority() store.RoomAuthority {
	return store.RoomAuthority{
		Creator:     s.creator,
		Moderators:  len(s.moderators),
		Moderator:   func(login string) bool { _, ok := s.moderators[login]; return ok },
		Participant: func(login string) bool { return hasLogin(s.participants, login) },
		Banned:      func(login string) bool { return isBanned(s, login) },
	}
}

// settleModeration judges the state a serial read found after an unknown outcome:
// whether the action's effect is there.
func settleModeration(a store.ModerationAction, cur roomState) casOutcome {
	if cur.creator == "" {
		return casRejected
	}
	_, moderator := cur.moderators[a.Target.Login]
	var done bool
	switch a.Kind {
	case store.ModeratorAppointed:
		done = moderator
	case store.ModeratorDismissed:
		done = !moderator
	case store.ParticipantRemoved:
		done = !hasLogin(cur.participants, a.Target.Login)
	case store.ParticipantBanned:
		done = isBanned(cur, a.Target.Login)
	case store.ParticipantUnbanned:
		done = !isBanned(cur, a.Target.Login)
	}
	if done {
		return casApplied
	}
	return casNotApplied
}

// Bans reads the room's banned logins.
func (db *DB) Bans(ctx context.Context, room string) ([]string, error) {
	var (
		creator string
		banned  map[string]time.Time
	)
	err := db.query(ctx, selectBans, room).Scan(&creator, &banned)
	if errors.Is(err, gocql.ErrNotFound) || err == nil && creator == "" {
		return nil, fmt.Errorf("room %q: %w", room, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("cassandra: read the bans of room %q: %w", room, err)
	}
	logins := make([]string, 0, len(banned))
	for login := range banned {
		logins = append(logins, login)
	}
	slices.Sort(logins)
	return logins, nil
}
