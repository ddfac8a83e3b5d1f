package embedded

import (
	"context"
	"fmt"
	"time"

	"github.com/killrchat/chatql/store"
)

// The inbox in the order of last activity (store.InboxOrder), as Cassandra's
// inbox_order keeps it but in three tables of keys alone: the positions of
// each user, (activity, conversation), read last to first; the activities
// of each of their conversations, (conversation, activity), whose last is
// the conversation's newest; and the flag saying that the order holds every
// conversation. An activity adds a key to the first two without reading
// and without a lock (a post to a public room takes none), so the newest of
// racing activities is the largest key whatever order they commit in.
const (
	tableInboxPositions  = "inbox_positions"
	tableInboxActivities = "inbox_activities"
	tableInboxOrdered    = "inbox_ordered"
	tableInboxLarge      = "inbox_large_rooms"
	tableRoomActivity    = "room_inbox_activity"
)

// largeRoomsPartition holds the large rooms of login's order, a key each
// whose value is when it was marked.
func largeRoomsPartition(login string) key { return tuple(tableInboxLarge).str(login) }

// roomActivityKey holds the id of the room's last move (moveRoom): the
// post whose positions it wrote, or in a large room, that read its members.
func roomActivityKey(room string) key { return tuple(tableRoomActivity).str(room) }

func positionsPartition(login string) key { return tuple(tableInboxPositions).str(login) }

func positionKey(login string, p store.InboxPosition) key {
	return positionsPartition(login).asc(p.Activity).str(p.Conversation)
}

func activitiesPartition(login, conversation string) key {
	return tuple(tableInboxActivities).str(login).str(conversation)
}

func orderedKey(login string) key { return tuple(tableInboxOrdered).str(login) }

// addActivity adds to b the activity of conversation in login's order.
func (b *batch) addActivity(login, conversation string, activity store.MessageID) {
	b.setEmpty(positionKey(login, store.InboxPosition{Activity: activity, Conversation: conversation}))
	b.setEmpty(activitiesPartition(login, conversation).asc(activity))
}

// dropActivity adds to b the deletion of the activity of conversation in
// login's order, its position with it.
func (b *batch) dropActivity(login, conversation string, activity store.MessageID) {
	b.delete(positionKey(login, store.InboxPosition{Activity: activity, Conversation: conversation}))
	b.delete(activitiesPartition(login, conversation).asc(activity))
}

// InboxPage makes the moves owed by login's rooms (flushRoomsOf), then
// scans login's positions last to first from after, and deletes, with its
// activity, each position that is not at its conversation's newest
// activity.
func (db *DB) InboxPage(ctx context.Context, login string, after store.InboxPosition, limit int) ([]store.InboxPosition, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()

	if limit <= 0 {
		return nil, nil
	}
	if err := db.flushRoomsOf(login); err != nil {
		return nil, fmt.Errorf("reading the inbox order of %q: %w", login, err)
	}
	p := positionsPartition(login)
	upper := p.end()
	if after.Conversation != "" {
		upper = positionKey(login, after)
	}
	var page, stale []store.InboxPosition
	err = db.scan(ctx, p, upper, true, func(k, _ []byte) (bool, error) {
		pos, err := parsePosition(k[len(p):])
		if err != nil {
			return false, err
		}
		newest, err := db.newestActivity(ctx, login, pos.Conversation)
		if err != nil {
			return false, err
		}
		if pos.Activity.Compare(newest) < 0 {
			stale = append(stale, pos)
			return true, nil
		}
		page = append(page, pos)
		return len(page) < limit, nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the inbox order of %q: %w", login, err)
	}
	if len(stale) > 0 {
		b := db.batch()
		for _, s := range stale {
			b.delete(positionKey(login, s))
			b.delete(activitiesPartition(login, s.Conversation).asc(s.Activity))
		}
		if err := b.commit(); err != nil {
			return nil, fmt.Errorf("dropping positions of the inbox of %q: %w", login, err)
		}
	}
	return page, nil
}

// parsePosition decodes the clustering part of a position key.
func parsePosition(b []byte) (store.InboxPosition, error) {
	if len(b) < descIDLen {
		return store.InboxPosition{}, fmt.Errorf("position key of %d bytes", len(b))
	}
	activity, err := store.MessageIDFromSortKey(b[:descIDLen])
	if err != nil {
		return store.InboxPosition{}, err
	}
	conversation, _, err := parseStr(b[descIDLen:])
	return store.InboxPosition{Activity: activity, Conversation: conversation}, err
}

// newestActivity is the last activity key of login's conversation: zero if
// there is none.
func (db *DB) newestActivity(ctx context.Context, login, conversation string) (store.MessageID, error) {
	p := activitiesPartition(login, conversation)
	var newest store.MessageID
	err := db.scan(ctx, p, p.end(), true, func(k, _ []byte) (bool, error) {
		var err error
		newest, err = store.MessageIDFromSortKey(k[len(p):])
		return false, err
	})
	return newest, err
}

// InboxOrdered reads the flag.
func (db *DB) InboxOrdered(ctx context.Context, login string) (bool, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return false, err
	}
	defer end()
	_, found, err := getRow[struct{}](db, orderedKey(login))
	if err != nil {
		return false, fmt.Errorf("reading whether the inbox of %q is ordered: %w", login, err)
	}
	return found, nil
}

