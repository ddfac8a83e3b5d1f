package cassandra

import (
	"context"
	"fmt"
	"time"

	"github.com/gocql/gocql"
	"github.com/killrchat/chatql/store"
)

const (
	insertMessage = `INSERT INTO chat_room_messages (room_name, time_bucket, message_id, author, content, system_message, visible)
		VALUES (?, ?, ?, ?, ?, ?, true)`
	messageColumns = `message_id, author, content, system_message, visible`
	// Newest first is the table's clustering order; oldest first reverses it.
	selectNewest       = `SELECT ` + messageColumns + ` FROM chat_room_messages WHERE room_name = ? AND time_bucket = ? LIMIT ?`
	selectNewestBefore = `SELECT ` + messageColumns + ` FROM chat_room_messages WHERE room_name = ? AND time_bucket = ? AND message_id < ? LIMIT ?`
	selectOldest       = `SELECT ` + messageColumns + ` FROM chat_room_messages WHERE room_name = ? AND time_bucket = ? ORDER BY message_id ASC LIMIT ?`
	selectOldestAfter  = `SELECT ` + messageColumns + ` FROM chat_room_messages WHERE room_name = ? AND time_bucket = ? AND message_id > ? ORDER BY message_id ASC LIMIT ?`
	// A segment of a group's bucket, newest first: From <= id < Before, each
	// bound present or not.
	selectSegment       = selectNewest
	selectSegmentFrom   = `SELECT ` + messageColumns + ` FROM chat_room_messages WHERE room_name = ? AND time_bucket = ? AND message_id >= ? LIMIT ?`
	selectSegmentBefore = selectNewestBefore
	selectSegmentWithin = `SELECT ` + messageColumns + ` FROM chat_room_messages WHERE room_name = ? AND time_bucket = ? AND message_id >= ? AND message_id < ? LIMIT ?`
	selectStreamAuthor  = `SELECT author FROM chat_room_messages WHERE room_name = ? AND time_bucket = ? AND message_id = ?`
	selectBucketAuthors = `SELECT message_id, author FROM chat_room_messages WHERE room_name = ? AND time_bucket = ?`
	hideInStream        = `UPDATE chat_room_messages SET visible = false WHERE room_name = ? AND time_bucket = ? AND message_id = ?`
	deleteMessages      = `DELETE FROM chat_room_messages WHERE room_name = ? AND time_bucket = ?`

	// Deleting a room keeps the listing of its last two days; see forgetBuckets.
	deleteOldBuckets = `DELETE FROM messages_bucket WHERE room_name = ? AND time_bucket < ?`
)

// fanoutParallelism bounds the concurrent writes of one call: a group
// message to every member's inbox, a room's messages out of the index.
const fanoutParallelism = 16

// PostMessage stores m in the partition of its room and day, and in the
// message index by id and by author. The three copies live in three
// partitions, likely on three different replicas, so they are written
// concurrently rather than in a batch: an unlogged batch across partitions
// only moves the fan-out to a coordinator, and a logged one adds the
// batchlog's writes to buy an atomicity that retrying buys too (every write
// is an idempotent upsert of the same values). The first post of a day
// lists the day with its copies (see listBuckets).
func (db *DB) PostMessage(ctx context.Context, m store.Message) error {
	if err := db.writeMessage(ctx, m, nil); err != nil {
		return fmt.Errorf("cassandra: post message to room %q: %w", m.Room, err)
	}
	return nil
}

// writeMessage writes m's three copies, the listing of its day if this
// process has not written it yet, and the extra writes (inbox updates),
// concurrently. It succeeds only if every write did.
func (db *DB) writeMessage(ctx context.Context, m store.Message, extra []func() error) error {
	b := store.BucketOf(m.ID.Time())
	id, author := gocql.UUID(m.ID), userUDT(m.Author)
	fo := newFanout(fanoutParallelism)
	db.listBuckets(ctx, fo, m, b)
	fo.Go(func() error {
		return db.query(ctx, insertMessage, m.Room, int(b), id, author, m.Content, m.System).Exec()
	})
	fo.Go(func() error {
		return db.query(ctx, insertByID, id, m.Room, author, m.Content, m.System).Exec()
	})
	fo.Go(func() error {
		return db.query(ctx, insertByAuthor, m.Author.Login, int(b), id, m.Room, author, m.Content, m.System).Exec()
	})
	for _, w := range extra {
		fo.Go(w)
	}
	return fo.Wait()
}

