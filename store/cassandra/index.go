package cassandra

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gocql/gocql"
	"github.com/killrchat/chatql/store"
)

// The message index (seed 003): every message by its id and by its author,
// written with its stream copy by writeMessage.

const (
	insertByID = `INSERT INTO messages_by_id (message_id, room_name, author, content, system_message, reply_to, attachments, visible)
		VALUES (?, ?, ?, ?, ?, ?, ?, true) USING TIMESTAMP ?`
	selectByID = `SELECT room_name, ` + stateColumns + ` FROM messages_by_id WHERE message_id = ?`
	deleteByID = `DELETE FROM messages_by_id WHERE message_id = ?`

	insertByAuthor = `INSERT INTO messages_by_author (author_login, time_bucket, message_id, room_name, author, content, system_message, reply_to, attachments, visible)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, true) USING TIMESTAMP ?`
	byAuthorColumns      = `message_id, room_name, ` + stateColumns
	selectByAuthor       = `SELECT ` + byAuthorColumns + ` FROM messages_by_author WHERE author_login = ? AND time_bucket = ? LIMIT ?`
	selectByAuthorBefore = `SELECT ` + byAuthorColumns + ` FROM messages_by_author WHERE author_login = ? AND time_bucket = ? AND message_id < ? LIMIT ?`
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
	var st messageState
	if err := db.query(ctx, selectByID, gocql.UUID(id)).Scan(append([]any{&m.Room}, st.dest()...)...); err != nil {
		return store.Message{}, err
	}
	if !st.fill(&m) {
		return store.Message{}, gocql.ErrNotFound
	}
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
		id gocql.UUID
		m  store.Message
		st messageState
	)
	if !iter.Scan(append([]any{&id, &m.Room}, st.dest()...)...) {
		return store.Message{}, false, false
	}
	m.ID = store.MessageID(id)
	return m, st.fill(&m), true
}

// A message lives in three tables, its stream and the two index tables,
// and as the last message of inbox entries. A change (hide, edit, delete)
// writes each copy by its key, the same statements for each table.
type messageCopy struct {
	table, where string
	key          func(m store.Message) []any
}

var messageCopies = []messageCopy{
	{"chat_room_messages", "room_name = ? AND time_bucket = ? AND message_id = ?", func(m store.Message) []any {
		return []any{m.Room, int(store.BucketOf(m.ID.Time())), gocql.UUID(m.ID)}
	}},
	{"messages_by_id", "message_id = ?", func(m store.Message) []any { return []any{gocql.UUID(m.ID)} }},
	{"messages_by_author", "author_login = ? AND time_bucket = ? AND message_id = ?", func(m store.Message) []any {
		return []any{m.Author.Login, int(store.BucketOf(m.ID.Time())), gocql.UUID(m.ID)}
	}},
}

// A statement of a change: cql has %[1]s for a copy's table and %[2]s for
// its key's condition (or ends before summaryRow, for an inbox entry), and
// args go before the key's.
type statement struct {
	cql  string
	args []any
}

// A messageChange is what HideMessage, EditMessage and DeleteMessage do.
type messageChange struct {
	kind store.EventKind
	// changes reports whether the stored message would change, or an error
	// to return instead.
	changes func(stored store.Message) (bool, error)
	copy    []statement // for each copy of the message
	// stream are more statements for its stream copy alone (the search
	// terms), made from the stored message; nil for none.
	stream func(stored store.Message) []statement
	entry  []statement // for each inbox entry whose last message it may be
	apply  func(m *store.Message)
}

// erasedAt is the write timestamp of a deleted message's content
// tombstone: the year 9999, later than any edit's, so that no edit racing
// the delete brings the content back.
const erasedAt = int64(253402300799999999)

// lastEdit is conversations_by_user.last_edit.
type lastEdit struct {
	ID      gocql.UUID
	At      time.Time
	Content string
}

