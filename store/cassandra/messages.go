package cassandra

import (
	"context"
	"fmt"
	"time"

	"github.com/gocql/gocql"
	"github.com/killrchat/chatql/store"
)

const (
	// Every copy of a message is written at the message's time, so that an
	// edit, written at its own, later time, wins even over a retried post.
	insertMessage = `INSERT INTO chat_room_messages (room_name, time_bucket, message_id, author, content, system_message, reply_to, attachments, search_terms, visible)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, true) USING TIMESTAMP ?`
	insertReply    = `INSERT INTO message_replies (room_name, time_bucket, root_id, reply_id, author) VALUES (?, ?, ?, ?, ?) USING TIMESTAMP ?`
	messageColumns = `message_id, ` + stateColumns
	// Newest first is the table's clustering order; oldest first reverses it.
	selectNewest       = `SELECT ` + messageColumns + ` FROM chat_room_messages WHERE room_name = ? AND time_bucket = ? LIMIT ?`
	selectNewestBefore = `SELECT ` + messageColumns + ` FROM chat_room_messages WHERE room_name = ? AND time_bucket = ? AND message_id < ? LIMIT ?`
	// A segment of a group's bucket, newest first: From <= id < Before, each
	// bound present or not.
	selectSegment       = selectNewest
	selectSegmentFrom   = `SELECT ` + messageColumns + ` FROM chat_room_messages WHERE room_name = ? AND time_bucket = ? AND message_id >= ? LIMIT ?`
	selectSegmentBefore = selectNewestBefore
	selectSegmentWithin = `SELECT ` + messageColumns + ` FROM chat_room_messages WHERE room_name = ? AND time_bucket = ? AND message_id >= ? AND message_id < ? LIMIT ?`
	// The same reads oldest first, for pages toward the newest: the cursor
	// (After, exclusive) or From bounds them below.
	oldestFirst             = ` ORDER BY message_id ASC LIMIT ?`
	selectOldest            = `SELECT ` + messageColumns + ` FROM chat_room_messages WHERE room_name = ? AND time_bucket = ?` + oldestFirst
	selectOldestAfter       = `SELECT ` + messageColumns + ` FROM chat_room_messages WHERE room_name = ? AND time_bucket = ? AND message_id > ?` + oldestFirst
	selectOldestBefore      = `SELECT ` + messageColumns + ` FROM chat_room_messages WHERE room_name = ? AND time_bucket = ? AND message_id < ?` + oldestFirst
	selectOldestFrom        = `SELECT ` + messageColumns + ` FROM chat_room_messages WHERE room_name = ? AND time_bucket = ? AND message_id >= ?` + oldestFirst
	selectOldestFromBefore  = `SELECT ` + messageColumns + ` FROM chat_room_messages WHERE room_name = ? AND time_bucket = ? AND message_id >= ? AND message_id < ?` + oldestFirst
	selectOldestAfterBefore = `SELECT ` + messageColumns + ` FROM chat_room_messages WHERE room_name = ? AND time_bucket = ? AND message_id > ? AND message_id < ?` + oldestFirst
	selectStreamAuthor      = `SELECT author FROM chat_room_messages WHERE room_name = ? AND time_bucket = ? AND message_id = ?`
	selectBucketAuthors     = `SELECT message_id, author FROM chat_room_messages WHERE room_name = ? AND time_bucket = ?`
	deleteMessages          = `DELETE FROM chat_room_messages USING TIMESTAMP ? WHERE room_name = ? AND time_bucket = ?`
	deleteMessage           = `DELETE FROM chat_room_messages WHERE room_name = ? AND time_bucket = ? AND message_id = ?`
	deleteListing           = `DELETE FROM messages_bucket USING TIMESTAMP ? WHERE room_name = ?`
)

// fanoutParallelism bounds the concurrent writes of one call: a group
// message to every member's inbox, a room's messages out of the index.
const fanoutParallelism = 16

// PostMessage stores m in the partition of its room and day, with its
// MessagePosted event, and in the message index by id and by author. The
// copies live in three partitions, likely on three different replicas, so
// they are written concurrently rather than in a batch: an unlogged batch
// across partitions only moves the fan-out to a coordinator, and a logged
// one adds the batchlog's writes to buy an atomicity that retrying buys too
// (every write is an idempotent upsert of the same values). The event
// shares the stream copy's partition key and goes in one batch with it. The
// post lists its day with its copies (see listBuckets). Its notices join
// the fan-out (see noticeWrites), and so does the move of the room in its
// participants' inbox orders (store.InboxOrder), a write per participant
// of a room of at most store.InboxFanoutLimit (see roomActivityWrites),
// made once for the posts that come while the room's last move is under
// way (roomMoves).
func (db *DB) PostMessage(ctx context.Context, m store.Message, notices ...store.Notice) error {
	extra, err := db.noticeWrites(ctx, m.ID, m.Room, notices)
	if err != nil {
		return err
	}
	extra = append(extra, func() error { return db.moves.moveTo(ctx, m.Room, m.ID) })
	if err := db.writeMessage(ctx, m, store.MessagePosted, extra); err != nil {
		return fmt.Errorf("cassandra: post message to room %q: %w", m.Room, err)
	}
	return nil
}

// writeMessage writes m's three copies, the listing of its day, and the
// extra writes (inbox updates, notices), concurrently. Unless kind is empty, it logs
// the event of m's arrival in m's room: id m.ID, User m.Author, in one
// single-partition batch with the stream copy (room_events and
// chat_room_messages share the partition key (room_name, time_bucket), so
// Cassandra applies the two rows as one mutation). It succeeds only if
// every write did.
func (db *DB) writeMessage(ctx context.Context, m store.Message, kind store.EventKind, extra []func() error) error {
	var ev *store.Event
	if kind != "" {
		ev = &store.Event{ID: m.ID, Kind: kind, Room: m.Room, User: m.Author, Message: &m}
	}
	return db.writeLogged(ctx, m, ev, extra)
}

