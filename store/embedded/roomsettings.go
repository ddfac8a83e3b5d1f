package embedded

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/killrchat/chatql/store"
)

var _ store.RoomSettings = (*DB)(nil)

// SetRoomSettings applies the change to the room's row under its lock,
// with the header row of its members (which carries the slow mode to
// Membership) and the system message and event, in one batch.
func (db *DB) SetRoomSettings(ctx context.Context, c store.RoomSettingsChange) (store.Room, store.Event, error) {
	rk := roomKey(c.Room)
	end, err := db.beginLocked(ctx, rk)
	if err != nil {
		return store.Room{}, store.Event{}, err
	}
	defer end()
	row, err := db.room(c.Room)
	if err != nil {
		return store.Room{}, store.Event{}, err
	}
	if err := c.Validate(store.RoomKind(row.Kind)); err != nil {
		return store.Room{}, store.Event{}, err
	}
	before := row.room()
	after, changed := c.Apply(before)
	if !changed {
		return before, store.Event{}, nil
	}
	row.Banner, row.Title, row.SlowMode = after.Banner, after.Title, after.SlowMode
	ev := c.NewEvent(before, after)
	b := db.batch()
	b.set(rk, row)
	b.indexRoom(row)
	b.set(membersPartition(c.Room), row.headerRow())
	if err := db.addLoggedMessage(b, ev); err != nil {
		b.Close()
		return store.Room{}, store.Event{}, err
	}
	if err := b.commit(); err != nil {
		return store.Room{}, store.Event{}, fmt.Errorf("writing the settings of room %q: %w", c.Room, err)
	}
	return after, ev, nil
}

// postTurnRow is a member's last post in a room in slow mode.
type postTurnRow struct {
	At time.Time `json:"at"`
}

// TakePostTurn compares and sets the member's last post under its row's
// lock.
func (db *DB) TakePostTurn(ctx context.Context, room, login string, at time.Time, interval time.Duration) error {
	k := postTurnKey(room, login)
	end, err := db.beginLocked(ctx, k)
	if err != nil {
		return err
	}
	defer end()
	row, found, err := getRow[postTurnRow](db, k)
	if err != nil {
		return fmt.Errorf("reading the last post of %q in room %q: %w", login, room, err)
	}
	if next := row.At.Add(interval); found && at.Before(next) {
		return &store.PostTooSoon{Room: room, RetryAfter: next.Sub(at)}
	}
	b := db.batch()
	b.set(k, postTurnRow{At: at.UTC()})
	if err := b.commit(); err != nil {
		return fmt.Errorf("writing the last post of %q in room %q: %w", login, room, err)
	}
	return nil
}

// pinRow is a row of room_pins.
type pinRow struct {
	By userRef   `json:"by"`
	At time.Time `json:"at"`
}

// PinMessage writes the pin and its event in one batch under the room's
// lock, which DeleteRoom takes too, so a pin never outlives its room.
func (db *DB) PinMessage(ctx context.Context, room string, p store.Pin) (store.Event, error) {
	rk := roomKey(room)
	end, err := db.beginLocked(ctx, rk, pinsPartition(room))
	if err != nil {
		return store.Event{}, err
	}
	defer end()
	if _, err := db.room(room); err != nil {
		return store.Event{}, err
	}
	msg, err := db.roomMessage(room, p.Message)
	if err != nil {
		return store.Event{}, err
	}
	pins, err := db.pins(ctx, room)
	if err != nil {
		return store.Event{}, err
	}
	if slices.ContainsFunc(pins, func(q store.Pin) bool { return q.Message == p.Message }) {
		return store.Event{}, nil
	}
	if len(pins) >= store.MaxPins {
		return store.Event{}, store.Invalidf("room %q has %d pinned messages, the most it may have: unpin one first", room, store.MaxPins)
	}
	ev := store.Event{ID: store.NewMessageID(), Kind: store.MessagePinned, Room: room, User: p.By, Message: &msg}
	b := db.batch()
	b.set(pinKey(room, p.Message), pinRow{By: refRow(p.By), At: p.At.UTC()})
	if err := db.logRoomEvent(b, ev); err != nil {
		b.Close()
		return store.Event{}, err
	}
	if err := b.commit(); err != nil {
		return store.Event{}, fmt.Errorf("pinning message %s in room %q: %w", p.Message, room, err)
	}
	return ev, nil
}

