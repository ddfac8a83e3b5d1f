package embedded

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/killrchat/chatql/store"
)

// The inbox is conversations_by_user: per user, one row per conversation
// (kind, peer, last message, read mark, membership windows; see
// conversationRow). Nothing is counted on write: Inbox counts each
// conversation's unread messages from its stream after the read mark, up
// to store.UnreadCap, so a burst of messages adds no row to anyone's inbox.
// Every write of a row is a read-modify-write under the lock of the
// owner's inbox partition that keeps the newer last message and the
// further mark, so sends and mark-reads landing in any order lose nothing.

var _ store.Conversations = (*DB)(nil)

// SendDirect stores m in the conversation's stream, with its copies and
// listings (see addMessage), makes it the last message of both users'
// entries and moves the author's read mark to it, and adds its notices
// (see addNotices), all in one batch.
func (db *DB) SendDirect(ctx context.Context, m store.Message, to store.UserRef, notices ...store.Notice) error {
	from := m.Author
	if want := store.DirectConversationID(from.Login, to.Login); m.Room != want {
		return store.Invalidf("direct message from %q to %q is in conversation %q, want %q", from.Login, to.Login, m.Room, want)
	}
	end, err := db.beginLocked(ctx, inboxPartition(from.Login), inboxPartition(to.Login))
	if err != nil {
		return err
	}
	defer end()

	ev := store.Event{ID: m.ID, Kind: store.DirectMessage, Room: m.Room, User: from, Message: &m}
	b := db.batch()
	err = db.addMessage(b, m)
	if err == nil {
		err = db.record(b, from.Login, m, store.DirectConversation, &to)
	}
	if err == nil {
		err = db.logInboxEvent(b, from.Login, ev)
	}
	if err == nil && from.Login != to.Login {
		err = db.record(b, to.Login, m, store.DirectConversation, &from)
		if err == nil {
			err = db.logInboxEvent(b, to.Login, ev)
		}
	}
	if err == nil {
		err = db.addNotices(b, m.ID, m.Room, notices)
	}
	if err != nil {
		b.Close()
		return err
	}
	if err := b.commit(); err != nil {
		return fmt.Errorf("writing direct message to %q: %w", m.Room, err)
	}
	return nil
}

// record adds to b what m changes in login's entry of its conversation: m
// as last message if it is newer than the entry's, and as read if login
// wrote it. An entry that does not exist yet is made, of the kind given
// (and with peer, for a direct conversation). The caller holds the lock of
// login's inbox partition. m is an activity of the conversation in login's
// inbox order, whose position replaces the last message's.
func (db *DB) record(b *batch, login string, m store.Message, kind store.ConversationKind, peer *store.UserRef) error {
	k := conversationKey(login, m.Room)
	row, found, err := getRow[conversationRow](db, k)
	if err != nil {
		return fmt.Errorf("reading the inbox of %q: %w", login, err)
	}
	if !found {
		row = conversationRow{Kind: string(kind)}
		if peer != nil {
			p := refRow(*peer)
			row.Peer = &p
		}
	}
	if row.Last == nil || row.Last.ID.Compare(m.ID) < 0 {
		// m is the conversation's newest: its position replaces the
		// last message's, which is deleted now rather than left for a
		// page (an older m, racing, would be stale at once).
		if row.Last != nil {
			b.dropActivity(login, m.Room, row.Last.ID)
		}
		b.addActivity(login, m.Room, m.ID)
	}
	changed := row.setLast(m)
	if m.Author.Login == login && row.markRead(m.ID) {
		changed = true
	}
	if changed || !found {
		b.set(k, row)
	}
	return nil
}

