package embedded

import (
	"context"
	"fmt"
	"time"

	"github.com/killrchat/chatql/store"
)

var _ store.Outbox = (*DB)(nil)

// noticeRow is a row of notices; the shard, id and recipient are in the
// key.
type noticeRow struct {
	Kind string  `json:"k"`
	Room string  `json:"r"`
	From userRef `json:"f"`
	Done bool    `json:"d,omitempty"`
}

// cursorRow is a shard's row of notice_cursors: its cursor, and the cursor
// of the last sweep (sweepNotices).
type cursorRow struct {
	Cursor store.MessageID `json:"c"`
	Swept  store.MessageID `json:"s,omitzero"`
}

// noticeSweepEvery is how far a shard's cursor moves between two
// deletions of the notices up to it. A deletion is a range tombstone, and
// pebble fragments a memtable's range tombstones again for the next read
// of the store after each one is added: deleting at every move (each
// second, per shard, notices or not) made every read of an idle server
// slower by the minute. The notices before the cursor are never read
// again, so keeping them a minute more costs nothing.
const noticeSweepEvery = time.Minute

// leaseRow is a shard's row of notice_leases: its holder, until when.
type leaseRow struct {
	Holder string    `json:"h"`
	Until  time.Time `json:"u"`
}

// addNotices adds to b the notices of the message id in room (see
// store.NoticesOf), but those already stored: a retried write stores each
// notice once, and leaves done the ones marked done since. The check reads
// outside any lock; two writes of one notice racing both write the same
// row, and a mark racing a first write finds no row and does nothing, as
// for a notice not kept.
func (db *DB) addNotices(b *batch, id store.MessageID, room string, notices []store.Notice) error {
	notices, err := store.NoticesOf(id, room, notices)
	if err != nil {
		return err
	}
	for _, n := range notices {
		k := noticeKey(store.NoticeShard(n.Recipient), n.ID, n.Recipient)
		switch found, err := db.has(k); {
		case err != nil:
			return fmt.Errorf("reading the outbox: %w", err)
		case !found:
			b.set(k, noticeRow{Kind: string(n.Kind), Room: n.Room, From: refRow(n.From)})
		}
	}
	return nil
}

// PendingNotices scans the shard after after, skipping the done rows.
func (db *DB) PendingNotices(ctx context.Context, shard int, after store.MessageID, limit int) ([]store.Notice, error) {
	if err := checkShard(shard); err != nil || limit <= 0 {
		return nil, err
	}
	end, err := db.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	p := noticesPartition(shard)
	lower := []byte(p)
	if !after.IsZero() {
		lower = noticesOf(shard, after).end()
	}
	var out []store.Notice
	err = db.scan(ctx, lower, p.end(), false, func(k, v []byte) (bool, error) {
		row, err := decode[noticeRow](v)
		if err != nil || row.Done {
			return err == nil, err
		}
		n, err := parseNoticeKey(k[len(p):])
		if err != nil {
			return false, err
		}
		n.Kind, n.Room, n.From = store.NoticeKind(row.Kind), row.Room, row.From.ref()
		out = append(out, n)
		return len(out) < limit, nil
	})
	if err != nil {
		return nil, fmt.Errorf("pending notices of shard %d: %w", shard, err)
	}
	return out, nil
}

// parseNoticeKey decodes the id and recipient that follow a notice's
// partition.
func parseNoticeKey(b []byte) (store.Notice, error) {
	if len(b) < descIDLen {
		return store.Notice{}, fmt.Errorf("notice key %x is too short", b)
	}
	id, err := store.MessageIDFromSortKey(b[:descIDLen])
	if err != nil {
		return store.Notice{}, err
	}
	recipient, _, err := parseStr(b[descIDLen:])
	return store.Notice{ID: id, Recipient: recipient}, err
}

// pushSendRow is a row of push_sends; the shard, recipient and room are
// in the key.
type pushSendRow struct {
	Notices []store.MessageID `json:"n"`
	Payload []byte            `json:"p"`
}

// RecordPushSends writes the sends in one batch.
func (db *DB) RecordPushSends(ctx context.Context, shard int, sends []store.PushSend) error {
	if err := store.CheckPushSends(shard, sends); err != nil || len(sends) == 0 {
		return err
	}
	end, err := db.begin(ctx)
	if err != nil {
		return err
	}
	defer end()
	b := db.batch()
	for _, s := range sends {
		b.set(pushSendKey(shard, s.Recipient, s.Room), pushSendRow{Notices: s.Notices, Payload: s.Payload})
	}
	if err := b.commit(); err != nil {
		return fmt.Errorf("recording push sends of shard %d: %w", shard, err)
	}
	return nil
}

// PushSends scans the partition of each recipient.
func (db *DB) PushSends(ctx context.Context, shard int, recipients []string) ([]store.PushSend, error) {
	if err := checkShard(shard); err != nil {
		return nil, err
	}
	end, err := db.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	var out []store.PushSend
	seen := map[string]bool{}
	for _, r := range recipients {
		if seen[r] {
			continue
		}
		seen[r] = true
		p := pushSendsOf(shard, r)
		err := db.scan(ctx, p, p.end(), false, func(k, v []byte) (bool, error) {
			row, err := decode[pushSendRow](v)
			if err != nil {
				return false, err
			}
			room, _, err := parseStr(k[len(p):])
			if err != nil {
				return false, err
			}
			out = append(out, store.PushSend{Recipient: r, Room: room, Notices: row.Notices, Payload: row.Payload})
			return true, nil
		})
		if err != nil {
			return nil, fmt.Errorf("push sends of shard %d to %q: %w", shard, r, err)
		}
	}
	return out, nil
}