// HideMessage sets visible = false in every copy of the message and names
// it in the entries' last_hidden_id (see changeMessage). A direct
// message's hide is logged nowhere (the zero Event).
func (db *DB) HideMessage(ctx context.Context, m store.Message, by store.UserRef) (store.Event, error) {
	return db.changeMessage(ctx, m, by, messageChange{
		kind:    store.MessageHidden,
		changes: func(stored store.Message) (bool, error) { return !stored.Hidden, nil },
		copy:    []statement{{cql: `UPDATE %[1]s SET visible = false WHERE %[2]s`}},
		entry:   []statement{{hideLast, []any{writeTime(m.ID), gocql.UUID(m.ID)}}},
		apply:   func(m *store.Message) { m.Hidden = true },
	})
}

// EditMessage writes the content and edited_at of every copy USING
// TIMESTAMP the edit's time, so the latest edit wins everywhere, and the
// entries' last_edit at the message's time (see schema_v7.cql). The
// preview goes without a write: it names the edit it is of, no longer the
// message's (see previewCell).
func (db *DB) EditMessage(ctx context.Context, m store.Message, by store.UserRef, content string, at time.Time) (store.Event, error) {
	// The write time is the edit's to the microsecond, and after the
	// message's own, which edited_at's millisecond may not be.
	ts := max(at.UnixMicro(), writeTime(m.ID)+1)
	at = at.UTC().Truncate(time.Millisecond)
	return db.changeMessage(ctx, m, by, messageChange{
		kind: store.MessageEdited,
		changes: func(stored store.Message) (bool, error) {
			if stored.Deleted {
				return false, fmt.Errorf("message %v was deleted: %w", m.ID, store.ErrNotFound)
			}
			return true, nil
		},
		copy: []statement{{`UPDATE %[1]s USING TIMESTAMP ? SET content = ?, edited_at = ? WHERE %[2]s`, []any{ts, content, at}}},
		stream: func(stored store.Message) []statement {
			stored.Content = content
			return []statement{{`UPDATE %[1]s USING TIMESTAMP ? SET search_terms = ? WHERE %[2]s`, []any{ts, searchTerms(stored)}}}
		},
		entry: []statement{{setLastEdit, []any{writeTime(m.ID), gocql.UUID(m.ID), at, content}}},
		apply: func(m *store.Message) { m.Content, m.EditedAt, m.Preview = content, at, nil },
	})
}

// DeleteMessage sets deleted = true in every copy and erases its content,
// edited_at, attachments and preview by tombstones at erasedAt; in the inbox
// entries it erases last_message, last_edit, last_files and last_preview by
// tombstones at the message's time, which win a tie, so the
// entry's content goes if the message is its last and a newer message's is
// untouched.
func (db *DB) DeleteMessage(ctx context.Context, m store.Message, by store.UserRef) (store.Event, error) {
	return db.changeMessage(ctx, m, by, messageChange{
		kind:    store.MessageDeleted,
		changes: func(stored store.Message) (bool, error) { return !stored.Deleted, nil },
		copy: []statement{
			{cql: `UPDATE %[1]s SET deleted = true WHERE %[2]s`},
			{`DELETE content, edited_at, attachments, preview FROM %[1]s USING TIMESTAMP ? WHERE %[2]s`, []any{erasedAt}},
		},
		stream: func(store.Message) []statement {
			return []statement{{`DELETE search_terms FROM %[1]s USING TIMESTAMP ? WHERE %[2]s`, []any{erasedAt}}}
		},
		entry: []statement{{eraseLast, []any{writeTime(m.ID)}}},
		apply: func(m *store.Message) {
			m.Content, m.EditedAt, m.Deleted, m.Attachments, m.Preview = "", time.Time{}, true, nil, nil
		},
	})
}

