package embedded

import (
	"context"
	"fmt"

	"github.com/killrchat/chatql/store"
)

// The event logs, as the Cassandra tables room_events (one partition per
// room and day, listed in messages_bucket) and inbox_events (one per user
// and day, listed in inbox_buckets), oldest first. A row holds the kind,
// who, and the message's id, never its content: reading a log joins each
// event with its message as the stream holds it now, and leaves out events
// whose message is gone. Every operation adds its events to the batch of
// the change they record, so an acknowledged change has its event.
//
// A log's days are listed with the messages' days: a room's in
// messages_bucket (so a day with a hide and no message is listed too), an
// inbox's in inbox_buckets. Reading after a cursor reads the listed days
// from the cursor's on, one range of one partition each, until the page is
// full. A store written before the logs has none for what happened before
// it was opened by this version (see the package doc).

var _ store.EventLog = (*DB)(nil)

// logRoomEvent adds ev to b, in its room's log, listing its day.
func (db *DB) logRoomEvent(b *batch, ev store.Event) error {
	day := store.BucketOf(ev.ID.Time())
	b.set(roomEventKey(ev.Room, ev.ID), newEventRow(ev))
	return db.list(b, bucketPartition(ev.Room), day)
}

// logInboxEvent adds ev to b, in login's inbox log, listing its day.
func (db *DB) logInboxEvent(b *batch, login string, ev store.Event) error {
	day := store.BucketOf(ev.ID.Time())
	row := newEventRow(ev)
	row.Conversation = ev.Room
	b.set(inboxEventKey(login, ev.ID), row)
	return db.list(b, inboxBucketPartition(login), day)
}

// list adds to b the listing of day in partition p unless it is there:
// known to be (listedDays), in b already (a post lists its day for its
// message and for its event), or found so by a read (see addMessage for
// why it reads first).
func (db *DB) list(b *batch, p key, day store.Bucket) error {
	if db.listed.has(p, day) || b.lists(p, day) {
		return nil
	}
	stamp := db.listed.stamp()
	k := p.int(int64(day))
	listed, err := db.has(k)
	if err != nil {
		return fmt.Errorf("reading a listing of days: %w", err)
	}
	if listed {
		db.listed.remember(p, day, stamp)
		return nil
	}
	b.setEmpty(k)
	b.listings = append(b.listings, listing{p, day, stamp})
	return nil
}

// RoomEvents reads the room's log after the cursor, oldest first.
func (db *DB) RoomEvents(ctx context.Context, room string, after store.MessageID, limit int) ([]store.Event, error) {
	events, err := db.readLog(ctx, bucketPartition(room), after, limit, func(b store.Bucket) key { return roomEventPartition(room, b) },
		func(row eventRow) string { return room })
	if err != nil {
		return nil, fmt.Errorf("reading the log of room %q: %w", room, err)
	}
	return events, nil
}

// InboxEvents reads login's inbox log after the cursor, oldest first.
func (db *DB) InboxEvents(ctx context.Context, login string, after store.MessageID, limit int) ([]store.Event, error) {
	events, err := db.readLog(ctx, inboxBucketPartition(login), after, limit, func(b store.Bucket) key { return inboxEventPartition(login, b) },
		func(row eventRow) string { return row.Conversation })
	if err != nil {
		return nil, fmt.Errorf("reading the inbox log of %q: %w", login, err)
	}
	return events, nil
}

// readLog reads up to limit events after the cursor from the days listed in
// the partition days, each day's events in partition(day), joining each
// with its message in the stream of stream(row).
func (db *DB) readLog(ctx context.Context, days key, after store.MessageID, limit int, partition func(store.Bucket) key, stream func(eventRow) string) ([]store.Event, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()

	events := []store.Event{}
	if limit <= 0 {
		return events, nil
	}
	listed, err := db.listBuckets(ctx, days)
	if err != nil {
		return nil, err
	}
	for _, day := range store.OldestFirstBuckets(listed, after) {
		p := partition(day)
		lower := []byte(p)
		if !after.IsZero() {
			lower = p.asc(after).next()
		}
		err := db.scan(ctx, lower, p.end(), false, func(k, v []byte) (bool, error) {
			id, err := store.MessageIDFromSortKey(k[len(p):])
			if err != nil {
				return false, err
			}
			row, err := decode[eventRow](v)
			if err != nil {
				return false, err
			}
			ev, ok, err := db.eventOf(id, row, stream(row))
			if ok {
				events = append(events, ev)
			}
			return len(events) < limit, err
		})
		if err != nil || len(events) == limit {
			return events, err
		}
	}
	return events, nil
}

// eventOf returns the event of a log row, joined with its message in the
// stream of room; ok is false when the message is gone.
func (db *DB) eventOf(id store.MessageID, row eventRow, room string) (ev store.Event, ok bool, err error) {
	ev = store.Event{ID: id, Kind: store.EventKind(row.Kind), Room: room, User: row.User.ref()}
	if row.Message.IsZero() {
		return ev, true, nil
	}
	m, found, err := getRow[messageRow](db, messageKey(room, row.Message))
	if err != nil || !found {
		return ev, false, err
	}
	msg := m.message(room, row.Message)
	ev.Message = &msg
	return ev, true, nil
}
