package embedded

import (
	"context"
	"fmt"

	"github.com/killrchat/chatql/store"
)

// Moderate checks the action against the room as it is, under the locks of
// the room and of the target's user row and inbox, and writes the change
// with its system message and event in one batch: the compare-and-set
// Cassandra makes with a conditional update, made by holding the room's
// lock, which every join, leave, add and delete of the room takes too.
// Removing or banning a participant takes them out as LeaveRoom (or, from
// a group, LeaveGroup, their window closed at a.At) does.
func (db *DB) Moderate(ctx context.Context, a store.ModerationAction) (store.Event, error) {
	if err := a.Validate(); err != nil {
		return store.Event{}, err
	}
	rk, uk := roomKey(a.Room), userKey(a.Target.Login)
	end, err := db.beginLocked(ctx, rk, uk, inboxPartition(a.Target.Login))
	if err != nil {
		return store.Event{}, err
	}
	defer end()

	room, err := db.room(a.Room)
	if err != nil {
		return store.Event{}, err
	}
	bk := banKey(a.Room, a.Target.Login)
	banned, err := db.has(bk)
	if err != nil {
		return store.Event{}, fmt.Errorf("reading the ban of %q in room %q: %w", a.Target.Login, a.Room, err)
	}
	change, err := a.Check(store.RoomAuthority{
		Creator:     room.Creator.Login,
		Moderators:  len(room.Moderators),
		Moderator:   room.moderates,
		Participant: room.hasParticipant,
		Banned:      func(string) bool { return banned },
	})
	if err != nil || !change {
		return store.Event{}, err
	}

	ev := a.NewEvent()
	b := db.batch()
	switch a.Kind {
	case store.ModeratorAppointed, store.ModeratorDismissed:
		room.setModerator(a.Target, a.Kind == store.ModeratorAppointed)
		b.addMember(room, a.Target.Login)
	case store.ParticipantBanned:
		b.setEmpty(bk)
	case store.ParticipantUnbanned:
		b.delete(bk)
	}
	if a.Removes(room.hasParticipant(a.Target.Login)) {
		room.removeParticipant(a.Target.Login)
		b.delete(memberKey(a.Room, a.Target.Login))
		err = db.leave(b, uk, a.Room)
		if err == nil && store.RoomKind(room.Kind) == store.PrivateGroup {
			room.addFormer(a.Target.Login)
			k := conversationKey(a.Target.Login, a.Room)
			if entry, found, rerr := getRow[conversationRow](db, k); rerr != nil {
				err = fmt.Errorf("reading the inbox of %q: %w", a.Target.Login, rerr)
			} else if found && entry.close(a.At) {
				b.set(k, entry)
			}
		}
	}
	b.set(rk, room)
	if err == nil {
		err = db.addLoggedMessage(b, ev)
	}
	if err != nil {
		b.Close()
		return store.Event{}, err
	}
	if err := b.commit(); err != nil {
		return store.Event{}, fmt.Errorf("writing %s of %q in room %q: %w", a.Kind, a.Target.Login, a.Room, err)
	}
	return ev, nil
}

// Bans lists the room's partition of room_bans.
func (db *DB) Bans(ctx context.Context, room string) ([]string, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	if _, err := db.room(room); err != nil {
		return nil, err
	}
	p := bansPartition(room)
	logins := []string{}
	err = db.scan(ctx, p, p.end(), false, func(k, _ []byte) (bool, error) {
		login, rest, err := parseStr(k[len(p):])
		if err == nil && len(rest) > 0 {
			err = fmt.Errorf("ban key %x has %d bytes after the login", k, len(rest))
		}
		logins = append(logins, login)
		return true, err
	})
	if err != nil {
		return nil, fmt.Errorf("reading the bans of room %q: %w", room, err)
	}
	return logins, nil
}

// notBanned returns ErrForbidden if login is banned from the room.
func (db *DB) notBanned(room, login string) error {
	banned, err := db.has(banKey(room, login))
	switch {
	case err != nil:
		return fmt.Errorf("reading the ban of %q in room %q: %w", login, room, err)
	case banned:
		return fmt.Errorf("%w: %s is banned from room %q", store.ErrForbidden, store.Quote(login), room)
	}
	return nil
}
