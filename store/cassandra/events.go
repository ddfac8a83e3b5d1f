package cassandra

import (
	"context"
	"fmt"
	"slices"

	"github.com/gocql/gocql"
	"github.com/killrchat/chatql/store"
)

// The event logs (schema_v4.cql): room_events, one partition per room and
// day, and inbox_events, one per user and day, both oldest first. A row
// holds the kind, who, and the message's id, never its content: reading a
// log joins each event with its message as chat_room_messages holds it now,
// and leaves out the events whose message is gone.
//
// Writes: an event about a message's arrival (posted, joined, left) goes in
// one single-partition batch with the message's stream copy, whose
// partition key it shares (see writeMessage); a hide's event is a write of
// its own. An inbox event goes with the inbox write of the same change, and
// its day's row in inbox_buckets in the same batch as that write (the two
// tables share the partition key, login). Every write of an operation runs
// concurrently and the operation succeeds only if all did.

const (
	insertRoomEvent = `INSERT INTO room_events (room_name, time_bucket, event_id, kind, user, message_id)
		VALUES (?, ?, ?, ?, ?, ?)`
	deleteRoomEvent  = `DELETE FROM room_events WHERE room_name = ? AND time_bucket = ? AND event_id = ?`
	deleteRoomEvents = `DELETE FROM room_events USING TIMESTAMP ? WHERE room_name = ? AND time_bucket = ?`
	roomEventColumns = `event_id, kind, user, message_id`
	selectRoomLog    = `SELECT ` + roomEventColumns + ` FROM room_events WHERE room_name = ? AND time_bucket = ? LIMIT ?`
	selectRoomLogAft = `SELECT ` + roomEventColumns + ` FROM room_events WHERE room_name = ? AND time_bucket = ? AND event_id > ? LIMIT ?`

	insertInboxEvent = `INSERT INTO inbox_events (login, time_bucket, event_id, conversation_id, kind, user, message_id)
		VALUES (?, ?, ?, ?, ?, ?, ?)`
	deleteInboxEvent  = `DELETE FROM inbox_events WHERE login = ? AND time_bucket = ? AND event_id = ?`
	inboxEventColumns = `event_id, conversation_id, kind, user, message_id`
	selectInboxLog    = `SELECT ` + inboxEventColumns + ` FROM inbox_events WHERE login = ? AND time_bucket = ? LIMIT ?`
	selectInboxLogAft = `SELECT ` + inboxEventColumns + ` FROM inbox_events WHERE login = ? AND time_bucket = ? AND event_id > ? LIMIT ?`

	// selectMessagesIn reads the messages of a page of events that lie in
	// one partition of a stream: one read, however many events.
	selectMessagesIn = `SELECT ` + messageColumns + ` FROM chat_room_messages WHERE room_name = ? AND time_bucket = ? AND message_id IN ?`
)

// maxInList bounds the ids of one selectMessagesIn.
const maxInList = 100

// messageRef binds the id of an event's message, or null for none.
func messageRef(id store.MessageID) any {
	if id.IsZero() {
		return nil
	}
	return gocql.UUID(id)
}

// roomEventArgs are insertRoomEvent's arguments for e, logged in its room.
func roomEventArgs(e store.Event) []any {
	var msg store.MessageID
	if e.Message != nil {
		msg = e.Message.ID
	}
	return []any{e.Room, int(store.BucketOf(e.ID.Time())), gocql.UUID(e.ID), string(e.Kind), userUDT(e.User), messageRef(msg)}
}

// inboxEventWrite returns the write of e to login's inbox log. The caller
// writes its day's listing row (inboxListing) in the batch of the inbox
// write the event goes with.
func (db *DB) inboxEventWrite(ctx context.Context, login string, e store.Event) func() error {
	var msg store.MessageID
	if e.Message != nil {
		msg = e.Message.ID
	}
	b := int(store.BucketOf(e.ID.Time()))
	return func() error {
		err := db.query(ctx, insertInboxEvent, login, b, gocql.UUID(e.ID), e.Room, string(e.Kind), userUDT(e.User), messageRef(msg)).Exec()
		if err != nil {
			return fmt.Errorf("log %s in the inbox of %q: %w", e.Kind, login, err)
		}
		return nil
	}
}

