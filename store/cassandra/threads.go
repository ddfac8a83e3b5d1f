package cassandra

import (
	"context"
	"fmt"
	"slices"

	"github.com/gocql/gocql"
	"github.com/killrchat/chatql/store"
)

const (
	// selectThreads reads the replies to some roots of one room and day.
	selectThreads       = `SELECT root_id, author FROM message_replies WHERE room_name = ? AND time_bucket = ? AND root_id IN ?`
	selectReplies       = `SELECT reply_id FROM message_replies WHERE room_name = ? AND time_bucket = ? AND root_id = ? LIMIT ?`
	selectRepliesBefore = `SELECT reply_id FROM message_replies WHERE room_name = ? AND time_bucket = ? AND root_id = ? AND reply_id < ? LIMIT ?`
	// Oldest first reverses the whole clustering order, root_id's too (the
	// root is one value).
	selectRepliesAfter  = `SELECT reply_id FROM message_replies WHERE room_name = ? AND time_bucket = ? AND root_id = ? AND reply_id > ? ORDER BY root_id DESC, reply_id ASC LIMIT ?`
	selectOldestReplies = `SELECT reply_id FROM message_replies WHERE room_name = ? AND time_bucket = ? AND root_id = ? ORDER BY root_id DESC, reply_id ASC LIMIT ?`
	deleteRepliesOf     = `DELETE FROM message_replies USING TIMESTAMP ? WHERE room_name = ? AND time_bucket = ?`
)

// ThreadSummaries reads the thread rows of roots with one query per room
// and day (readDays). Within a root the rows come newest first, the
// clustering order.
func (db *DB) ThreadSummaries(ctx context.Context, roots []store.Message) (map[store.MessageID]store.Thread, error) {
	type reply struct {
		root   store.MessageID
		author store.UserRef
	}
	rows, err := readDays(ctx, db, roots, selectThreads, func(iter *gocql.Iter) []reply {
		var (
			rows   []reply
			root   gocql.UUID
			author userUDT
		)
		for iter.Scan(&root, &author) {
			rows = append(rows, reply{store.MessageID(root), store.UserRef(author)})
		}
		return rows
	})
	if err != nil {
		return nil, fmt.Errorf("cassandra: threads: %w", err)
	}
	out := make(map[store.MessageID]store.Thread)
	for _, r := range rows {
		t := out[r.root]
		t.Replies++
		if len(t.LatestRepliers) < store.MaxLatestRepliers && !slices.Contains(t.LatestRepliers, r.author) {
			t.LatestRepliers = append(t.LatestRepliers, r.author)
		}
		out[r.root] = t
	}
	return out, nil
}

// ThreadReplies reads a page of the thread's rows, then the replies from
// their streams as a log's events are joined (one read per partition).
func (db *DB) ThreadReplies(ctx context.Context, root store.Message, before store.MessageID, limit int) ([]store.Message, error) {
	b := int(store.BucketOf(root.ID.Time()))
	q := db.query(ctx, selectReplies, root.Room, b, gocql.UUID(root.ID), limit)
	if !before.IsZero() {
		q = db.query(ctx, selectRepliesBefore, root.Room, b, gocql.UUID(root.ID), gocql.UUID(before), limit)
	}
	return db.readReplies(ctx, root, q)
}

// ThreadRepliesAfter reads a page of the thread's rows oldest first, then
// the replies, as ThreadReplies does.
func (db *DB) ThreadRepliesAfter(ctx context.Context, root store.Message, after store.MessageID, limit int) ([]store.Message, error) {
	b := int(store.BucketOf(root.ID.Time()))
	q := db.query(ctx, selectOldestReplies, root.Room, b, gocql.UUID(root.ID), limit)
	if !after.IsZero() {
		q = db.query(ctx, selectRepliesAfter, root.Room, b, gocql.UUID(root.ID), gocql.UUID(after), limit)
	}
	return db.readReplies(ctx, root, q)
}

// readReplies reads the reply ids q selects, then the replies, in q's
// order.
func (db *DB) readReplies(ctx context.Context, root store.Message, q *gocql.Query) ([]store.Message, error) {
	iter := q.Iter()
	var (
		rows []logRow
		id   gocql.UUID
	)
	for iter.Scan(&id) {
		rows = append(rows, logRow{id: store.MessageID(id), room: root.Room, message: store.MessageID(id)})
	}
	if err := iter.Close(); err != nil {
		return nil, fmt.Errorf("cassandra: thread of %v: %w", root.ID, err)
	}
	joined, err := db.joinMessages(ctx, rows)
	if err != nil {
		return nil, fmt.Errorf("cassandra: thread of %v: %w", root.ID, err)
	}
	replies := make([]store.Message, 0, len(joined))
	for _, ev := range joined {
		replies = append(replies, *ev.Message)
	}
	return replies, nil
}
