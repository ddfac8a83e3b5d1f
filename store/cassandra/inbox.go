package cassandra

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gocql/gocql"
	"github.com/killrchat/chatql/store"
)

// Inboxes live in conversations_by_user (schema_v2.cql), one partition per
// user and one row per conversation, at sentinelID. Unread counts are not
// stored: Inbox counts each conversation's messages after its read mark
// from the stream, up to store.UnreadCap, so a burst of messages adds no
// row to anyone's inbox. Three kinds of write touch a row, and all commute,
// so nothing is ever read and written back:
//
//   - A message sets last_* USING TIMESTAMP its own time, and its author's
//     read_upto the same way: whatever order sends arrive in, the newest
//     message's cells win.
//   - MarkRead sets read_upto USING TIMESTAMP the time of the message it
//     names, so the mark of the newest message wins whatever order marks
//     and posts arrive in: a mark never moves back.
//   - Membership windows (joined_at, left_at) and kind are set-adds at the
//     current time, in cells no message writes.
//
// Deleting a group deletes its members' rows at the current time, which
// shadows every cell of the group written before. Schema version 5
// converted the unread rows the versions before kept after each row
// (convertUnreadRows); rows other than sentinelID's are passed over.

// sentinelID is the message_id of every row: the smallest timeuuid in
// Cassandra's order (the UUID epoch, 1582-10-15, with the low bytes at
// -128), store.MinMessageID of that instant. The versions before read
// marks kept a row per unread message after it.
var sentinelID = gocql.UUID{0, 0, 0, 0, 0, 0, 0x10, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80}

const (
	summaryRow = ` WHERE login = ? AND conversation_id = ? AND message_id = ?`
	// setLastDirect is what lastMessage writes for a direct message
	// without a thread or attachments (the tests write entries with it).
	setLastDirect = `UPDATE conversations_by_user USING TIMESTAMP ?
		SET kind = 'direct', peer = ?, last_message_id = ?, last_message = ?, last_author = ?, last_system = ?` + summaryRow
	// hideLast names the newest hidden message, at that message's time: the
	// last message is hidden if it is the one named.
	hideLast = `UPDATE conversations_by_user USING TIMESTAMP ? SET last_hidden_id = ?`
	// setLastEdit records an edit of a message, at that message's time: it
	// is the last message's if their ids agree (see schema_v7.cql).
	// The tuple is a literal of three markers: gocql v1.7.0 counts a
	// tuple marker's elements as values but marshals it from one.
	setLastEdit = `UPDATE conversations_by_user USING TIMESTAMP ? SET last_edit = (?, ?, ?)`
	// eraseLast erases a deleted message's content, attachments and
	// preview, at its time: a tie, which the tombstones win, if it is the
	// last message.
	eraseLast = `DELETE last_message, last_edit, last_files, last_preview FROM conversations_by_user USING TIMESTAMP ?`
	// setReadMark moves the read mark, at the time of the message it names.
	setReadMark        = `UPDATE conversations_by_user USING TIMESTAMP ? SET read_upto = ?` + summaryRow
	openWindowStmt     = `UPDATE conversations_by_user SET kind = 'group', joined_at = joined_at + ?` + summaryRow
	undoWindowStmt     = `UPDATE conversations_by_user SET joined_at = joined_at - ?` + summaryRow
	closeWindowStmt    = `UPDATE conversations_by_user SET left_at = left_at + ?` + summaryRow
	deleteConversation = `DELETE FROM conversations_by_user USING TIMESTAMP ? WHERE login = ? AND conversation_id = ?`

	entryColumns = `conversation_id, message_id, kind, peer, last_message_id, last_message, last_author,
		last_system, last_hidden_id, last_edit, read_upto, joined_at, left_at, last_reply, last_files, last_preview`
	selectInbox = `SELECT ` + entryColumns + ` FROM conversations_by_user WHERE login = ?`
	selectEntry = `SELECT ` + entryColumns + ` FROM conversations_by_user WHERE login = ? AND conversation_id = ? AND message_id = ?`
)

// countParallelism bounds the unread counts an inbox read makes at once.
const countParallelism = 8

// writeTime is the write timestamp of a message's cells: its time in
// microseconds, Cassandra's convention.
func writeTime(id store.MessageID) int64 { return id.Time().UnixMicro() }