// UnpinMessage deletes the pin and logs its event in one batch under the
// room's lock.
func (db *DB) UnpinMessage(ctx context.Context, room string, message store.MessageID, by store.UserRef) (store.Event, error) {
	rk := roomKey(room)
	end, err := db.beginLocked(ctx, rk, pinsPartition(room))
	if err != nil {
		return store.Event{}, err
	}
	defer end()
	if _, err := db.room(room); err != nil {
		return store.Event{}, err
	}
	pinned, err := db.has(pinKey(room, message))
	if err != nil || !pinned {
		return store.Event{}, err
	}
	msg, err := db.roomMessage(room, message)
	if err != nil {
		return store.Event{}, err
	}
	ev := store.Event{ID: store.NewMessageID(), Kind: store.MessageUnpinned, Room: room, User: by, Message: &msg}
	b := db.batch()
	b.delete(pinKey(room, message))
	if err := db.logRoomEvent(b, ev); err != nil {
		b.Close()
		return store.Event{}, err
	}
	if err := b.commit(); err != nil {
		return store.Event{}, fmt.Errorf("unpinning message %s in room %q: %w", message, room, err)
	}
	return ev, nil
}

// roomMessage reads a message of the room's stream. Returns ErrNotFound.
func (db *DB) roomMessage(room string, id store.MessageID) (store.Message, error) {
	row, found, err := getRow[messageRow](db, messageKey(room, id))
	if err != nil {
		return store.Message{}, fmt.Errorf("reading message %s: %w", id, err)
	}
	if !found {
		return store.Message{}, fmt.Errorf("message %s in room %q: %w", id, room, store.ErrNotFound)
	}
	return row.message(room, id), nil
}

// Pins reads the room's partition of room_pins.
func (db *DB) Pins(ctx context.Context, room string) ([]store.Pin, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	return db.pins(ctx, room)
}

func (db *DB) pins(ctx context.Context, room string) ([]store.Pin, error) {
	p := pinsPartition(room)
	pins := []store.Pin{}
	err := db.scan(ctx, p, p.end(), false, func(k, v []byte) (bool, error) {
		id, err := store.MessageIDFromSortKey(k[len(p):])
		if err != nil {
			return false, err
		}
		row, err := decode[pinRow](v)
		if err != nil {
			return false, err
		}
		pins = append(pins, store.Pin{Message: id, By: row.By.ref(), At: row.At})
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the pins of room %q: %w", room, err)
	}
	slices.SortFunc(pins, store.ByNewestPin)
	return pins, nil
}

// inviteRow is a row of group_invites.
type inviteRow struct {
	Room      string    `json:"room"`
	CreatedBy userRef   `json:"by"`
	CreatedAt time.Time `json:"created"`
	ExpiresAt time.Time `json:"expires"`
	MaxUses   int       `json:"max"`
	Uses      int       `json:"uses,omitempty"`
}

func (r inviteRow) invite(hash string) store.Invite {
	return store.Invite{Room: r.Room, Hash: hash, CreatedBy: r.CreatedBy.ref(), CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt, MaxUses: r.MaxUses, Uses: r.Uses}
}

// CreateInvite writes the invite and its listing under the locks of the
// room and its listing, dropping the room's invites that let nobody in any
// more.
func (db *DB) CreateInvite(ctx context.Context, inv store.Invite) error {
	end, err := db.beginLocked(ctx, roomKey(inv.Room), roomInvitesPartition(inv.Room))
	if err != nil {
		return err
	}
	defer end()
	if _, err := db.room(inv.Room); err != nil {
		return err
	}
	invites, err := db.invites(ctx, inv.Room)
	if err != nil {
		return err
	}
	b := db.batch()
	open := 0
	for _, old := range invites {
		if old.Usable(inv.CreatedAt) != nil {
			b.delete(inviteKey(old.Hash))
			b.delete(roomInvitesPartition(inv.Room).str(old.Hash))
		} else {
			open++
		}
	}
	if open >= store.MaxInvites {
		b.Close()
		return store.Invalidf("group %q has %d open invite links, the most it may have: revoke one first", inv.Room, store.MaxInvites)
	}
	b.set(inviteKey(inv.Hash), inviteRow{Room: inv.Room, CreatedBy: refRow(inv.CreatedBy), CreatedAt: inv.CreatedAt.UTC(), ExpiresAt: inv.ExpiresAt.UTC(), MaxUses: inv.MaxUses})
	b.setEmpty(roomInvitesPartition(inv.Room).str(inv.Hash))
	if err := b.commit(); err != nil {
		return fmt.Errorf("writing an invite of room %q: %w", inv.Room, err)
	}
	return nil
}

// Invites reads the room's listing, then each invite.
func (db *DB) Invites(ctx context.Context, room string) ([]store.Invite, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	return db.invites(ctx, room)
}

func (db *DB) invites(ctx context.Context, room string) ([]store.Invite, error) {
	p := roomInvitesPartition(room)
	var hashes []string
	err := db.scan(ctx, p, p.end(), false, func(k, _ []byte) (bool, error) {
		hash, _, err := parseStr(k[len(p):])
		hashes = append(hashes, hash)
		return true, err
	})
	if err != nil {
		return nil, fmt.Errorf("reading the invites of room %q: %w", room, err)
	}
	invites := []store.Invite{}
	for _, hash := range hashes {
		row, found, err := getRow[inviteRow](db, inviteKey(hash))
		if err != nil {
			return nil, fmt.Errorf("reading an invite of room %q: %w", room, err)
		}
		if found {
			invites = append(invites, row.invite(hash))
		}
	}
	slices.SortFunc(invites, store.ByNewestInvite)
	return invites, nil
}

// Invite reads the invite's row.
func (db *DB) Invite(ctx context.Context, hash string) (store.Invite, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return store.Invite{}, err
	}
	defer end()
	return db.invite(hash)
}

