package embedded

import (
	"context"
	"fmt"

	"github.com/killrchat/chatql/store"
)

// PostMessage writes the message into the partition of its day, with its
// copies by id and by author, and in the same batch lists that day among
// the room's and the author's days if it is not listed yet (see
// addMessage) and logs it in the room's log, with its notices (see
// addNotices).
//
// It returns once the message is on disk, like every write of the store;
// concurrent posts share their fsyncs (see batch.commit), and a post takes
// no lock, so posts to one room do not wait for one another.
func (db *DB) PostMessage(ctx context.Context, m store.Message, notices ...store.Notice) error {
	end, err := db.begin(ctx)
	if err != nil {
		return err
	}
	defer end()

	b := db.batch()
	err = db.addLoggedMessage(b, store.PostedEvent(m))
	if err == nil {
		err = db.addNotices(b, m.ID, m.Room, notices)
	}
	var deferred bool
	if err == nil {
		deferred, err = db.addRoomActivity(b, m)
	}
	if err != nil {
		b.Close()
		return err
	}
	if err := b.commit(); err != nil {
		return fmt.Errorf("writing message to room %q: %w", m.Room, err)
	}
	if deferred {
		db.fanout.owe(m.Room)
	}
	return nil
}

// addLoggedMessage adds to b the message of ev (see addMessage) and ev, in
// the room's log.
func (db *DB) addLoggedMessage(b *batch, ev store.Event) error {
	if err := db.addMessage(b, *ev.Message); err != nil {
		return err
	}
	return db.logRoomEvent(b, ev)
}

// systemEvent is the event of kind recording, with a system message of
// content by u with id, a change to the room.
func systemEvent(kind store.EventKind, room string, id store.MessageID, u store.UserRef, content string) store.Event {
	m := store.Message{Room: room, ID: id, Author: u, Content: content, System: true}
	return store.Event{ID: id, Kind: kind, Room: room, User: u, Message: &m}
}

// addMessage adds to b the rows of a new message: its row in the stream of
// its room (or conversation), its copies in messages_by_id and
// messages_by_author, its row in its thread if it is a reply, its row in
// the search queue if search may find it, and the listing of its day in
// messages_bucket and author_buckets. A listing is written only if it is
// not there (see list): overwriting it on every post would pile up versions
// in the memtable that every page read then steps over. (Two first posts of
// a day may both write the row; that is harmless.) The rows go in the
// message's batch, so they are committed with it.
func (db *DB) addMessage(b *batch, m store.Message) error {
	if m.ID.IsZero() {
		return store.Invalidf("message in room %q has no id", m.Room)
	}
	day := store.BucketOf(m.ID.Time())
	m.Preview = nil // a new message has none: SetPreview sets it, as in the cassandra backend
	b.set(messageKey(m.Room, m.ID), newMessageRow(m))
	b.set(messageByIDKey(m.ID), newIndexRow(m))
	b.set(authorMessageKey(m.Author.Login, m.ID), newIndexRow(m))
	if !m.ReplyTo.IsZero() {
		b.set(threadKey(m.Room, m.ReplyTo).desc(m.ID), refRow(m.Author))
	}
	b.indexMessage(store.Message{}, m)
	if err := db.list(b, bucketPartition(m.Room), day); err != nil {
		return fmt.Errorf("listing the day of a message in room %q: %w", m.Room, err)
	}
	return db.list(b, authorBucketPartition(m.Author.Login), day)
}

// Messages returns up to limit messages of the room older than before,
// newest first, walking its days from before's back to the oldest.
func (db *DB) Messages(ctx context.Context, room string, before store.MessageID, limit int) ([]store.Message, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()

	var (
		gen    uint64
		newest key // the room's key among the kept pages, for a newest page
	)
	if before.IsZero() {
		newest = roomMessages(room)
		msgs, kept, g := db.newest.page(newest, limit)
		if kept {
			return nonNil(msgs), nil
		}
		gen = g
	}
	listed, err := db.buckets(ctx, room)
	if err != nil {
		return nil, err
	}
	buckets := store.NewestFirstBuckets(listed, before)
	page, err := store.ScanBuckets(ctx, buckets, limit, func(ctx context.Context, b store.Bucket, limit int) ([]store.Message, error) {
		p := messagePartition(room, b)
		// Rows are newest first in key order: older than the cursor is
		// after it.
		var lower []byte = p
		if !before.IsZero() {
			lower = p.desc(before).next()
		}
		return db.readMessages(ctx, room, p, lower, p.end(), false, limit)
	})
	if err != nil {
		return nil, err
	}
	if newest != nil {
		db.newest.keep(newest, limit, gen, page)
	}
	return nonNil(page), nil
}

// MessagesAfter returns up to limit messages of the room newer than after,
// oldest first, walking its days from after's to the newest.
func (db *DB) MessagesAfter(ctx context.Context, room string, after store.MessageID, limit int) ([]store.Message, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()

	listed, err := db.buckets(ctx, room)
	if err != nil {
		return nil, err
	}
	buckets := store.OldestFirstBuckets(listed, after)
	page, err := store.ScanBuckets(ctx, buckets, limit, func(ctx context.Context, b store.Bucket, limit int) ([]store.Message, error) {
		p := messagePartition(room, b)
		// Rows are newest first in key order: newer than the cursor is
		// before it, read backwards.
		upper := p.end()
		if !after.IsZero() {
			upper = p.desc(after)
		}
		return db.readMessages(ctx, room, p, p, upper, true, limit)
	})
	if err != nil {
		return nil, err
	}
	return nonNil(page), nil
}

// buckets lists the room's non-empty days from messages_bucket.
func (db *DB) buckets(ctx context.Context, room string) ([]store.Bucket, error) {
	listed, err := db.listBuckets(ctx, bucketPartition(room))
	if err != nil {
		return nil, fmt.Errorf("listing the days of room %q: %w", room, err)
	}
	return listed, nil
}

// listBuckets returns the days listed in partition p of messages_bucket,
// author_buckets or inbox_buckets: remembered (listedDays), or scanned. The
// caller must not change the slice.
func (db *DB) listBuckets(ctx context.Context, p key) ([]store.Bucket, error) {
	if listed, ok := db.listed.all(p); ok {
		return listed, nil
	}
	stamp := db.listed.stamp()
	var listed []store.Bucket
	err := db.scan(ctx, p, p.end(), false, func(k, _ []byte) (bool, error) {
		b, err := parseInt(k[len(p):])
		listed = append(listed, store.Bucket(b))
		return true, err
	})
	if err != nil {
		return nil, err
	}
	db.listed.fill(p, listed, stamp)
	return listed, nil
}

// readMessages reads up to limit messages of partition p within [lower,
// upper), in key order (newest first) or, if reverse, oldest first.
func (db *DB) readMessages(ctx context.Context, room string, p key, lower, upper []byte, reverse bool, limit int) ([]store.Message, error) {
	msgs := make([]store.Message, 0, min(limit, 64))
	var author userRef // the last row's: the next one is often by the same
	err := db.scan(ctx, lower, upper, reverse, func(k, v []byte) (bool, error) {
		id, err := parseDesc(k[len(p):])
		if err != nil {
			return false, err
		}
		row, err := decodeMessage(v, author)
		if err != nil {
			return false, err
		}
		author = row.Author
		msgs = append(msgs, row.message(room, id))
		return len(msgs) < limit, nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading messages of room %q: %w", room, err)
	}
	return msgs, nil
}

// nonNil makes an empty page an empty slice, as the other lists are.
func nonNil(page []store.Message) []store.Message {
	if page == nil {
		return []store.Message{}
	}
	return page
}