// inboxListing adds to b, a batch of writes to login's partition of
// conversations_by_user, the listing of the day of the inbox event id:
// inbox_buckets shares the partition key, so the batch stays one mutation.
func inboxListing(b *gocql.Batch, login string, id store.MessageID) {
	b.Query(familyQueries[inboxBuckets].insert, login, int(store.BucketOf(id.Time())))
}

// inboxBatch returns an unlogged batch of writes to login's inbox partition.
func (db *DB) inboxBatch(ctx context.Context) *gocql.Batch {
	return db.session.NewBatch(gocql.UnloggedBatch).WithContext(ctx)
}

// A logRow is one row of a log, before its message is joined.
type logRow struct {
	id      store.MessageID
	kind    store.EventKind
	room    string // the room, or the inbox event's conversation
	user    store.UserRef
	message store.MessageID // zero: no message
}

// A logReader reads up to limit rows of one day of a log, oldest first,
// strictly after the cursor (zero: from the start).
type logReader func(ctx context.Context, b store.Bucket, after store.MessageID, limit int) ([]logRow, error)

// RoomEvents returns up to limit events of the room's log, oldest first,
// after the cursor: the listed days from the cursor's on, one slice of each
// day's partition, and the events' messages joined (see readLog).
func (db *DB) RoomEvents(ctx context.Context, room string, after store.MessageID, limit int) ([]store.Event, error) {
	if limit <= 0 {
		return nil, nil
	}
	listed, err := db.listedBuckets(ctx, roomBuckets, room)
	if err != nil {
		return nil, fmt.Errorf("cassandra: events of room %q: %w", room, err)
	}
	evs, err := db.readLog(ctx, store.OldestFirstBuckets(listed, after), after, limit,
		func(ctx context.Context, b store.Bucket, after store.MessageID, limit int) ([]logRow, error) {
			q := db.query(ctx, selectRoomLog, room, int(b), limit)
			if !after.IsZero() { // the zero id is no timeuuid: Cassandra rejects it as a bound
				q = db.query(ctx, selectRoomLogAft, room, int(b), gocql.UUID(after), limit)
			}
			iter := q.Iter()
			var (
				rows    []logRow
				id, msg gocql.UUID
				kind    string
				user    userUDT
			)
			for iter.Scan(&id, &kind, &user, &msg) {
				rows = append(rows, logRow{id: store.MessageID(id), kind: store.EventKind(kind), room: room, user: store.UserRef(user), message: store.MessageID(msg)})
				msg, user = gocql.UUID{}, userUDT{}
			}
			return rows, iter.Close()
		})
	if err != nil {
		return nil, fmt.Errorf("cassandra: events of room %q: %w", room, err)
	}
	return evs, nil
}

// InboxEvents returns up to limit events of login's inbox log, oldest
// first, after the cursor, as RoomEvents does for a room.
func (db *DB) InboxEvents(ctx context.Context, login string, after store.MessageID, limit int) ([]store.Event, error) {
	if limit <= 0 {
		return nil, nil
	}
	listed, err := db.listedBuckets(ctx, inboxBuckets, login)
	if err != nil {
		return nil, fmt.Errorf("cassandra: inbox events of %q: %w", login, err)
	}
	evs, err := db.readLog(ctx, store.OldestFirstBuckets(listed, after), after, limit,
		func(ctx context.Context, b store.Bucket, after store.MessageID, limit int) ([]logRow, error) {
			q := db.query(ctx, selectInboxLog, login, int(b), limit)
			if !after.IsZero() {
				q = db.query(ctx, selectInboxLogAft, login, int(b), gocql.UUID(after), limit)
			}
			iter := q.Iter()
			var (
				rows       []logRow
				id, msg    gocql.UUID
				conv, kind string
				user       userUDT
			)
			for iter.Scan(&id, &conv, &kind, &user, &msg) {
				rows = append(rows, logRow{id: store.MessageID(id), kind: store.EventKind(kind), room: conv, user: store.UserRef(user), message: store.MessageID(msg)})
				msg, user = gocql.UUID{}, userUDT{}
			}
			return rows, iter.Close()
		})
	if err != nil {
		return nil, fmt.Errorf("cassandra: inbox events of %q: %w", login, err)
	}
	return evs, nil
}

