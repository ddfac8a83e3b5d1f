package embedded

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/killrchat/chatql/store"
)

// The inbox is conversations_by_user: per user, per conversation, one
// summary row (kind, peer, last message, membership windows) and one empty
// row per unread message (see conversationKey and unreadKey). Nothing
// counts: the unread count is the number of unread rows, so a send adds
// rows and a mark-read deletes a range, and neither reads what the other
// writes. The one read-modify-write, of the summary's last message, is made
// under the lock of the user's inbox partition, and keeps the newer message,
// so sends landing in any order leave the newest.

var _ store.Conversations = (*DB)(nil)

// SendDirect stores m in the conversation's stream, with its copies and
// listings (see addMessage), makes it the last message of both users'
// entries and records it unread for to, all in one batch.
func (db *DB) SendDirect(ctx context.Context, m store.Message, to store.UserRef) error {
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
		err = db.record(b, from.Login, m, store.DirectConversation, &to, false)
	}
	if err == nil {
		err = db.logInboxEvent(b, from.Login, ev)
	}
	if err == nil && from.Login != to.Login {
		err = db.record(b, to.Login, m, store.DirectConversation, &from, true)
		if err == nil {
			err = db.logInboxEvent(b, to.Login, ev)
		}
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
// as last message if it is newer than the entry's, and an unread row if
// unread. An entry that does not exist yet is made, of the kind given (and
// with peer, for a direct conversation). The caller holds the lock of
// login's inbox partition.
func (db *DB) record(b *batch, login string, m store.Message, kind store.ConversationKind, peer *store.UserRef, unread bool) error {
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
	if row.setLast(m) || !found {
		b.set(k, row)
	}
	if unread {
		b.setEmpty(unreadKey(login, m.Room, m.ID))
	}
	return nil
}

// Inbox reads login's inbox partition in one scan: each summary row, then
// the unread rows of its conversation, counted. Entries come newest message
// first; those with no message yet come last, the newest window first.
func (db *DB) Inbox(ctx context.Context, login string) ([]store.Conversation, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()

	p := inboxPartition(login)
	inbox := []store.Conversation{}
	var current *store.Conversation
	err = db.scan(ctx, p, p.end(), false, func(k, v []byte) (bool, error) {
		id, rest, err := parseStr(k[len(p):])
		if err != nil {
			return false, err
		}
		if len(rest) > 0 { // an unread row, after its conversation's summary
			if current != nil && current.ID == id {
				current.Unread++
			}
			return true, nil
		}
		row, err := decode[conversationRow](v)
		if err != nil {
			return false, err
		}
		inbox = append(inbox, row.conversation(id, 0))
		current = &inbox[len(inbox)-1]
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the inbox of %q: %w", login, err)
	}
	slices.SortFunc(inbox, byNewestMessage)
	return inbox, nil
}

// byNewestMessage orders inbox entries by last message, newest first, then
// those without one by their newest window, newest first, then by id.
func byNewestMessage(a, b store.Conversation) int {
	aNone, bNone := a.LastMessage.ID.IsZero(), b.LastMessage.ID.IsZero()
	switch {
	case aNone != bNone:
		if aNone {
			return 1
		}
		return -1
	case !aNone:
		if c := b.LastMessage.ID.Compare(a.LastMessage.ID); c != 0 {
			return c
		}
	default:
		if c := lastFrom(b).Compare(lastFrom(a)); c != 0 {
			return c
		}
	}
	return strings.Compare(a.ID, b.ID)
}

// lastFrom is the start of the entry's newest window.
func lastFrom(c store.Conversation) (t time.Time) {
	if n := len(c.Windows); n > 0 {
		t = c.Windows[n-1].From
	}
	return t
}

// Conversation reads one summary row of login's inbox and counts the
// unread rows after it.
func (db *DB) Conversation(ctx context.Context, login, id string) (store.Conversation, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return store.Conversation{}, err
	}
	defer end()

	k := conversationKey(login, id)
	row, found, err := getRow[conversationRow](db, k)
	if err != nil {
		return store.Conversation{}, fmt.Errorf("reading conversation %q of %q: %w", id, login, err)
	}
	if !found {
		return store.Conversation{}, fmt.Errorf("conversation %q of %q: %w", id, login, store.ErrNotFound)
	}
	unread := 0
	err = db.scan(ctx, k.next(), k.end(), false, func(_, _ []byte) (bool, error) {
		unread++
		return true, nil
	})
	if err != nil {
		return store.Conversation{}, fmt.Errorf("counting the unread messages of %q in %q: %w", login, id, err)
	}
	return row.conversation(id, unread), nil
}

// MarkRead deletes login's unread rows of the conversation up to and
// including upTo (one range delete, no lock) and logs the change in login's
// inbox log. A row written after it, even of an older message, stays
// unread. A conversation login has no entry for has no rows to delete, so
// marking it read is harmless.
func (db *DB) MarkRead(ctx context.Context, login, id string, upTo store.MessageID) (store.Event, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return store.Event{}, err
	}
	defer end()

	ev := store.Event{ID: store.NewMessageID(), Kind: store.UnreadChanged, Room: id, User: store.UserRef{Login: login}}
	lower, upper := unreadRange(login, id, upTo)
	b := db.batch()
	b.err = b.DeleteRange(lower, upper, nil)
	if err := db.logInboxEvent(b, login, ev); err != nil {
		b.Close()
		return store.Event{}, err
	}
	if err := b.commit(); err != nil {
		return store.Event{}, fmt.Errorf("marking conversation %q of %q read: %w", id, login, err)
	}
	return ev, nil
}