// Messages returns a page of the room's messages, newest first, older than
// before.
func (db *DB) Messages(ctx context.Context, room string, before store.MessageID, limit int) ([]store.Message, error) {
	if limit <= 0 {
		return nil, nil
	}
	listed, err := db.listedBuckets(ctx, roomBuckets, room)
	if err != nil {
		return nil, fmt.Errorf("cassandra: messages of room %q: %w", room, err)
	}
	buckets := store.NewestFirstBuckets(listed, before)
	msgs, err := store.ScanBuckets(ctx, buckets, limit, func(ctx context.Context, b store.Bucket, limit int) ([]store.Message, error) {
		return readLive(before, limit, func(before store.MessageID, limit int) *gocql.Query {
			if before.IsZero() {
				return db.query(ctx, selectNewest, room, int(b), limit)
			}
			return db.query(ctx, selectNewestBefore, room, int(b), gocql.UUID(before), limit)
		}, roomRows(room))
	})
	if err != nil {
		return nil, fmt.Errorf("cassandra: messages of room %q: %w", room, err)
	}
	return msgs, nil
}

// MessagesAfter returns a page of the room's messages, oldest first, newer
// than after.
func (db *DB) MessagesAfter(ctx context.Context, room string, after store.MessageID, limit int) ([]store.Message, error) {
	if limit <= 0 {
		return nil, nil
	}
	listed, err := db.listedBuckets(ctx, roomBuckets, room)
	if err != nil {
		return nil, fmt.Errorf("cassandra: messages of room %q: %w", room, err)
	}
	buckets := store.OldestFirstBuckets(listed, after)
	msgs, err := store.ScanBuckets(ctx, buckets, limit, func(ctx context.Context, b store.Bucket, limit int) ([]store.Message, error) {
		return readLive(after, limit, func(after store.MessageID, limit int) *gocql.Query {
			// The zero id is no timeuuid (version 0): Cassandra rejects it as a bound.
			if after.IsZero() {
				return db.query(ctx, selectOldest, room, int(b), limit)
			}
			return db.query(ctx, selectOldestAfter, room, int(b), gocql.UUID(after), limit)
		}, roomRows(room))
	})
	if err != nil {
		return nil, fmt.Errorf("cassandra: messages of room %q: %w", room, err)
	}
	return msgs, nil
}

// A rowReader scans the rows of a message read, one message per row. ok is
// false for a row that is no message: see readLive.
type rowReader func(iter *gocql.Iter) (m store.Message, ok, more bool)

// roomRows reads messageColumns of a room's stream.
func roomRows(room string) rowReader {
	return func(iter *gocql.Iter) (store.Message, bool, bool) {
		var (
			id      gocql.UUID
			author  userUDT
			visible *bool
			m       = store.Message{Room: room}
		)
		if !iter.Scan(&id, &author, &m.Content, &m.System, &visible) {
			return store.Message{}, false, false
		}
		m.ID, m.Author, m.Hidden = store.MessageID(id), store.UserRef(author), hidden(visible)
		return m, author.Login != "", true
	}
}

// hidden reads the visible column: null, as in the messages of schema
// version 1, is visible.
func hidden(visible *bool) bool { return visible != nil && !*visible }

// readLive reads up to limit messages of one partition, from cursor on in
// the read's direction, with query(cursor, limit). A row without an author
// is no message but what a HideMessage racing a delete leaves behind (an
// UPDATE creates the row it sets a column of): it is skipped, and when that
// makes the page short the read goes on after the last row, so a page is
// short only at the end of the partition.
func readLive(cursor store.MessageID, limit int, query func(cursor store.MessageID, limit int) *gocql.Query, read rowReader) ([]store.Message, error) {
	var msgs []store.Message
	for len(msgs) < limit {
		want := limit - len(msgs)
		iter := query(cursor, want).Iter()
		rows := 0
		for {
			m, ok, more := read(iter)
			if !more {
				break
			}
			rows++
			cursor = m.ID
			if ok {
				msgs = append(msgs, m)
			}
		}
		if err := iter.Close(); err != nil {
			return nil, err
		}
		if rows < want {
			break // the end of the partition
		}
	}
	return msgs, nil
}

// forgetBuckets drops a deleted room's listing, but for the last two days:
// every server remembers which of today's buckets it listed, and would not
// list them again for a new room of the same name. Those rows cost an empty
// read at most; their message partitions are deleted.
func (db *DB) forgetBuckets(ctx context.Context, room string, now time.Time) error {
	db.listed.forget(roomBuckets, room)
	keep := store.BucketOf(now.Add(-24 * time.Hour))
	if err := db.query(ctx, deleteOldBuckets, room, int(keep)).Exec(); err != nil {
		return fmt.Errorf("delete bucket listing: %w", err)
	}
	return nil
}