// readLog reads the days of a log in order until limit events are
// collected. Within a day it asks for what the page still lacks; when
// events were left out (their message is gone) and the day may hold more,
// it reads on after the last row, so a page is short only at the end of
// the log.
func (db *DB) readLog(ctx context.Context, buckets []store.Bucket, after store.MessageID, limit int, read logReader) ([]store.Event, error) {
	var page []store.Event
	for _, b := range buckets {
		cursor := after
		for len(page) < limit {
			want := limit - len(page)
			rows, err := read(ctx, b, cursor, want)
			if err != nil {
				return nil, fmt.Errorf("read the log of day %d: %w", b, err)
			}
			evs, err := db.joinMessages(ctx, rows)
			if err != nil {
				return nil, err
			}
			page = append(page, evs...)
			if len(rows) < want {
				break // the end of the day
			}
			cursor = rows[len(rows)-1].id
		}
		if len(page) >= limit {
			break
		}
	}
	return page, nil
}

// joinMessages returns rows as events, each with its message as it is now,
// in order, leaving out those whose message is gone. The messages are read
// from their streams' partitions with one read per partition (selectMessagesIn),
// concurrently: a page of a room's log is mostly one partition, the events'
// own day (a message's arrival shares its id, so its day); a hide's message
// or an inbox's conversations add one each.
func (db *DB) joinMessages(ctx context.Context, rows []logRow) ([]store.Event, error) {
	type partition struct {
		room   string
		bucket store.Bucket
	}
	wanted := map[partition][]gocql.UUID{}
	for _, r := range rows {
		if r.message.IsZero() {
			continue
		}
		p := partition{r.room, store.BucketOf(r.message.Time())}
		if id := gocql.UUID(r.message); !slices.Contains(wanted[p], id) {
			wanted[p] = append(wanted[p], id)
		}
	}
	type found struct {
		room string
		id   store.MessageID
	}
	msgs := make(map[found]store.Message, len(rows))
	results := make(chan []store.Message, len(rows))
	fo := newFanout(fanoutParallelism)
	for p, ids := range wanted {
		for chunk := range slices.Chunk(ids, maxInList) {
			fo.Go(func() error {
				iter := db.query(ctx, selectMessagesIn, p.room, int(p.bucket), chunk).Iter()
				var got []store.Message
				read := roomRows(p.room)
				for {
					m, ok, more := read(iter)
					if !more {
						break
					}
					if ok { // a row without an author is no message: see readLive
						got = append(got, m)
					}
				}
				if err := iter.Close(); err != nil {
					return fmt.Errorf("read the messages of the events in %q, day %d: %w", p.room, p.bucket, err)
				}
				results <- got
				return nil
			})
		}
	}
	err := fo.Wait()
	close(results)
	if err != nil {
		return nil, err
	}
	for got := range results {
		for _, m := range got {
			msgs[found{m.Room, m.ID}] = m
		}
	}
	evs := make([]store.Event, 0, len(rows))
	for _, r := range rows {
		e := store.Event{ID: r.id, Kind: r.kind, Room: r.room, User: r.user}
		if !r.message.IsZero() {
			m, ok := msgs[found{r.room, r.message}]
			if !ok {
				continue // gone with its room
			}
			e.Message = &m
		}
		evs = append(evs, e)
	}
	return evs, nil
}
