package cassandra

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gocql/gocql"
	"github.com/killrchat/chatql/store"
)

// Inboxes live in conversations_by_user (schema_v2.cql), one partition per
// user. Each conversation is a summary row at sentinelID and one unread row
// per message of others not yet read. Three kinds of write touch it, and
// all commute, so nothing is ever read and written back:
//
//   - A message sets the summary's last_* USING TIMESTAMP its own time, and
//     inserts the recipients' unread rows USING TIMESTAMP its own time too.
//     Whatever order sends arrive in, the newest message's cells win.
//   - MarkRead range-deletes the unread rows in (sentinel, upTo] USING
//     TIMESTAMP max(now, upTo's time). Every row it covers is a message at
//     or before upTo, written at that message's time, so the tombstone
//     shadows it whether it arrived before or after, whatever the clocks of
//     the servers: "read up to upTo" holds for good. The summary, outside
//     the range, is never touched.
//   - Membership windows (joined_at, left_at) and kind are set-adds at the
//     current time, in cells no message writes.
//
// Deleting a group deletes its members' whole conversations at the current
// time, which shadows every message of the group written before.

// sentinelID is the message_id of every summary row: the smallest timeuuid
// in Cassandra's order (the UUID epoch, 1582-10-15, with the low bytes at
// -128), store.MinMessageID of that instant. It sorts before every message
// of the conversation, so the summary is the first row of its group.
var sentinelID = gocql.UUID{0, 0, 0, 0, 0, 0, 0x10, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80}

const (
	summaryRow = ` WHERE login = ? AND conversation_id = ? AND message_id = ?`
	// last_* of a message; kind and peer ride along, constant per entry.
	setLastDirect = `UPDATE conversations_by_user USING TIMESTAMP ?
		SET kind = 'direct', peer = ?, last_message_id = ?, last_message = ?, last_author = ?, last_system = ?` + summaryRow
	setLastGroup = `UPDATE conversations_by_user USING TIMESTAMP ?
		SET kind = 'group', last_message_id = ?, last_message = ?, last_author = ?, last_system = ?` + summaryRow
	// hideLast names the newest hidden message, at that message's time: the
	// last message is hidden if it is the one named.
	hideLast     = `UPDATE conversations_by_user USING TIMESTAMP ? SET last_hidden_id = ?` + summaryRow
	insertUnread = `INSERT INTO conversations_by_user (login, conversation_id, message_id) VALUES (?, ?, ?) USING TIMESTAMP ?`
	markRead     = `DELETE FROM conversations_by_user USING TIMESTAMP ?
		WHERE login = ? AND conversation_id = ? AND message_id > ? AND message_id <= ?`
	openWindowStmt     = `UPDATE conversations_by_user SET kind = 'group', joined_at = joined_at + ?` + summaryRow
	undoWindowStmt     = `UPDATE conversations_by_user SET joined_at = joined_at - ?` + summaryRow
	closeWindowStmt    = `UPDATE conversations_by_user SET left_at = left_at + ?` + summaryRow
	deleteConversation = `DELETE FROM conversations_by_user WHERE login = ? AND conversation_id = ?`

	// With ascending clustering the summary is the first row of each
	// conversation, and the columns that are not aggregated come from the
	// first row of the group: one partition read gives every summary and,
	// in count(*) - 1, every unread count. message_id tells whether the
	// first row is a summary at all.
	entryColumns = `conversation_id, message_id, kind, peer, last_message_id, last_message, last_author,
		last_system, last_hidden_id, joined_at, left_at, count(*)`
	selectInbox = `SELECT ` + entryColumns + ` FROM conversations_by_user WHERE login = ? GROUP BY conversation_id`
	selectEntry = `SELECT ` + entryColumns + ` FROM conversations_by_user WHERE login = ? AND conversation_id = ?`
)

// writeTime is the write timestamp of a message's cells: its time in
// microseconds, Cassandra's convention.
func writeTime(id store.MessageID) int64 { return id.Time().UnixMicro() }

