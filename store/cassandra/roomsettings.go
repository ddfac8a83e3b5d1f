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

var _ store.RoomSettings = (*DB)(nil)

const (
	selectRoomCreator = `SELECT creator_login FROM chat_rooms WHERE room_name = ?`

	selectPostTurn = `SELECT last_post FROM room_post_turns WHERE room_name = ? AND login = ?`
	insertPostTurn = `INSERT INTO room_post_turns (room_name, login, last_post) VALUES (?, ?, ?) IF NOT EXISTS USING TTL ?`
	updatePostTurn = `UPDATE room_post_turns USING TTL ? SET last_post = ? WHERE room_name = ? AND login = ? IF last_post = ?`

	selectPins  = `SELECT message_id, pinned_by, pinned_at FROM room_pins WHERE room_name = ?`
	insertPin   = `INSERT INTO room_pins (room_name, message_id, pinned_by, pinned_at) VALUES (?, ?, ?, ?) IF NOT EXISTS`
	deletePin   = `DELETE FROM room_pins WHERE room_name = ? AND message_id = ? IF EXISTS`
	deletePins  = `DELETE FROM room_pins USING TIMESTAMP ? WHERE room_name = ?`
	deleteTurns = `DELETE FROM room_post_turns USING TIMESTAMP ? WHERE room_name = ?`

	inviteColumns       = `token_hash, room_name, created_by, created_at, expires_at, max_uses, uses`
	insertInvite        = `INSERT INTO group_invites (` + inviteColumns + `) VALUES (?, ?, ?, ?, ?, ?, 0)`
	insertInviteListing = `INSERT INTO group_invites_by_room (room_name, token_hash) VALUES (?, ?)`
	selectInvite        = `SELECT ` + inviteColumns + ` FROM group_invites WHERE token_hash = ?`
	selectInviteHashes  = `SELECT token_hash FROM group_invites_by_room WHERE room_name = ?`
	useInvite           = `UPDATE group_invites SET uses = ? WHERE token_hash = ? IF uses = ?`
	deleteInvite        = `DELETE FROM group_invites WHERE token_hash = ?`
	deleteInviteListing = `DELETE FROM group_invites_by_room WHERE room_name = ? AND token_hash = ?`
	deleteRoomInvites   = `DELETE FROM group_invites_by_room USING TIMESTAMP ? WHERE room_name = ?`
	deleteInviteAt      = `DELETE FROM group_invites USING TIMESTAMP ? WHERE token_hash = ?`
)

// SetRoomSettings reads the room, writes the system message and its event,
// then updates the fields given IF creator_login = ? (the room still
// stands); when the room is gone meanwhile it takes the message back.
// Racing changes of different fields both stand; of one field, the last
// write wins.
func (db *DB) SetRoomSettings(ctx context.Context, c store.RoomSettingsChange) (store.Room, store.Event, error) {
	before, err := db.Room(ctx, c.Room)
	if err != nil {
		return store.Room{}, store.Event{}, err
	}
	if err := c.Validate(before.Kind); err != nil {
		return store.Room{}, store.Event{}, err
	}
	after, changed := c.Apply(before)
	if !changed {
		return before, store.Event{}, nil
	}
	var sets []string
	var args []any
	if c.Banner != nil {
		sets, args = append(sets, "banner = ?", "search_prefixes = ?"), append(args, after.Banner, roomPrefixes(after))
	}
	if c.Title != nil {
		sets, args = append(sets, "title = ?"), append(args, after.Title)
	}
	if c.SlowMode != nil {
		sets, args = append(sets, "slow_mode = ?"), append(args, int(after.SlowMode/time.Second))
	}
	ev := c.NewEvent(before, after)
	if err := db.writeLogged(ctx, *ev.Message, &ev, nil); err != nil {
		return store.Room{}, store.Event{}, fmt.Errorf("cassandra: settings of room %q: %w", c.Room, err)
	}
	stmt := `UPDATE chat_rooms SET ` + strings.Join(sets, ", ") + ` WHERE room_name = ? IF creator_login = ?`
	q := db.query(ctx, stmt, append(args, c.Room, before.Creator.Login)...)
	applied, err := lwt(ctx, q, nil, func(ctx context.Context) (casOutcome, error) {
		got, err := db.readRoom(db.serialRead(ctx, selectRoom, c.Room))
		switch {
		case errors.Is(err, gocql.ErrNotFound):
			return casRejected, nil
		case err != nil:
			return 0, err
		}
		if now, _ := c.Apply(got); now.Banner == got.Banner && now.Title == got.Title && now.SlowMode == got.SlowMode {
			return casApplied, nil
		}
		return casNotApplied, nil
	})
	if errors.Is(err, errOutcomeUnknown) {
		return store.Room{}, store.Event{}, fmt.Errorf("cassandra: settings of room %q: %w", c.Room, err)
	}
	if err != nil || !applied {
		ctx, cancel := detached(ctx)
		defer cancel()
		if uerr := db.unwriteMessage(ctx, *ev.Message, true); uerr != nil {
			err = errors.Join(err, uerr)
		}
		if err != nil {
			return store.Room{}, store.Event{}, fmt.Errorf("cassandra: settings of room %q: %w", c.Room, err)
		}
		return store.Room{}, store.Event{}, fmt.Errorf("room %q: %w", c.Room, store.ErrNotFound)
	}
	return after, ev, nil
}

