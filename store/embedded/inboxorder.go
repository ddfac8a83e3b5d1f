package embedded

import (
	"context"
	"fmt"

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
)

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

// InboxPage scans login's positions last to first from after, and deletes,
// with its activity, each position that is not at its conversation's
// newest activity.
func (db *DB) InboxPage(ctx context.Context, login string, after store.InboxPosition, limit int) ([]store.InboxPosition, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()

	if limit <= 0 {
		return nil, nil
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

// addRoomActivity adds to b the post m as an activity of its public room in
// the order of each participant: a write per participant, from the room's
// participants as they are (a post takes no lock: one joining meanwhile has
// the join as their activity).
func (db *DB) addRoomActivity(b *batch, m store.Message) error {
	p := membersPartition(m.Room)
	return db.scan(context.Background(), p.next(), p.end(), false, func(k, _ []byte) (bool, error) {
		login, _, err := parseStr(k[len(p):])
		if err != nil {
			return false, fmt.Errorf("member key of room %q: %w", m.Room, err)
		}
		b.addActivity(login, m.Room, m.ID)
		return true, nil
	})
}