// SendDirect stores m in the conversation's stream and index, sets it as
// the last message of both users' entries and as read by its author, and logs
// DirectMessage in both users' inbox logs. Each user's inbox rows (and the
// listing of the log's day) are in one partition and go in one unlogged
// batch, which is applied as one mutation; the log rows are a partition of
// their own each, and so are the notices' (see noticeWrites). Every write
// is concurrent and idempotent: a failed send is retried as is.
func (db *DB) SendDirect(ctx context.Context, m store.Message, to store.UserRef, notices ...store.Notice) error {
	if want := store.DirectConversationID(m.Author.Login, to.Login); m.Room != want {
		return store.Invalidf("direct message from %q to %q: its conversation is %q, not %q", m.Author.Login, to.Login, want, m.Room)
	}
	ts, id := writeTime(m.ID), gocql.UUID(m.ID)
	files, err := attachmentsValue(m.Attachments)
	if err != nil {
		return fmt.Errorf("cassandra: send direct message to %q: %w", to.Login, err)
	}
	stmt, last := lastMessage(m, &to, files)
	ev := store.Event{ID: m.ID, Kind: store.DirectMessage, Room: m.Room, User: m.Author, Message: &m}
	extra := []func() error{db.inboxEventWrite(ctx, m.Author.Login, ev), db.activityWrite(ctx, m.Author.Login, m.Room, m.ID), func() error {
		b := db.inboxBatch(ctx)
		b.Query(stmt, last(m.Author.Login)...)
		b.Query(setReadMark, ts, id, m.Author.Login, m.Room, sentinelID)
		inboxListing(b, m.Author.Login, ev.ID)
		return db.session.ExecuteBatch(b)
	}}
	if to.Login != m.Author.Login {
		stmt, last := lastMessage(m, &m.Author, files)
		extra = append(extra, func() error {
			b := db.inboxBatch(ctx)
			b.Query(stmt, last(to.Login)...)
			inboxListing(b, to.Login, ev.ID)
			return db.session.ExecuteBatch(b)
		}, db.inboxEventWrite(ctx, to.Login, ev), db.activityWrite(ctx, to.Login, m.Room, m.ID))
	}
	writes, err := db.noticeWrites(ctx, m.ID, m.Room, notices)
	if err != nil {
		return err
	}
	if err := db.writeMessage(ctx, m, "", append(extra, writes...)); err != nil {
		return fmt.Errorf("cassandra: send direct message to %q: %w", to.Login, err)
	}
	return nil
}

// lastMessage returns the statement setting m as the last message of an
// entry, of a direct conversation with peer or of a group (peer nil), and
// its arguments for the entry's owner. The thread (last_reply) and the
// attachments (files, as attachmentsValue binds them: last_files) are set
// only when the message has them, so a message writes no null.
func lastMessage(m store.Message, peer *store.UserRef, files any) (string, func(login string) []any) {
	ts, id, author := writeTime(m.ID), gocql.UUID(m.ID), userUDT(m.Author)
	var set strings.Builder
	set.WriteString(`UPDATE conversations_by_user USING TIMESTAMP ? SET `)
	args := []any{ts}
	if peer != nil {
		set.WriteString(`kind = 'direct', peer = ?, `)
		args = append(args, userUDT(*peer))
	} else {
		set.WriteString(`kind = 'group', `)
	}
	set.WriteString(`last_message_id = ?, last_message = ?, last_author = ?, last_system = ?`)
	args = append(args, id, m.Content, author, m.System)
	if !m.ReplyTo.IsZero() {
		set.WriteString(`, last_reply = (?, ?)`)
		args = append(args, id, gocql.UUID(m.ReplyTo))
	}
	if files != gocql.UnsetValue {
		set.WriteString(`, last_files = (?, ?)`)
		args = append(args, id, files)
	}
	set.WriteString(summaryRow)
	return set.String(), func(login string) []any {
		return append(slices.Clone(args), login, m.Room, sentinelID)
	}
}

// Inbox returns login's entries, newest message first: one read of its
// partition, then the unread counts of the entries with messages after
// their mark, countParallelism at a time.
func (db *DB) Inbox(ctx context.Context, login string) ([]store.Conversation, error) {
	inbox, err := db.InboxEntries(ctx, login)
	if err != nil {
		return nil, err
	}
	fo := newFanout(countParallelism)
	for i := range inbox {
		fo.Go(func() error { return db.countUnread(ctx, login, &inbox[i]) })
	}
	if err := fo.Wait(); err != nil {
		return nil, err
	}
	slices.SortFunc(inbox, store.ByNewestMessage)
	return inbox, nil
}

// InboxEntries reads login's partition of conversations_by_user.
func (db *DB) InboxEntries(ctx context.Context, login string) ([]store.Conversation, error) {
	iter := db.query(ctx, selectInbox, login).Iter()
	var inbox []store.Conversation
	for {
		c, ok, more := scanEntry(iter)
		if !more {
			break
		}
		if ok {
			inbox = append(inbox, c)
		}
	}
	if err := iter.Close(); err != nil {
		return nil, fmt.Errorf("cassandra: inbox of %q: %w", login, err)
	}
	return inbox, nil
}

