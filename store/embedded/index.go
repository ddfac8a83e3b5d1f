package embedded

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/killrchat/chatql/store"
)

var _ store.MessageIndex = (*DB)(nil)

// Message reads the message's copy in messages_by_id.
func (db *DB) Message(ctx context.Context, id store.MessageID) (store.Message, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return store.Message{}, err
	}
	defer end()

	row, err := db.messageByID(id)
	if err != nil {
		return store.Message{}, err
	}
	return row.message(row.Room, id), nil
}

// messageByID reads the row of messages_by_id, or fails with ErrNotFound.
func (db *DB) messageByID(id store.MessageID) (indexRow, error) {
	row, found, err := getRow[indexRow](db, messageByIDKey(id))
	if err != nil {
		return row, fmt.Errorf("reading message %v: %w", id, err)
	}
	if !found {
		return row, fmt.Errorf("message %v: %w", id, store.ErrNotFound)
	}
	return row, nil
}

// MessagesByAuthor returns up to limit messages of login older than before,
// newest first, walking the author's days as Messages walks a room's.
func (db *DB) MessagesByAuthor(ctx context.Context, login string, before store.MessageID, limit int) ([]store.Message, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()

	listed, err := db.listBuckets(ctx, authorBucketPartition(login))
	if err != nil {
		return nil, fmt.Errorf("listing the days of author %q: %w", login, err)
	}
	buckets := store.NewestFirstBuckets(listed, before)
	page, err := store.ScanBuckets(ctx, buckets, limit, func(ctx context.Context, b store.Bucket, limit int) ([]store.Message, error) {
		p := authorPartition(login, b)
		lower := []byte(p)
		if !before.IsZero() {
			lower = p.desc(before).next()
		}
		return db.readIndexed(ctx, p, lower, p.end(), limit)
	})
	if err != nil {
		return nil, fmt.Errorf("reading the messages of author %q: %w", login, err)
	}
	return nonNil(page), nil
}

// readIndexed reads up to limit messages of a messages_by_author partition
// p within [lower, upper), newest first.
func (db *DB) readIndexed(ctx context.Context, p key, lower, upper []byte, limit int) ([]store.Message, error) {
	msgs := make([]store.Message, 0, min(limit, 64))
	err := db.scan(ctx, lower, upper, false, func(k, v []byte) (bool, error) {
		id, err := parseDesc(k[len(p):])
		if err != nil {
			return false, err
		}
		row, err := decode[indexRow](v)
		if err != nil {
			return false, err
		}
		msgs = append(msgs, row.message(row.Room, id))
		return len(msgs) < limit, nil
	})
	return msgs, err
}

// HideMessage marks the message hidden (see changeMessage). Hiding a hidden
// message changes nothing and logs nothing (the zero Event).
func (db *DB) HideMessage(ctx context.Context, m store.Message, by store.UserRef) (store.Event, error) {
	return db.changeMessage(ctx, m, by, store.MessageHidden, func(r *messageRow) (bool, error) {
		changed := !r.Hidden
		r.Hidden = true
		return changed, nil
	})
}

// EditMessage replaces the message's content (see changeMessage). An edit
// older than the message's last changes nothing and logs nothing.
func (db *DB) EditMessage(ctx context.Context, m store.Message, by store.UserRef, content string, at time.Time) (store.Event, error) {
	at = at.UTC().Truncate(time.Millisecond)
	return db.changeMessage(ctx, m, by, store.MessageEdited, func(r *messageRow) (bool, error) {
		if r.Deleted {
			return false, fmt.Errorf("message %v was deleted: %w", m.ID, store.ErrNotFound)
		}
		if !at.After(r.EditedAt) {
			return false, nil
		}
		r.Content, r.EditedAt, r.Preview = content, at, nil
		return true, nil
	})
}

// DeleteMessage erases the message's content, attachments and preview (see changeMessage): the rows
// are rewritten without it, which pebble's compactions then drop from disk.
// Deleting a deleted message changes nothing and logs nothing.
func (db *DB) DeleteMessage(ctx context.Context, m store.Message, by store.UserRef) (store.Event, error) {
	return db.changeMessage(ctx, m, by, store.MessageDeleted, func(r *messageRow) (bool, error) {
		changed := !r.Deleted
		r.Content, r.EditedAt, r.Deleted, r.Files, r.Preview = "", time.Time{}, true, nil, nil
		return changed, nil
	})
}