// TakePostTurn compares and sets the member's last post: IF NOT EXISTS
// when there is none, IF last_post = ? the one read otherwise, with a TTL
// of the interval (a row older than that lets the next post through
// anyway, so it may go). A losing racer reads the winner's post and is
// refused.
func (db *DB) TakePostTurn(ctx context.Context, room, login string, at time.Time, interval time.Duration) error {
	at = at.UTC().Truncate(time.Millisecond)
	ttl := max(1, int((interval+time.Second-1)/time.Second))
	var last time.Time
	err := db.query(ctx, selectPostTurn, room, login).Scan(&last)
	found := err == nil
	if err != nil && !errors.Is(err, gocql.ErrNotFound) {
		return fmt.Errorf("cassandra: read the last post of %q in room %q: %w", login, room, err)
	}
	for range maxCASAttempts {
		if next := last.Add(interval); found && at.Before(next) {
			return &store.PostTooSoon{Room: room, RetryAfter: next.Sub(at)}
		}
		var q *gocql.Query
		if found {
			q = db.query(ctx, updatePostTurn, ttl, at, room, login, last)
		} else {
			q = db.query(ctx, insertPostTurn, room, login, at, ttl)
		}
		var current time.Time
		applied, err := lwt(ctx, q, map[string]any{"last_post": &current}, func(ctx context.Context) (casOutcome, error) {
			var got time.Time
			err := db.serialRead(ctx, selectPostTurn, room, login).Scan(&got)
			switch {
			case errors.Is(err, gocql.ErrNotFound):
				return casNotApplied, nil
			case err != nil:
				return 0, err
			case got.Equal(at):
				return casApplied, nil
			}
			current = got
			return casRejected, nil
		})
		switch {
		case err != nil:
			return fmt.Errorf("cassandra: take a post turn of %q in room %q: %w", login, room, err)
		case applied:
			return nil
		}
		last, found = current, !current.IsZero()
	}
	return fmt.Errorf("cassandra: take a post turn of %q in room %q: the row kept changing, gave up after %d attempts", login, room, maxCASAttempts)
}

