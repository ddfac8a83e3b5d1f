package cassandra

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gocql/gocql"
	"github.com/killrchat/chatql/store"
)

// The message index (seed 003): every message by its id and by its author,
// written with its stream copy by writeMessage.

const (
	insertByID = `INSERT INTO messages_by_id (message_id, room_name, author, content, system_message, visible)
		VALUES (?, ?, ?, ?, ?, true)`
	selectByID = `SELECT room_name, author, content, system_message, visible FROM messages_by_id WHERE message_id = ?`
	hideByID   = `UPDATE messages_by_id SET visible = false WHERE message_id = ?`
	deleteByID = `DELETE FROM messages_by_id WHERE message_id = ?`

	insertByAuthor = `INSERT INTO messages_by_author (author_login, time_bucket, message_id, room_name, author, content, system_message, visible)
		VALUES (?, ?, ?, ?, ?, ?, ?, true)`
	byAuthorColumns      = `message_id, room_name, author, content, system_message, visible`
	selectByAuthor       = `SELECT ` + byAuthorColumns + ` FROM messages_by_author WHERE author_login = ? AND time_bucket = ? LIMIT ?`
	selectByAuthorBefore = `SELECT ` + byAuthorColumns + ` FROM messages_by_author WHERE author_login = ? AND time_bucket = ? AND message_id < ? LIMIT ?`
	hideByAuthor         = `UPDATE messages_by_author SET visible = false WHERE author_login = ? AND time_bucket = ? AND message_id = ?`
	deleteByAuthor       = `DELETE FROM messages_by_author WHERE author_login = ? AND time_bucket = ? AND message_id = ?`

	// selectInboxes reads who has an inbox entry of a group.
	selectInboxes = `SELECT kind, participants, former_members FROM chat_rooms WHERE room_name = ?`
)