// Inbox reads login's inbox partition in one scan, then counts the unread
// messages of each conversation with messages after its mark. Entries come
// newest message first; those with no message yet come last, the newest
// window first.
func (db *DB) Inbox(ctx context.Context, login string) ([]store.Conversation, error) {
	inbox, err := db.InboxEntries(ctx, login)
	if err != nil {
		return nil, err
	}
	end, err := db.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	for i := range inbox {
		if err := db.countUnread(ctx, login, &inbox[i]); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(inbox, store.ByNewestMessage)
	return inbox, nil
}

// InboxEntries scans login's partition of conversations_by_user.
func (db *DB) InboxEntries(ctx context.Context, login string) ([]store.Conversation, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()

	p := inboxPartition(login)
	inbox := []store.Conversation{}
	err = db.scan(ctx, p, p.end(), false, func(k, v []byte) (bool, error) {
		id, rest, err := parseStr(k[len(p):])
		if err != nil || len(rest) > 0 {
			return err == nil, err // an unread row of an older version, not yet upgraded
		}
		row, err := decode[conversationRow](v)
		if err != nil {
			return false, err
		}
		inbox = append(inbox, row.conversation(id))
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the inbox of %q: %w", login, err)
	}
	return inbox, nil
}

// countUnread sets c.Unread and c.Mentions (see store.CountUnread).
func (db *DB) countUnread(ctx context.Context, login string, c *store.Conversation) error {
	unread, mentions, err := store.CountUnread(ctx, login, *c, db.stream(c.ID), db)
	if err != nil {
		return fmt.Errorf("counting the unread messages of %q in %q: %w", login, c.ID, err)
	}
	c.Unread, c.Mentions = unread, mentions
	return nil
}

// Conversation reads one row of login's inbox and counts its unread
// messages.
func (db *DB) Conversation(ctx context.Context, login, id string) (store.Conversation, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return store.Conversation{}, err
	}
	defer end()

	row, found, err := getRow[conversationRow](db, conversationKey(login, id))
	if err != nil {
		return store.Conversation{}, fmt.Errorf("reading conversation %q of %q: %w", id, login, err)
	}
	if !found {
		return store.Conversation{}, fmt.Errorf("conversation %q of %q: %w", id, login, store.ErrNotFound)
	}
	c := row.conversation(id)
	if err := db.countUnread(ctx, login, &c); err != nil {
		return store.Conversation{}, err
	}
	return c, nil
}

// MarkRead moves login's read mark of the conversation to upTo, unless it
// is further already, and logs the change in login's inbox log, in one
// batch under the lock of login's inbox. A conversation login has no entry
// for gets none: marking it read only logs.
func (db *DB) MarkRead(ctx context.Context, login, id string, upTo store.MessageID) (store.Event, error) {
	end, err := db.beginLocked(ctx, inboxPartition(login))
	if err != nil {
		return store.Event{}, err
	}
	defer end()

	k := conversationKey(login, id)
	row, found, err := getRow[conversationRow](db, k)
	if err != nil {
		return store.Event{}, fmt.Errorf("reading conversation %q of %q: %w", id, login, err)
	}
	ev := store.Event{ID: store.NewMessageID(), Kind: store.UnreadChanged, Room: id, User: store.UserRef{Login: login}}
	b := db.batch()
	if found && row.markRead(upTo) {
		b.set(k, row)
	}
	if err := db.logInboxEvent(b, login, ev); err != nil {
		b.Close()
		return store.Event{}, err
	}
	if err := b.commit(); err != nil {
		return store.Event{}, fmt.Errorf("marking conversation %q of %q read: %w", id, login, err)
	}
	return ev, nil
}

// buildReadMarks converts, once, the inboxes of the versions before read
// marks, which kept a row per unread message after each conversation's row
// (see unreadKey): a conversation with unread rows is read up to just
// before its oldest, one without is read up to its last message, and the
// unread rows go. Open runs it before any operation, so nothing writes
// meanwhile. A conversation's mark is committed with, or before, the
// deletion of its first unread row, and a conversation with a mark is
// passed over, so a build cut short starts over and converts the rest the
// same way; the marker row is written at the end.
func (db *DB) buildReadMarks() error {
	if built, err := db.has(readMarksBuilt()); err != nil || built {
		return err
	}
	const writesPerBatch = 1024
	b := db.batch()
	writes := 0
	var (
		entry    key // the row of the conversation being read
		row      conversationRow
		converts bool // entry has no mark: convert it
		marked   bool // its mark is set from an unread row
	)
	// finish sets the mark of a conversation without unread rows.
	finish := func() {
		if converts && !marked && row.Last != nil {
			row.Read = row.Last.ID
			b.set(entry, row)
			writes++
		}
	}
	p := tuple(tableConversations)
	err := db.scan(context.Background(), p, p.end(), false, func(k, v []byte) (bool, error) {
		_, rest, err := parseStr(k[len(p):])
		if err == nil {
			_, rest, err = parseStr(rest)
		}
		if err != nil {
			return false, err
		}
		if len(rest) == 0 { // a conversation's row
			finish()
			entry, marked = key(slices.Clone(k)), false
			if row, err = decode[conversationRow](v); err != nil {
				return false, err
			}
			converts = row.Read.IsZero()
		} else { // an unread row, of entry's conversation unless stray
			if converts && !marked && bytes.HasPrefix(k, entry) {
				oldest, err := store.MessageIDFromSortKey(rest)
				if err != nil {
					return false, err
				}
				row.Read, marked = store.MinMessageID(oldest.Time()), true
				b.set(entry, row)
			}
			b.delete(slices.Clone(k))
			writes++
		}
		if writes >= writesPerBatch {
			err := b.commit() // closes b
			b, writes = db.batch(), 0
			return err == nil, err
		}
		return true, nil
	})
	if err != nil {
		b.Close()
		return fmt.Errorf("reading the inboxes: %w", err)
	}
	finish()
	b.setEmpty(readMarksBuilt())
	return b.commit()
}