// SendDirect stores m in the conversation's stream and index, sets it as
// the last message of both users' entries, and as unread for to, and logs
// DirectMessage in both users' inbox logs. Each user's inbox rows (and the
// listing of the log's day) are in one partition and go in one unlogged
// batch, which is applied as one mutation; the log rows are a partition of
// their own each. Every write is concurrent and idempotent: a failed send
// is retried as is.
func (db *DB) SendDirect(ctx context.Context, m store.Message, to store.UserRef) error {
	if want := store.DirectConversationID(m.Author.Login, to.Login); m.Room != want {
		return store.Invalidf("direct message from %q to %q: its conversation is %q, not %q", m.Author.Login, to.Login, want, m.Room)
	}
	ts, id, author := writeTime(m.ID), gocql.UUID(m.ID), userUDT(m.Author)
	last := func(login string, peer store.UserRef) []any {
		return []any{ts, userUDT(peer), id, m.Content, author, m.System, login, m.Room, sentinelID}
	}
	ev := store.Event{ID: m.ID, Kind: store.DirectMessage, Room: m.Room, User: m.Author, Message: &m}
	extra := []func() error{db.inboxEventWrite(ctx, m.Author.Login, ev), func() error {
		b := db.inboxBatch(ctx)
		b.Query(setLastDirect, last(m.Author.Login, to)...)
		inboxListing(b, m.Author.Login, ev.ID)
		return db.session.ExecuteBatch(b)
	}}
	if to.Login != m.Author.Login {
		extra = append(extra, func() error {
			b := db.inboxBatch(ctx)
			b.Query(setLastDirect, last(to.Login, m.Author)...)
			b.Query(insertUnread, to.Login, m.Room, id, ts)
			inboxListing(b, to.Login, ev.ID)
			return db.session.ExecuteBatch(b)
		}, db.inboxEventWrite(ctx, to.Login, ev))
	}
	if err := db.writeMessage(ctx, m, "", extra); err != nil {
		return fmt.Errorf("cassandra: send direct message to %q: %w", to.Login, err)
	}
	return nil
}

// Inbox returns login's entries, newest message first, from one read of
// its partition (see selectInbox).
func (db *DB) Inbox(ctx context.Context, login string) ([]store.Conversation, error) {
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
	slices.SortFunc(inbox, func(a, b store.Conversation) int {
		az, bz := a.LastMessage.ID.IsZero(), b.LastMessage.ID.IsZero()
		switch {
		case az != bz: // entries without a message last
			if az {
				return 1
			}
			return -1
		case !az:
			if c := b.LastMessage.ID.Compare(a.LastMessage.ID); c != 0 {
				return c
			}
		}
		return strings.Compare(a.ID, b.ID)
	})
	return inbox, nil
}

// Conversation returns login's entry id: the same aggregate as Inbox, over
// the rows of one conversation.
func (db *DB) Conversation(ctx context.Context, login, id string) (store.Conversation, error) {
	iter := db.query(ctx, selectEntry, login, id).Iter()
	c, ok, _ := scanEntry(iter)
	if err := iter.Close(); err != nil {
		return store.Conversation{}, fmt.Errorf("cassandra: conversation %q of %q: %w", id, login, err)
	}
	if !ok {
		return store.Conversation{}, fmt.Errorf("conversation %q of %q: %w", id, login, store.ErrNotFound)
	}
	return c, nil
}

// scanEntry scans one row of entryColumns. ok is false for a group of rows
// that is no entry: one without a summary row (unread rows that outlived a
// deleted group's entry, written by a send racing the delete), or whose
// summary has no kind (a hide or a leave that raced a delete). An aggregate
// over no row at all reads as one such row, with a zero count.
func scanEntry(iter *gocql.Iter) (c store.Conversation, ok, more bool) {
	var (
		first, lastID, hiddenID gocql.UUID
		kind                    string
		peer, lastAuthor        userUDT
		lastContent             string
		lastSystem              bool
		joined, left            []time.Time
		rows                    int64
	)
	if !iter.Scan(&c.ID, &first, &kind, &peer, &lastID, &lastContent, &lastAuthor, &lastSystem, &hiddenID, &joined, &left, &rows) {
		return store.Conversation{}, false, false
	}
	if first != sentinelID || kind == "" {
		return store.Conversation{}, false, true
	}
	c.Kind, c.Unread = store.ConversationKind(kind), int(rows-1)
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

// MarkRead range-deletes login's unread rows of the conversation up to and
// including upTo (see the top of this file for its timestamp), and logs
// UnreadChanged in login's inbox log. It reads nothing: marking read a
// conversation login has no entry for only writes a tombstone (and logs).
// The event's User is the owner by login alone: that is all MarkRead is
// given.
func (db *DB) MarkRead(ctx context.Context, login, id string, upTo store.MessageID) (store.Event, error) {
	if upTo.Compare(store.MessageID(sentinelID)) <= 0 {
		return store.Event{}, nil // the zero id, or nothing after the summary: nothing changes
	}
	ev := store.Event{ID: store.NewMessageID(), Kind: store.UnreadChanged, Room: id, User: store.UserRef{Login: login}}
	ts := max(time.Now().UnixMicro(), writeTime(upTo))
	fo := newFanout(2)
	fo.Go(func() error {
		b := db.inboxBatch(ctx)
		b.Query(markRead, ts, login, id, sentinelID, gocql.UUID(upTo))
		inboxListing(b, login, ev.ID)
		return db.session.ExecuteBatch(b)
	})
	fo.Go(db.inboxEventWrite(ctx, login, ev))
	if err := fo.Wait(); err != nil {
		return store.Event{}, fmt.Errorf("cassandra: mark conversation %q of %q read: %w", id, login, err)
	}
	return ev, nil
}
