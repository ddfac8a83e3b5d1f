package cassandra

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gocql/gocql"
	"github.com/killrchat/chatql/store"
)

const (
	insertMessage = `INSERT INTO chat_room_messages (room_name, time_bucket, message_id, author, content, system_message)
		VALUES (?, ?, ?, ?, ?, ?)`
	messageColumns = `message_id, author, content, system_message`
	// Newest first is the table's clustering order; oldest first reverses it.
	selectNewest       = `SELECT ` + messageColumns + ` FROM chat_room_messages WHERE room_name = ? AND time_bucket = ? LIMIT ?`
	selectNewestBefore = `SELECT ` + messageColumns + ` FROM chat_room_messages WHERE room_name = ? AND time_bucket = ? AND message_id < ? LIMIT ?`
	selectOldest       = `SELECT ` + messageColumns + ` FROM chat_room_messages WHERE room_name = ? AND time_bucket = ? ORDER BY message_id ASC LIMIT ?`
	selectOldestAfter  = `SELECT ` + messageColumns + ` FROM chat_room_messages WHERE room_name = ? AND time_bucket = ? AND message_id > ? ORDER BY message_id ASC LIMIT ?`
	deleteMessages     = `DELETE FROM chat_room_messages WHERE room_name = ? AND time_bucket = ?`

	selectBuckets = `SELECT time_bucket FROM messages_bucket WHERE room_name = ?`
	insertBucket  = `INSERT INTO messages_bucket (room_name, time_bucket) VALUES (?, ?)`
	// Deleting a room keeps the listing of its last two days; see forgetBuckets.
	deleteOldBuckets = `DELETE FROM messages_bucket WHERE room_name = ? AND time_bucket < ?`
)

// PostMessage stores m in the partition of its room and day. The day is
// listed in messages_bucket by the background flusher, so a post is one
// write; a day other than today (an import, a clock at midnight) is listed
// before the post, since readers probe only the recent days unlisted.
func (db *DB) PostMessage(ctx context.Context, m store.Message) error {
	b := store.BucketOf(m.ID.Time())
	// Listed before the message is written: an empty listed bucket costs a
	// read, an unlisted message would be lost to paging.
	if !db.buckets.note(m.Room, b, time.Now()) {
		if err := db.query(ctx, insertBucket, m.Room, int(b)).Exec(); err != nil {
			return fmt.Errorf("cassandra: list bucket %d of room %q: %w", b, m.Room, err)
		}
	}
	err := db.query(ctx, insertMessage, m.Room, int(b), gocql.UUID(m.ID), userUDT(m.Author), m.Content, m.System).Exec()
	if err != nil {
		return fmt.Errorf("cassandra: post message to room %q: %w", m.Room, err)
	}
	return nil
}

// Messages returns a page of the room's messages, newest first, older than
// before.
func (db *DB) Messages(ctx context.Context, room string, before store.MessageID, limit int) ([]store.Message, error) {
	if limit <= 0 {
		return nil, nil
	}
	listed, err := db.listedBuckets(ctx, room)
	if err != nil {
		return nil, fmt.Errorf("cassandra: messages of room %q: %w", room, err)
	}
	buckets := store.NewestFirstBuckets(listed, before, time.Now())
	msgs, err := store.ScanBuckets(ctx, buckets, limit, func(ctx context.Context, b store.Bucket, limit int) ([]store.Message, error) {
		if before.IsZero() {
			return db.readMessages(db.query(ctx, selectNewest, room, int(b), limit), room)
		}
		return db.readMessages(db.query(ctx, selectNewestBefore, room, int(b), gocql.UUID(before), limit), room)
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
	listed, err := db.listedBuckets(ctx, room)
	if err != nil {
		return nil, fmt.Errorf("cassandra: messages of room %q: %w", room, err)
	}
	buckets := store.OldestFirstBuckets(listed, after, time.Now())
	msgs, err := store.ScanBuckets(ctx, buckets, limit, func(ctx context.Context, b store.Bucket, limit int) ([]store.Message, error) {
		// The zero id is no timeuuid (version 0): Cassandra rejects it as a bound.
		if after.IsZero() {
			return db.readMessages(db.query(ctx, selectOldest, room, int(b), limit), room)
		}
		return db.readMessages(db.query(ctx, selectOldestAfter, room, int(b), gocql.UUID(after), limit), room)
	})
	if err != nil {
		return nil, fmt.Errorf("cassandra: messages of room %q: %w", room, err)
	}
	return msgs, nil
}

func (db *DB) readMessages(q *gocql.Query, room string) ([]store.Message, error) {
	iter := q.Iter()
	var msgs []store.Message
	var (
		id     gocql.UUID
		author userUDT
		m      = store.Message{Room: room}
	)
	for iter.Scan(&id, &author, &m.Content, &m.System) {
		m.ID, m.Author = store.MessageID(id), store.UserRef(author)
		msgs = append(msgs, m)
		author = userUDT{}
	}
	return msgs, iter.Close()
}

// listedBuckets returns the buckets messages_bucket lists for the room.
func (db *DB) listedBuckets(ctx context.Context, room string) ([]store.Bucket, error) {
	iter := db.query(ctx, selectBuckets, room).Iter()
	var listed []store.Bucket
	var b int
	for iter.Scan(&b) {
		listed = append(listed, store.Bucket(b))
	}
	if err := iter.Close(); err != nil {
		return nil, fmt.Errorf("read buckets: %w", err)
	}
	return listed, nil
}

// forgetBuckets drops a deleted room's listing, but for the last two days:
// every server remembers which of today's buckets it listed, and would not
// list them again for a new room of the same name. Those rows cost an empty
// read at most; their message partitions are deleted.
func (db *DB) forgetBuckets(ctx context.Context, room string, now time.Time) error {
	db.buckets.forget(room)
	keep := store.BucketOf(now.Add(-24 * time.Hour))
	if err := db.query(ctx, deleteOldBuckets, room, int(keep)).Exec(); err != nil {
		return fmt.Errorf("delete bucket listing: %w", err)
	}
	return nil
}

// flushLoop writes the queued buckets every interval until Close.
func (db *DB) flushLoop(interval, timeout time.Duration) {
	defer close(db.flushDone)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-db.stopFlush:
			return
		case <-tick.C:
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			// A failed pair stays queued for the next tick; readers keep
			// probing its day directly for store.UnflushedWindow.
			_ = db.flushBuckets(ctx)
			cancel()
		}
	}
}

// flushParallelism bounds the concurrent writes of a flush. Midnight queues
// a pair for every active room at once.
const flushParallelism = 16

// flushBuckets writes the queued (room, bucket) pairs to messages_bucket and
// queues again those that failed.
func (db *DB) flushBuckets(ctx context.Context) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		sem  = make(chan struct{}, flushParallelism)
	)
	for _, rb := range db.buckets.take() {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := db.query(ctx, insertBucket, rb.room, int(rb.bucket)).Exec(); err != nil {
				db.buckets.requeue(rb)
				mu.Lock()
				errs = append(errs, fmt.Errorf("list bucket %d of room %q: %w", rb.bucket, rb.room, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cassandra: flush buckets: %w", err)
	}
	return nil
}