// OrderInbox adds the positions and the flag in one batch.
func (db *DB) OrderInbox(ctx context.Context, login string, positions []store.InboxPosition) error {
	end, err := db.begin(ctx)
	if err != nil {
		return err
	}
	defer end()
	b := db.batch()
	for _, p := range positions {
		b.addActivity(login, p.Conversation, p.Activity)
	}
	b.set(orderedKey(login), struct{}{})
	if err := b.commit(); err != nil {
		return fmt.Errorf("ordering the inbox of %q: %w", login, err)
	}
	return nil
}

// DropInboxPositions deletes the position keys; the conversations' newest
// activities stay, so that an older position left behind stays stale.
func (db *DB) DropInboxPositions(ctx context.Context, login string, positions []store.InboxPosition) error {
	end, err := db.begin(ctx)
	if err != nil {
		return err
	}
	defer end()
	b := db.batch()
	for _, p := range positions {
		b.delete(positionKey(login, p))
	}
	if err := b.commit(); err != nil {
		return fmt.Errorf("dropping positions of the inbox of %q: %w", login, err)
	}
	return nil
}

// markLarge adds to b the marks of the room, which u's join leaves with
// participants, if that is past store.InboxFanoutLimit: in every
// participant's order when the join takes the room past it, else in u's.
func (b *batch) markLarge(room string, participants []userRef, u store.UserRef, at time.Time) {
	switch n := len(participants); {
	case n == store.InboxFanoutLimit+1:
		for _, p := range participants {
			b.set(largeRoomsPartition(p.Login).str(room), at)
		}
	case n > store.InboxFanoutLimit:
		b.set(largeRoomsPartition(u.Login).str(room), at)
	}
}

// LargeInboxRooms scans login's marks.
func (db *DB) LargeInboxRooms(ctx context.Context, login string) ([]string, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	p := largeRoomsPartition(login)
	var rooms []string
	err = db.scan(ctx, p, p.end(), false, func(k, _ []byte) (bool, error) {
		room, _, err := parseStr(k[len(p):])
		rooms = append(rooms, room)
		return err == nil, err
	})
	if err != nil {
		return nil, fmt.Errorf("reading the large rooms of the inbox of %q: %w", login, err)
	}
	return rooms, nil
}

// DropLargeInboxRooms deletes the marks made before `before`, under the
// lock of login's marks, so that a join's mark made meanwhile stays.
func (db *DB) DropLargeInboxRooms(ctx context.Context, login string, rooms []string, before time.Time) error {
	p := largeRoomsPartition(login)
	end, err := db.beginLocked(ctx, p)
	if err != nil {
		return err
	}
	defer end()
	b := db.batch()
	for _, room := range rooms {
		at, found, err := getRow[time.Time](db, p.str(room))
		if err != nil {
			b.Close()
			return err
		}
		if found && at.Before(before) {
			b.delete(p.str(room))
		}
	}
	if err := b.commit(); err != nil {
		return fmt.Errorf("dropping large rooms of the inbox of %q: %w", login, err)
	}
	return nil
}

// markLargeRooms marks the public rooms of more than store.InboxFanoutLimit
// participants in each participant's order, once, in a store written before
// large rooms were (whose posts wrote positions for everyone): Open runs it
// before any operation, after buildRoomMembers.
func (db *DB) markLargeRooms() error {
	err := db.onceOverRooms(tuple(tableMeta).str(tableInboxLarge), nil, func(b *batch, row roomRow) {
		if row.Kind == "" && len(row.Participants) > store.InboxFanoutLimit {
			for _, p := range row.Participants {
				b.set(largeRoomsPartition(p.Login).str(row.Name), row.CreatedAt)
			}
		}
	})
	if err != nil {
		return fmt.Errorf("marking the large rooms: %w", err)
	}
	return nil
}