// Conversation returns login's entry id, with its unread count.
func (db *DB) Conversation(ctx context.Context, login, id string) (store.Conversation, error) {
	iter := db.query(ctx, selectEntry, login, id, sentinelID).Iter()
	c, ok, _ := scanEntry(iter)
	if err := iter.Close(); err != nil {
		return store.Conversation{}, fmt.Errorf("cassandra: conversation %q of %q: %w", id, login, err)
	}
	if !ok {
		return store.Conversation{}, fmt.Errorf("conversation %q of %q: %w", id, login, store.ErrNotFound)
	}
	if err := db.countUnread(ctx, login, &c); err != nil {
		return store.Conversation{}, err
	}
	return c, nil
}

// countUnread sets c.Unread and c.Mentions (see store.CountUnread).
func (db *DB) countUnread(ctx context.Context, login string, c *store.Conversation) error {
	unread, mentions, err := store.CountUnread(ctx, login, *c, db.stream(c.ID), db)
	if err != nil {
		return fmt.Errorf("cassandra: unread messages of %q in %q: %w", login, c.ID, err)
	}
	c.Unread, c.Mentions = unread, mentions
	return nil
}

// scanEntry scans one row of entryColumns. ok is false for a row that is
// no entry: an unread row of the versions before read marks, or a row
// without a kind (a hide, a leave or a mark-read that raced a delete, or
// marked a conversation login has none of).
func scanEntry(iter *gocql.Iter) (c store.Conversation, ok, more bool) {
	var (
		first, lastID, hiddenID, readUpTo gocql.UUID
		kind                              string
		peer, lastAuthor                  userUDT
		lastContent                       string
		lastSystem                        bool
		joined, left                      []time.Time
	)
	var edit lastEdit // a tuple scans into one destination per element
	var replyOf, replyTo, filesOf, previewOf gocql.UUID
	var files string
	var preview previewCell
	if !iter.Scan(&c.ID, &first, &kind, &peer, &lastID, &lastContent, &lastAuthor, &lastSystem, &hiddenID, &edit.ID, &edit.At, &edit.Content, &readUpTo, &joined, &left, &replyOf, &replyTo,
		&filesOf, &files, &previewOf, &preview.version, &preview.json) {
		return store.Conversation{}, false, false
	}
	if first != sentinelID || kind == "" {
		return store.Conversation{}, false, true
	}
	c.Kind, c.ReadUpTo = store.ConversationKind(kind), store.MessageID(readUpTo)
	if c.Kind == store.DirectConversation {
		c.Peer = store.UserRef(peer)
	} else {
		c.Windows = windowsOf(joined, left)
	}
	if lastID != (gocql.UUID{}) {
		c.LastMessage = store.Message{
			Room:    c.ID,
			ID:      store.MessageID(lastID),
			Author:  store.UserRef(lastAuthor),
			Content: lastContent,
			System:  lastSystem,
			Hidden:  hiddenID == lastID,
			// Only a message of attachments alone has empty content, and
			// the delete erased them too.
			Deleted: lastContent == "" && filesOf != lastID,
		}
		if replyOf == lastID {
			c.LastMessage.ReplyTo = store.MessageID(replyTo)
		}
		if edit.ID == lastID && !c.LastMessage.Deleted {
			c.LastMessage.Content, c.LastMessage.EditedAt = edit.Content, edit.At.UTC()
		}
		if filesOf == lastID && !c.LastMessage.Deleted {
			c.LastMessage.Attachments = decodeAttachments(files)
		}
		if previewOf == lastID && !c.LastMessage.Deleted {
			c.LastMessage.Preview = preview.of(c.LastMessage.EditedAt)
		}
	}
	return c, true, true
}

// windowsOf pairs the join and leave times of an entry into membership
// windows, oldest first. In a well-formed history joins and leaves
// alternate, and the i-th leave closes the i-th join. The history is
// walked in time order rather than paired by index so that what races
// leave behind still reads sensibly: a join while a member (two adds at
// once) or a leave while not one is ignored, and a join and a leave at the
// same millisecond (the sets' precision) leave the membership as it was.
func windowsOf(joined, left []time.Time) []store.Window {
	type event struct {
		at          time.Time
		join, leave bool
	}
	var evs []event
	add := func(at time.Time, join bool) {
		i, found := slices.BinarySearchFunc(evs, at, func(e event, t time.Time) int { return e.at.Compare(t) })
		if !found {
			evs = slices.Insert(evs, i, event{at: at})
		}
		if join {
			evs[i].join = true
		} else {
			evs[i].leave = true
		}
	}
	for _, t := range joined {
		add(t, true)
	}
	for _, t := range left {
		add(t, false)
	}
	var ws []store.Window
	open := false
	for _, e := range evs {
		switch {
		case e.join && e.leave:
		case e.join && !open:
			ws = append(ws, store.Window{From: e.at})
			open = true
		case e.leave && open:
			ws[len(ws)-1].To = e.at
			open = false
		}
	}
	return ws
}