// MarkNoticesDone sets the done flag of the notices still kept, under the
// shard's lock, which SetNoticeCursor holds to forget notices: a mark
// never brings back a row it forgot. The same batch forgets the push
// sends of the notices' recipients and conversations.
func (db *DB) MarkNoticesDone(ctx context.Context, shard int, notices []store.Notice) error {
	if err := checkShard(shard); err != nil || len(notices) == 0 {
		return err
	}
	end, err := db.beginLocked(ctx, noticesPartition(shard))
	if err != nil {
		return err
	}
	defer end()
	b := db.batch()
	for _, n := range notices {
		k := noticeKey(shard, n.ID, n.Recipient)
		row, found, err := getRow[noticeRow](db, k)
		if err != nil {
			b.Close()
			return fmt.Errorf("reading %v: %w", n, err)
		}
		if found && !row.Done {
			row.Done = true
			b.set(k, row)
		}
		b.delete(pushSendKey(shard, n.Recipient, n.Room))
	}
	if err := b.commit(); err != nil {
		return fmt.Errorf("marking notices of shard %d done: %w", shard, err)
	}
	return nil
}

func (db *DB) NoticeCursor(ctx context.Context, shard int) (store.MessageID, error) {
	if err := checkShard(shard); err != nil {
		return store.MessageID{}, err
	}
	end, err := db.begin(ctx)
	if err != nil {
		return store.MessageID{}, err
	}
	defer end()
	row, _, err := getRow[cursorRow](db, noticeCursorKey(shard))
	if err != nil {
		return store.MessageID{}, fmt.Errorf("the cursor of shard %d: %w", shard, err)
	}
	return row.Cursor, nil
}

// SetNoticeCursor moves the cursor forward under the shard's lock and, in
// the same batch, forgets the notices up to it: this store has no TTL to
// drop them.
func (db *DB) SetNoticeCursor(ctx context.Context, shard int, upTo store.MessageID) error {
	if err := checkShard(shard); err != nil {
		return err
	}
	end, err := db.beginLocked(ctx, noticesPartition(shard))
	if err != nil {
		return err
	}
	defer end()
	k := noticeCursorKey(shard)
	row, _, err := getRow[cursorRow](db, k)
	if err != nil {
		return fmt.Errorf("the cursor of shard %d: %w", shard, err)
	}
	if upTo.Compare(row.Cursor) <= 0 {
		return nil
	}
	b := db.batch()
	moved := cursorRow{Cursor: upTo, Swept: row.Swept}
	if upTo.Time().Sub(row.Swept.Time()) >= noticeSweepEvery {
		moved.Swept = upTo
		if err := db.sweepNotices(ctx, b, shard, upTo); err != nil {
			b.Close()
			return err
		}
	}
	b.set(k, moved)
	if err := b.commit(); err != nil {
		return fmt.Errorf("moving the cursor of shard %d: %w", shard, err)
	}
	return nil
}

// sweepNotices deletes, in b, shard's notices up to upTo, if it has any.
func (db *DB) sweepNotices(ctx context.Context, b *batch, shard int, upTo store.MessageID) error {
	lower, upper := []byte(noticesPartition(shard)), noticesOf(shard, upTo).end()
	var found bool
	if err := db.scan(ctx, lower, upper, false, func(_, _ []byte) (bool, error) {
		found = true
		return false, nil
	}); err != nil {
		return fmt.Errorf("reading the notices of shard %d: %w", shard, err)
	}
	if found {
		b.deleteBetween(lower, upper)
	}
	return nil
}

// LeaseNoticeShard takes or renews shard's lease (see lease).
func (db *DB) LeaseNoticeShard(ctx context.Context, shard int, holder string, ttl time.Duration) (bool, error) {
	if err := checkShard(shard); err != nil {
		return false, err
	}
	if holder == "" || ttl <= 0 {
		return false, store.Invalidf("lease of shard %d: a holder and a positive ttl are needed", shard)
	}
	return db.lease(ctx, noticeLeaseKey(shard), fmt.Sprintf("shard %d", shard), holder, ttl)
}

// lease reads, checks and writes the lease under key, of what names, under
// its lock: holder takes it when it is free or expired, or renews it.
func (db *DB) lease(ctx context.Context, k key, what, holder string, ttl time.Duration) (bool, error) {
	end, err := db.beginLocked(ctx, k)
	if err != nil {
		return false, err
	}
	defer end()
	row, found, err := getRow[leaseRow](db, k)
	if err != nil {
		return false, fmt.Errorf("the lease of %s: %w", what, err)
	}
	now := time.Now()
	if found && row.Holder != holder && now.Before(row.Until) {
		return false, nil
	}
	b := db.batch()
	b.set(k, leaseRow{Holder: holder, Until: now.Add(ttl)})
	if err := b.commit(); err != nil {
		return false, fmt.Errorf("leasing %s to %q: %w", what, holder, err)
	}
	return true, nil
}

// checkShard rejects a shard out of [0, NoticeShards).
func checkShard(shard int) error {
	if shard < 0 || shard >= store.NoticeShards {
		return store.Invalidf("outbox shard %d is not in [0, %d)", shard, store.NoticeShards)
	}
	return nil
}