func (db *DB) invite(hash string) (store.Invite, error) {
	row, found, err := getRow[inviteRow](db, inviteKey(hash))
	if err != nil {
		return store.Invite{}, fmt.Errorf("reading an invite: %w", err)
	}
	if !found {
		return store.Invite{}, store.ErrInviteNotFound
	}
	return row.invite(hash), nil
}

// UseInvite compares and sets the invite's count under its row's lock.
func (db *DB) UseInvite(ctx context.Context, hash string, at time.Time) (store.Invite, error) {
	k := inviteKey(hash)
	end, err := db.beginLocked(ctx, k)
	if err != nil {
		return store.Invite{}, err
	}
	defer end()
	inv, err := db.invite(hash)
	if err != nil {
		return store.Invite{}, err
	}
	if err := inv.Usable(at); err != nil {
		return store.Invite{}, err
	}
	inv.Uses++
	b := db.batch()
	b.set(k, inviteRow{Room: inv.Room, CreatedBy: refRow(inv.CreatedBy), CreatedAt: inv.CreatedAt, ExpiresAt: inv.ExpiresAt, MaxUses: inv.MaxUses, Uses: inv.Uses})
	if err := b.commit(); err != nil {
		return store.Invite{}, fmt.Errorf("counting a use of an invite of room %q: %w", inv.Room, err)
	}
	return inv, nil
}

// RevokeInvite deletes the invite and its listing under their locks.
func (db *DB) RevokeInvite(ctx context.Context, room, hash string) error {
	end, err := db.beginLocked(ctx, inviteKey(hash), roomInvitesPartition(room))
	if err != nil {
		return err
	}
	defer end()
	inv, err := db.invite(hash)
	if err != nil {
		return err
	}
	if inv.Room != room {
		return store.ErrInviteNotFound
	}
	b := db.batch()
	b.delete(inviteKey(hash))
	b.delete(roomInvitesPartition(room).str(hash))
	if err := b.commit(); err != nil {
		return fmt.Errorf("revoking an invite of room %q: %w", room, err)
	}
	return nil
}

// deleteRoomInvites adds to b the deletion of the room's invites.
func (db *DB) deleteRoomInvites(ctx context.Context, b *batch, room string) error {
	invites, err := db.invites(ctx, room)
	if err != nil {
		return err
	}
	for _, inv := range invites {
		b.delete(inviteKey(inv.Hash))
	}
	b.deleteRange(roomInvitesPartition(room))
	return nil
}