// MarkRead sets login's read mark of the conversation to upTo at upTo's
// time (see the top of this file), and logs UnreadChanged in login's inbox
// log. It reads nothing: marking read a conversation login has no entry
// for writes a row without a kind, which is no entry. The event's User is
// the owner by login alone: that is all MarkRead is given.
func (db *DB) MarkRead(ctx context.Context, login, id string, upTo store.MessageID) (store.Event, error) {
	if upTo.IsZero() {
		return store.Event{}, nil // nothing is read up to nothing
	}
	ev := store.Event{ID: store.NewMessageID(), Kind: store.UnreadChanged, Room: id, User: store.UserRef{Login: login}}
	fo := newFanout(2)
	fo.Go(func() error {
		b := db.inboxBatch(ctx)
		b.Query(setReadMark, writeTime(upTo), gocql.UUID(upTo), login, id, sentinelID)
		inboxListing(b, login, ev.ID)
		return db.session.ExecuteBatch(b)
	})
	fo.Go(db.inboxEventWrite(ctx, login, ev))
	if err := fo.Wait(); err != nil {
		return store.Event{}, fmt.Errorf("cassandra: mark conversation %q of %q read: %w", id, login, err)
	}
	return ev, nil
}

const (
	selectInboxRows  = `SELECT login, conversation_id, message_id, last_message_id, read_upto FROM conversations_by_user`
	deleteUnreadRows = `DELETE FROM conversations_by_user WHERE login = ? AND conversation_id = ? AND message_id > ?`
)

// convertUnreadRows converts the inboxes of the versions before read marks
// (schema version 5), which kept a row per unread message after each
// conversation's: a conversation with unread rows is read up to just
// before its oldest, one without is read up to its last message, each mark
// at its message's time (so a later mark-read wins), and the unread rows
// are range-deleted. It reads the whole table once, in pages; an entry
// with a mark already is converted, and only loses its unread rows, so a
// conversion cut short, or run by two servers starting at once, converts
// the rest the same way. (Two servers interleaving on one entry may leave
// it read up to its last message.)
func convertUnreadRows(ctx context.Context, session *gocql.Session) error {
	iter := session.Query(selectInboxRows).WithContext(ctx).PageSize(1000).Iter()
	type entry struct {
		login, id     string
		last, read    gocql.UUID
		summary       bool // its row was read (not only unread rows)
		oldestUnread  gocql.UUID
		hasUnreadRows bool
	}
	var e entry
	write := func(stmt string, args ...any) error {
		return session.Query(stmt, args...).WithContext(ctx).Exec()
	}
	finish := func() error {
		if e.login == "" {
			return nil
		}
		var mark gocql.UUID
		switch {
		case !e.summary || e.read != (gocql.UUID{}):
		case e.hasUnreadRows:
			mark = gocql.UUID(store.MinMessageID(store.MessageID(e.oldestUnread).Time()))
		case e.last != (gocql.UUID{}):
			mark = e.last
		}
		if mark != (gocql.UUID{}) {
			if err := write(setReadMark, writeTime(store.MessageID(mark)), mark, e.login, e.id, sentinelID); err != nil {
				return err
			}
		}
		if e.hasUnreadRows {
			return write(deleteUnreadRows, e.login, e.id, sentinelID)
		}
		return nil
	}
	var (
		login, id         string
		rowID, last, read gocql.UUID
	)
	for iter.Scan(&login, &id, &rowID, &last, &read) {
		if login != e.login || id != e.id {
			if err := finish(); err != nil {
				return errors.Join(fmt.Errorf("converting the unread rows of %q: %w", e.login, err), iter.Close())
			}
			e = entry{login: login, id: id}
		}
		if rowID == sentinelID {
			e.summary, e.last, e.read = true, last, read
		} else if !e.hasUnreadRows {
			e.hasUnreadRows, e.oldestUnread = true, rowID
		}
	}
	if err := iter.Close(); err != nil {
		return fmt.Errorf("reading conversations_by_user: %w", err)
	}
	if err := finish(); err != nil {
		return fmt.Errorf("converting the unread rows of %q: %w", e.login, err)
	}
	return nil
}