// changeMessage makes change to every copy of the message: its stream,
// messages_by_id, messages_by_author, and the inbox entries whose last
// message it may be; and logs change.kind (a fresh id, User by) in the
// room's log, listing its day, or for a direct message (but a hide) in both
// users' inbox logs, with those writes. The copies are addressed by what
// the index holds (room, author), not by the caller's m, and only copies
// that exist are updated, since an UPDATE would create the others: a
// message of schema version 1 has only its stream copy. Returns ErrNotFound
// if there is no such message, and the zero Event, writing nothing, if the
// change changes nothing.
func (db *DB) changeMessage(ctx context.Context, m store.Message, by store.UserRef, change messageChange) (store.Event, error) {
	fail := func(err error) (store.Event, error) {
		return store.Event{}, fmt.Errorf("cassandra: %s of message %v: %w", change.kind, m.ID, err)
	}
	stored, err := db.indexedMessage(ctx, m.ID)
	copies := messageCopies
	if errors.Is(err, gocql.ErrNotFound) {
		// Not indexed: a message of version 1, if it is in its stream.
		stored, copies = m, messageCopies[:1]
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
		return fail(err)
	}
	if changes, err := change.changes(stored); err != nil || !changes {
		return store.Event{}, err
	}
	inboxes, err := db.inboxesOf(ctx, stored.Room)
	if err != nil {
		return fail(err)
	}
	fo := newFanout(fanoutParallelism)
	for i, c := range copies {
		statements := change.copy
		if i == 0 && change.stream != nil { // messageCopies[0], the stream
			statements = append(slices.Clone(statements), change.stream(stored)...)
		}
		for _, st := range statements {
			cql, args := fmt.Sprintf(st.cql, c.table, c.where), append(slices.Clone(st.args), c.key(stored)...)
			fo.Go(func() error { return db.query(ctx, cql, args...).Exec() })
		}
	}
	changed := stored
	change.apply(&changed)
	ev := store.Event{ID: store.NewMessageID(), Kind: change.kind, Room: stored.Room, User: by, Message: &changed}
	logged := !store.IsDirectConversation(stored.Room) || change.kind != store.MessageHidden
	for _, login := range inboxes {
		fo.Go(func() error {
			b := db.inboxBatch(ctx)
			for _, st := range change.entry {
				b.Query(st.cql+summaryRow, append(slices.Clone(st.args), login, stored.Room, sentinelID)...)
			}
			return db.session.ExecuteBatch(b)
		})
	}
	if logged {
		db.logMessageEvent(ctx, fo, ev)
	}
	if err := fo.Wait(); err != nil {
		return fail(err)
	}
	if !logged {
		return store.Event{}, nil
	}
	return ev, nil
}

// logMessageEvent logs ev, about a message, on fo: in the room's log,
// listing its day, or in both users' inbox logs for a direct message.
func (db *DB) logMessageEvent(ctx context.Context, fo *fanout, ev store.Event) {
	if !store.IsDirectConversation(ev.Room) {
		db.listDays(ctx, fo, listing{roomBuckets, ev.Room, store.BucketOf(ev.ID.Time())})
		fo.Go(func() error { return db.query(ctx, insertRoomEvent, roomEventArgs(ev)...).Exec() })
		return
	}
	a, b := store.DirectParties(ev.Room)
	for _, login := range []string{a, b} {
		fo.Go(func() error {
			b := db.inboxBatch(ctx)
			inboxListing(b, login, ev.ID)
			return db.session.ExecuteBatch(b)
		})
		fo.Go(db.inboxEventWrite(ctx, login, ev))
	}
}

// inboxesOf returns the logins whose inbox has an entry for the
// conversation: both users of a direct conversation, the members and
// former members of a private group, nobody for a public room. (Members
// who left a group before schema version 4 are not recorded: their entry
// may show a hidden last message as visible.)
func (db *DB) inboxesOf(ctx context.Context, conversation string) ([]string, error) {
	if store.IsDirectConversation(conversation) {
		a, b := store.DirectParties(conversation)
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
		fo.Go(func() error { return db.write(ctx, deleteByID, id).Exec() })
		if login != "" {
			fo.Go(func() error { return db.write(ctx, deleteByAuthor, login, int(b), id).Exec() })
		}
		author = userUDT{}
	}
	return errors.Join(iter.Close(), fo.Wait())
}