// changeMessage applies change to each of the message's rows: in its
// room's stream, by id, by author, and as the last message of the inbox
// entries that show it (both users' of a direct conversation, the
// participants' and former members' of a group); and logs kind, with a
// fresh id and User by, in the room's log, or for a direct message (but a
// hide) in both users' inbox logs: all in one batch. It rewrites the rows
// from the copy by id, the one read, so the caller's m only names the
// message. Returns ErrNotFound if there is no such message, and the zero
// Event, writing nothing, if change reports no change.
//
// It holds the lock of the message's room, as DeleteRoom does, so a change
// never writes back a message a delete has just removed, and the locks of
// the inboxes, for their last message. Who the participants are is known
// only from a read, so it locks as DeleteRoom does: read, lock, read again
// and widen until the locks held cover what it read.
func (db *DB) changeMessage(ctx context.Context, m store.Message, by store.UserRef, kind store.EventKind, change func(*messageRow) (bool, error)) (store.Event, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return store.Event{}, err
	}
	defer end()

	var held lockSet
	defer func() { db.locks.unlock(held) }()
	for {
		if err := ctx.Err(); err != nil {
			return store.Event{}, err
		}
		row, err := db.messageByID(m.ID)
		if err != nil {
			return store.Event{}, err
		}
		logins, err := db.inboxesOf(row.Room)
		if err != nil {
			return store.Event{}, err
		}
		partitions := []key{roomKey(row.Room)}
		for _, login := range logins {
			partitions = append(partitions, inboxPartition(login))
		}
		need := db.locks.of(partitions...)
		if !held.covers(need) {
			db.locks.unlock(held)
			held = need
			db.locks.lock(held)
			continue
		}
		was := row.message(row.Room, m.ID)
		if changed, err := change(&row.messageRow); err != nil || !changed {
			return store.Event{}, err
		}

		b := db.batch()
		b.set(messageKey(row.Room, m.ID), row.messageRow)
		b.set(messageByIDKey(m.ID), row)
		b.set(authorMessageKey(row.Author.Login, m.ID), row)
		b.indexMessage(was, row.message(row.Room, m.ID))
		for _, login := range logins {
			k := conversationKey(login, row.Room)
			entry, found, err := getRow[conversationRow](db, k)
			if err != nil {
				b.Close()
				return store.Event{}, fmt.Errorf("reading the inbox of %q: %w", login, err)
			}
			if found && entry.Last != nil && entry.Last.ID == m.ID {
				entry.Last.messageRow = row.messageRow
				b.set(k, entry)
			}
		}
		changed := row.message(row.Room, m.ID)
		ev := store.Event{ID: store.NewMessageID(), Kind: kind, Room: row.Room, User: by, Message: &changed}
		switch {
		case !store.IsDirectConversation(row.Room):
			err = db.logRoomEvent(b, ev)
		case kind != store.MessageHidden:
			for _, login := range logins {
				if err == nil {
					err = db.logInboxEvent(b, login, ev)
				}
			}
		default:
			ev = store.Event{} // a direct message's hide is logged nowhere
		}
		if err != nil {
			b.Close()
			return store.Event{}, err
		}
		if err := b.commit(); err != nil {
			return store.Event{}, fmt.Errorf("changing message %v (%s): %w", m.ID, kind, err)
		}
		return ev, nil
	}
}

// inboxesOf returns the logins whose inbox has an entry for the
// conversation: both users of a direct conversation, the participants and
// former members of a private group, nobody for a public room or a room
// that is gone.
func (db *DB) inboxesOf(conversation string) ([]string, error) {
	if store.IsDirectConversation(conversation) {
		a, b := store.DirectParties(conversation)
		return []string{a, b}, nil
	}
	room, found, err := getRow[roomRow](db, roomKey(conversation))
	if err != nil {
		return nil, fmt.Errorf("reading room %q: %w", conversation, err)
	}
	if !found || store.RoomKind(room.Kind) != store.PrivateGroup {
		return nil, nil
	}
	logins := slices.Clone(room.Former)
	for _, p := range room.Participants {
		if !slices.Contains(logins, p.Login) {
			logins = append(logins, p.Login)
		}
	}
	return logins, nil
}