// writeLogged is writeMessage with the event given whole (nil: none), for
// an event about someone else than the message's author.
func (db *DB) writeLogged(ctx context.Context, m store.Message, ev *store.Event, extra []func() error) error {
	b := store.BucketOf(m.ID.Time())
	id, author, ts := gocql.UUID(m.ID), userUDT(m.Author), writeTime(m.ID)
	var replyTo *gocql.UUID // null for a message that is no reply
	if !m.ReplyTo.IsZero() {
		replyTo = (*gocql.UUID)(&m.ReplyTo)
	}
	files, err := attachmentsValue(m.Attachments)
	if err != nil {
		return err
	}
	fo := newFanout(fanoutParallelism)
	db.listBuckets(ctx, fo, m, b)
	fo.Go(func() error {
		if ev == nil {
			return db.query(ctx, insertMessage, m.Room, int(b), id, author, m.Content, m.System, replyTo, files, searchTerms(m), ts).Exec()
		}
		// Idempotent: the message row names its timestamp, and the event
		// row is written once, by id.
		batch := db.session.NewBatch(gocql.UnloggedBatch).WithContext(ctx).RetryPolicy(retryElsewhere)
		batch.Entries = append(batch.Entries,
			gocql.BatchEntry{Stmt: insertMessage, Args: []any{m.Room, int(b), id, author, m.Content, m.System, replyTo, files, searchTerms(m), ts}, Idempotent: true},
			gocql.BatchEntry{Stmt: insertRoomEvent, Args: roomEventArgs(*ev), Idempotent: true})
		return db.session.ExecuteBatch(batch)
	})
	fo.Go(func() error {
		return db.query(ctx, insertByID, id, m.Room, author, m.Content, m.System, replyTo, files, ts).Exec()
	})
	fo.Go(func() error {
		return db.query(ctx, insertByAuthor, m.Author.Login, int(b), id, m.Room, author, m.Content, m.System, replyTo, files, ts).Exec()
	})
	if !m.ReplyTo.IsZero() {
		fo.Go(func() error {
			return db.query(ctx, insertReply, m.Room, int(store.BucketOf(m.ReplyTo.Time())), gocql.UUID(m.ReplyTo), id, author, ts).Exec()
		})
	}
	for _, w := range extra {
		fo.Go(w)
	}
	return fo.Wait()
}

// unwriteMessage deletes what writeMessage wrote of m, but the listing of
// its day: the copies and, with withEvent, the event of its arrival. It
// takes back a system message written ahead of a conditional update that
// did not apply (see JoinRoom). The listing stays: another write of the
// room may need it, and a listed day without messages costs one empty read.
func (db *DB) unwriteMessage(ctx context.Context, m store.Message, withEvent bool) error {
	b := int(store.BucketOf(m.ID.Time()))
	id := gocql.UUID(m.ID)
	fo := newFanout(4)
	fo.Go(func() error { return db.write(ctx, deleteMessage, m.Room, b, id).Exec() })
	if withEvent {
		fo.Go(func() error { return db.write(ctx, deleteRoomEvent, m.Room, b, id).Exec() })
	}
	fo.Go(func() error { return db.write(ctx, deleteByID, id).Exec() })
	fo.Go(func() error { return db.write(ctx, deleteByAuthor, m.Author.Login, b, id).Exec() })
	if err := fo.Wait(); err != nil {
		return fmt.Errorf("take back message %v: %w", m.ID, err)
	}
	return nil
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
			id gocql.UUID
			st messageState
		)
		if !iter.Scan(append([]any{&id}, st.dest()...)...) {
			return store.Message{}, false, false
		}
		m := store.Message{Room: room, ID: store.MessageID(id)}
		return m, st.fill(&m), true
	}
}

// stateColumns are the columns of every copy of a message after its key
// (and, in the index, its room), as messageState scans them.
const stateColumns = `author, content, system_message, visible, edited_at, deleted, reply_to, attachments, preview`

// messageState is a message's stateColumns as scanned.
type messageState struct {
	author   userUDT
	content  string
	system   bool
	visible  *bool // null, as in the messages of schema version 1: visible
	editedAt time.Time
	deleted  *bool
	replyTo  gocql.UUID
	files    string
	preview  previewCell
}

func (st *messageState) dest() []any {
	return []any{&st.author, &st.content, &st.system, &st.visible, &st.editedAt, &st.deleted, &st.replyTo, &st.files, &st.preview.version, &st.preview.json}
}

// fill sets m's state and reports whether the row is a message: a row
// without an author is what a change racing a delete leaves (see
// readLive).
func (st *messageState) fill(m *store.Message) bool {
	m.Author, m.Content, m.System = store.UserRef(st.author), st.content, st.system
	m.Hidden = st.visible != nil && !*st.visible
	m.Deleted = st.deleted != nil && *st.deleted
	m.ReplyTo = store.MessageID(st.replyTo)
	if !st.editedAt.IsZero() {
		m.EditedAt = st.editedAt.UTC()
	}
	if m.Deleted { // a tombstone, whatever an edit racing the delete wrote
		m.Content, m.EditedAt = "", time.Time{}
		return st.author.Login != ""
	}
	m.Attachments = decodeAttachments(st.files)
	m.Preview = st.preview.of(m.EditedAt)
	return st.author.Login != ""
}

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