// Message returns the message with this id, from messages_by_id. Messages
// posted before schema version 2 are not in the index.
func (db *DB) Message(ctx context.Context, id store.MessageID) (store.Message, error) {
	m, err := db.indexedMessage(ctx, id)
	if errors.Is(err, gocql.ErrNotFound) {
		return store.Message{}, fmt.Errorf("message %v: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return store.Message{}, fmt.Errorf("cassandra: read message %v: %w", id, err)
	}
	return m, nil
}

// indexedMessage reads id from messages_by_id. A row without an author (see
// readLive) is gocql.ErrNotFound.
func (db *DB) indexedMessage(ctx context.Context, id store.MessageID) (store.Message, error) {
	if id.IsZero() {
		return store.Message{}, gocql.ErrNotFound // no timeuuid: Cassandra would reject it
	}
	m := store.Message{ID: id}
	var (
		author  userUDT
		visible *bool
	)
	if err := db.query(ctx, selectByID, gocql.UUID(id)).Scan(&m.Room, &author, &m.Content, &m.System, &visible); err != nil {
		return store.Message{}, err
	}
	if author.Login == "" {
		return store.Message{}, gocql.ErrNotFound
	}
	m.Author, m.Hidden = store.UserRef(author), hidden(visible)
	return m, nil
}

// MessagesByAuthor returns a page of login's messages, newest first, older
// than before: the author's listed buckets, then one read per bucket, as
// Messages does for a room.
func (db *DB) MessagesByAuthor(ctx context.Context, login string, before store.MessageID, limit int) ([]store.Message, error) {
	if limit <= 0 {
		return nil, nil
	}
	listed, err := db.listedBuckets(ctx, authorBuckets, login)
	if err != nil {
		return nil, fmt.Errorf("cassandra: messages of author %q: %w", login, err)
	}
	buckets := store.NewestFirstBuckets(listed, before)
	msgs, err := store.ScanBuckets(ctx, buckets, limit, func(ctx context.Context, b store.Bucket, limit int) ([]store.Message, error) {
		return readLive(before, limit, func(before store.MessageID, limit int) *gocql.Query {
			if before.IsZero() {
				return db.query(ctx, selectByAuthor, login, int(b), limit)
			}
			return db.query(ctx, selectByAuthorBefore, login, int(b), gocql.UUID(before), limit)
		}, authorRows)
	})
	if err != nil {
		return nil, fmt.Errorf("cassandra: messages of author %q: %w", login, err)
	}
	return msgs, nil
}

// authorRows reads byAuthorColumns.
func authorRows(iter *gocql.Iter) (store.Message, bool, bool) {
	var (
		id      gocql.UUID
		author  userUDT
		visible *bool
		m       store.Message
	)
	if !iter.Scan(&id, &m.Room, &author, &m.Content, &m.System, &visible) {
		return store.Message{}, false, false
	}
	m.ID, m.Author, m.Hidden = store.MessageID(id), store.UserRef(author), hidden(visible)
	return m, author.Login != "", true
}

// HideMessage sets visible = false in every copy of the message: its
// stream, messages_by_id, messages_by_author, and the inbox entries whose
// last message it may be; and, for a message of a room or group, logs
// MessageHidden (a fresh id, User by) in the room's log, listing its day,
// with those writes. The copies are addressed by what the index holds
// (room, author), not by the caller's m, and only copies that exist are
// updated, since an UPDATE would create the others: a message of schema
// version 1 has only its stream copy. Returns ErrNotFound if there is no
// such message.
func (db *DB) HideMessage(ctx context.Context, m store.Message, by store.UserRef) (store.Event, error) {
	stored, err := db.indexedMessage(ctx, m.ID)
	indexed := err == nil
	switch {
	case errors.Is(err, gocql.ErrNotFound):
		// Not indexed: a message of version 1, if it is in its stream.
		stored = m
		var author userUDT
		err = db.query(ctx, selectStreamAuthor, m.Room, int(store.BucketOf(m.ID.Time())), gocql.UUID(m.ID)).Scan(&author)
		if err == nil && author.Login == "" {
			err = gocql.ErrNotFound
		}
		if errors.Is(err, gocql.ErrNotFound) {
			return store.Event{}, fmt.Errorf("message %v: %w", m.ID, store.ErrNotFound)
		}
	}
	if err != nil {
		return store.Event{}, fmt.Errorf("cassandra: hide message %v: %w", m.ID, err)
	}
	inboxes, err := db.inboxesOf(ctx, stored.Room)
	if err != nil {
		return store.Event{}, fmt.Errorf("cassandra: hide message %v: %w", m.ID, err)
	}
	id, b := gocql.UUID(m.ID), int(store.BucketOf(m.ID.Time()))
	fo := newFanout(fanoutParallelism)
	fo.Go(func() error { return db.query(ctx, hideInStream, stored.Room, b, id).Exec() })
	if indexed {
		fo.Go(func() error { return db.query(ctx, hideByID, id).Exec() })
		fo.Go(func() error { return db.query(ctx, hideByAuthor, stored.Author.Login, b, id).Exec() })
	}
	for _, login := range inboxes {
		fo.Go(func() error {
			return db.query(ctx, hideLast, writeTime(m.ID), id, login, stored.Room, sentinelID).Exec()
		})
	}
	stored.Hidden = true
	var ev store.Event
	if !store.IsDirectConversation(stored.Room) {
		ev = store.Event{ID: store.NewMessageID(), Kind: store.MessageHidden, Room: stored.Room, User: by, Message: &stored}
		db.listDays(ctx, fo, listing{roomBuckets, stored.Room, store.BucketOf(ev.ID.Time())})
		fo.Go(func() error { return db.query(ctx, insertRoomEvent, roomEventArgs(ev)...).Exec() })
	}
	if err := fo.Wait(); err != nil {
		return store.Event{}, fmt.Errorf("cassandra: hide message %v: %w", m.ID, err)
	}
	return ev, nil
}

// inboxesOf returns the logins whose inbox has an entry for the
// conversation: both users of a direct conversation, the members and
// former members of a private group, nobody for a public room. (Members
// who left a group before schema version 4 are not recorded: their entry
// may show a hidden last message as visible.)
func (db *DB) inboxesOf(ctx context.Context, conversation string) ([]string, error) {
	if store.IsDirectConversation(conversation) {
		a, b, _ := strings.Cut(conversation, ":")
		return []string{a, b}, nil
	}
	var (
		kind         string
		participants []userUDT
		former       []string
	)
	err := db.query(ctx, selectInboxes, conversation).Scan(&kind, &participants, &former)
	if errors.Is(err, gocql.ErrNotFound) || err == nil && store.RoomKind(kind) != store.PrivateGroup {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read room %q: %w", conversation, err)
	}
	logins := former
	for _, p := range participants {
		if !slices.Contains(logins, p.Login) {
			logins = append(logins, p.Login)
		}
	}
	return logins, nil
}

// unindexBucket deletes the index copies of the messages of one bucket of a
// deleted room, before the bucket itself.
func (db *DB) unindexBucket(ctx context.Context, room string, b store.Bucket) error {
	fo := newFanout(fanoutParallelism)
	iter := db.query(ctx, selectBucketAuthors, room, int(b)).Iter()
	var (
		id     gocql.UUID
		author userUDT
	)
	for iter.Scan(&id, &author) {
		id, login := id, author.Login // the scan targets are reused
		fo.Go(func() error { return db.query(ctx, deleteByID, id).Exec() })
		if login != "" {
			fo.Go(func() error { return db.query(ctx, deleteByAuthor, login, int(b), id).Exec() })
		}
		author = userUDT{}
	}
	return errors.Join(iter.Close(), fo.Wait())
}