// roomStands returns ErrNotFound unless the room exists.
func (db *DB) roomStands(ctx context.Context, room string) error {
	var creator string
	err := db.query(ctx, selectRoomCreator, room).Scan(&creator)
	if errors.Is(err, gocql.ErrNotFound) || err == nil && creator == "" {
		return fmt.Errorf("room %q: %w", room, store.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("cassandra: read room %q: %w", room, err)
	}
	return nil
}

// roomMessage reads a message of the room. Returns ErrNotFound.
func (db *DB) roomMessage(ctx context.Context, room string, id store.MessageID) (store.Message, error) {
	m, err := db.Message(ctx, id)
	if err == nil && m.Room != room {
		err = fmt.Errorf("message %s in room %q: %w", id, room, store.ErrNotFound)
	}
	return m, err
}

// PinMessage inserts the pin IF NOT EXISTS, so of racing pins of one
// message one logs the event, after reading the room's pins for the bound.
func (db *DB) PinMessage(ctx context.Context, room string, p store.Pin) (store.Event, error) {
	if err := db.roomStands(ctx, room); err != nil {
		return store.Event{}, err
	}
	msg, err := db.roomMessage(ctx, room, p.Message)
	if err != nil {
		return store.Event{}, err
	}
	pins, err := db.Pins(ctx, room)
	if err != nil {
		return store.Event{}, err
	}
	if slices.ContainsFunc(pins, func(q store.Pin) bool { return q.Message == p.Message }) {
		return store.Event{}, nil
	}
	if len(pins) >= store.MaxPins {
		return store.Event{}, store.Invalidf("room %q has %d pinned messages, the most it may have: unpin one first", room, store.MaxPins)
	}
	q := db.query(ctx, insertPin, room, gocql.UUID(p.Message), userUDT(p.By), p.At.UTC().Truncate(time.Millisecond))
	applied, err := lwt(ctx, q, nil, func(ctx context.Context) (casOutcome, error) {
		var by userUDT
		err := db.serialRead(ctx, `SELECT pinned_by FROM room_pins WHERE room_name = ? AND message_id = ?`, room, gocql.UUID(p.Message)).Scan(&by)
		switch {
		case errors.Is(err, gocql.ErrNotFound):
			return casNotApplied, nil
		case err != nil:
			return 0, err
		}
		return casApplied, nil
	})
	if err != nil {
		return store.Event{}, fmt.Errorf("cassandra: pin message %s in room %q: %w", p.Message, room, err)
	}
	if !applied {
		return store.Event{}, nil
	}
	return db.logPinEvent(ctx, store.Event{ID: store.NewMessageID(), Kind: store.MessagePinned, Room: room, User: p.By, Message: &msg})
}

// UnpinMessage deletes the pin IF EXISTS, and logs the event if it did.
func (db *DB) UnpinMessage(ctx context.Context, room string, message store.MessageID, by store.UserRef) (store.Event, error) {
	if err := db.roomStands(ctx, room); err != nil {
		return store.Event{}, err
	}
	msg, err := db.roomMessage(ctx, room, message)
	if errors.Is(err, store.ErrNotFound) {
		return store.Event{}, nil // never pinned here: pins are of the room's messages
	}
	if err != nil {
		return store.Event{}, err
	}
	q := db.query(ctx, deletePin, room, gocql.UUID(message))
	applied, err := lwt(ctx, q, nil, func(ctx context.Context) (casOutcome, error) {
		var by userUDT
		err := db.serialRead(ctx, `SELECT pinned_by FROM room_pins WHERE room_name = ? AND message_id = ?`, room, gocql.UUID(message)).Scan(&by)
		if errors.Is(err, gocql.ErrNotFound) {
			return casApplied, nil // gone: ours, or a racing unpin's, either way unpinned
		}
		if err != nil {
			return 0, err
		}
		return casNotApplied, nil
	})
	if err != nil {
		return store.Event{}, fmt.Errorf("cassandra: unpin message %s in room %q: %w", message, room, err)
	}
	if !applied {
		return store.Event{}, nil
	}
	return db.logPinEvent(ctx, store.Event{ID: store.NewMessageID(), Kind: store.MessageUnpinned, Room: room, User: by, Message: &msg})
}

// logPinEvent logs ev in its room's log.
func (db *DB) logPinEvent(ctx context.Context, ev store.Event) (store.Event, error) {
	fo := newFanout(2)
	db.logMessageEvent(ctx, fo, ev)
	if err := fo.Wait(); err != nil {
		return store.Event{}, fmt.Errorf("cassandra: log %s in room %q: %w", ev.Kind, ev.Room, err)
	}
	return ev, nil
}

// Pins reads the room's partition of room_pins.
func (db *DB) Pins(ctx context.Context, room string) ([]store.Pin, error) {
	iter := db.query(ctx, selectPins, room).Iter()
	pins := []store.Pin{}
	var (
		id gocql.UUID
		by userUDT
		at time.Time
	)
	for iter.Scan(&id, &by, &at) {
		pins = append(pins, store.Pin{Message: store.MessageID(id), By: store.UserRef(by), At: at})
	}
	if err := iter.Close(); err != nil {
		return nil, fmt.Errorf("cassandra: read the pins of room %q: %w", room, err)
	}
	slices.SortFunc(pins, store.ByNewestPin)
	return pins, nil
}

// CreateInvite lists the room's invites, deletes those that let nobody in
// any more, and writes the new one and its listing. Racing creations may
// pass MaxInvites by the few that race.
func (db *DB) CreateInvite(ctx context.Context, inv store.Invite) error {
	if err := db.roomStands(ctx, inv.Room); err != nil {
		return err
	}
	invites, err := db.Invites(ctx, inv.Room)
	if err != nil {
		return err
	}
	open := 0
	for _, old := range invites {
		if old.Usable(inv.CreatedAt) == nil {
			open++
		} else if err := db.revokeInvite(ctx, old); err != nil {
			return err
		}
	}
	if open >= store.MaxInvites {
		return store.Invalidf("group %q has %d open invite links, the most it may have: revoke one first", inv.Room, store.MaxInvites)
	}
	if err := db.query(ctx, insertInvite, inv.Hash, inv.Room, userUDT(inv.CreatedBy), inv.CreatedAt.UTC().Truncate(time.Millisecond), inv.ExpiresAt.UTC().Truncate(time.Millisecond), inv.MaxUses).Exec(); err != nil {
		return fmt.Errorf("cassandra: write an invite of room %q: %w", inv.Room, err)
	}
	if err := db.query(ctx, insertInviteListing, inv.Room, inv.Hash).Exec(); err != nil {
		return fmt.Errorf("cassandra: list an invite of room %q: %w", inv.Room, err)
	}
	return nil
}

// Invites reads the room's listing, then each invite.
func (db *DB) Invites(ctx context.Context, room string) ([]store.Invite, error) {
	iter := db.query(ctx, selectInviteHashes, room).Iter()
	var hashes []string
	var hash string
	for iter.Scan(&hash) {
		hashes = append(hashes, hash)
	}
	if err := iter.Close(); err != nil {
		return nil, fmt.Errorf("cassandra: list the invites of room %q: %w", room, err)
	}
	invites := []store.Invite{}
	for _, h := range hashes {
		inv, err := db.readInvite(db.query(ctx, selectInvite, h))
		if errors.Is(err, gocql.ErrNotFound) || err == nil && inv.Room != room {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("cassandra: read an invite of room %q: %w", room, err)
		}
		invites = append(invites, inv)
	}
	slices.SortFunc(invites, store.ByNewestInvite)
	return invites, nil
}

func (db *DB) readInvite(q *gocql.Query) (store.Invite, error) {
	var inv store.Invite
	var by userUDT
	err := q.Scan(&inv.Hash, &inv.Room, &by, &inv.CreatedAt, &inv.ExpiresAt, &inv.MaxUses, &inv.Uses)
	inv.CreatedBy = store.UserRef(by)
	return inv, err
}

// Invite reads the invite's row.
func (db *DB) Invite(ctx context.Context, hash string) (store.Invite, error) {
	inv, err := db.readInvite(db.query(ctx, selectInvite, hash))
	if errors.Is(err, gocql.ErrNotFound) {
		return store.Invite{}, store.ErrInviteNotFound
	}
	if err != nil {
		return store.Invite{}, fmt.Errorf("cassandra: read an invite: %w", err)
	}
	return inv, nil
}

// UseInvite counts a use with UPDATE ... IF uses = ? the count read: of
// racing joins, each applies on a count none of the others did, so the
// count never passes the limit. A revoked invite has no row, and the
// condition fails with no current value.
func (db *DB) UseInvite(ctx context.Context, hash string, at time.Time) (store.Invite, error) {
	inv, err := db.readInvite(db.serialRead(ctx, selectInvite, hash))
	for range maxCASAttempts {
		if errors.Is(err, gocql.ErrNotFound) {
			return store.Invite{}, store.ErrInviteNotFound
		}
		if err != nil {
			return store.Invite{}, fmt.Errorf("cassandra: read an invite: %w", err)
		}
		if err := inv.Usable(at); err != nil {
			return store.Invite{}, err
		}
		var current *int
		q := db.query(ctx, useInvite, inv.Uses+1, hash, inv.Uses)
		applied, lerr := lwt(ctx, q, map[string]any{"uses": &current}, func(ctx context.Context) (casOutcome, error) {
			// A racing use may count past ours; the read-back cannot
			// tell. It reports not applied unless the count is ours.
			got, err := db.readInvite(db.serialRead(ctx, selectInvite, hash))
			switch {
			case errors.Is(err, gocql.ErrNotFound):
				return casRejected, nil
			case err != nil:
				return 0, err
			case got.Uses == inv.Uses+1:
				return casApplied, nil
			}
			return casNotApplied, nil
		})
		if lerr != nil {
			return store.Invite{}, fmt.Errorf("cassandra: count a use of an invite of room %q: %w", inv.Room, lerr)
		}
		if applied {
			inv.Uses++
			return inv, nil
		}
		if current == nil {
			err = gocql.ErrNotFound
			continue
		}
		inv.Uses = *current
	}
	return store.Invite{}, fmt.Errorf("cassandra: count a use of an invite: the count kept changing, gave up after %d attempts", maxCASAttempts)
}

// RevokeInvite deletes the invite and its listing.
func (db *DB) RevokeInvite(ctx context.Context, room, hash string) error {
	inv, err := db.Invite(ctx, hash)
	if err != nil {
		return err
	}
	if inv.Room != room {
		return store.ErrInviteNotFound
	}
	return db.revokeInvite(ctx, inv)
}

func (db *DB) revokeInvite(ctx context.Context, inv store.Invite) error {
	if err := db.query(ctx, deleteInvite, inv.Hash).Exec(); err != nil {
		return fmt.Errorf("cassandra: delete an invite of room %q: %w", inv.Room, err)
	}
	if err := db.query(ctx, deleteInviteListing, inv.Room, inv.Hash).Exec(); err != nil {
		return fmt.Errorf("cassandra: delete the listing of an invite of room %q: %w", inv.Room, err)
	}
	return nil
}

// deleteRoomSettings deletes a deleted room's pins, post turns and
// invites, at the clean-up's time.
func (db *DB) deleteRoomSettings(ctx context.Context, at int64, room string) error {
	iter := db.query(ctx, selectInviteHashes, room).Iter()
	var hash string
	var hashes []string
	for iter.Scan(&hash) {
		hashes = append(hashes, hash)
	}
	if err := iter.Close(); err != nil {
		return fmt.Errorf("list the invites: %w", err)
	}
	for _, h := range hashes {
		if err := db.query(ctx, deleteInviteAt, at, h).Exec(); err != nil {
			return fmt.Errorf("delete an invite: %w", err)
		}
	}
	for _, stmt := range []string{deleteRoomInvites, deletePins, deleteTurns} {
		if err := db.query(ctx, stmt, at, room).Exec(); err != nil {
			return fmt.Errorf("delete the pins, post turns and invites: %w", err)
		}
	}
	return nil
}
