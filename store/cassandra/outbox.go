package cassandra

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/gocql/gocql"
	"github.com/killrchat/chatql/store"
)

var _ store.Outbox = (*DB)(nil)

const (
	// A notice is written without done, so that a retried write never
	// clears the mark of a notice handled meanwhile.
	insertNotice     = `INSERT INTO notices (shard, hour, id, recipient, kind, room, sender) VALUES (?, ?, ?, ?, ?, ?, ?)`
	deleteNotice     = `DELETE FROM notices WHERE shard = ? AND hour = ? AND id = ? AND recipient = ?`
	markNoticeDone   = `UPDATE notices SET done = true WHERE shard = ? AND hour = ? AND id = ? AND recipient = ?`
	noticeColumns    = `id, recipient, kind, room, sender, done`
	selectNotices    = `SELECT ` + noticeColumns + ` FROM notices WHERE shard = ? AND hour = ?`
	selectNoticesAft = `SELECT ` + noticeColumns + ` FROM notices WHERE shard = ? AND hour = ? AND id > ?`
	insertNoticeHour = `INSERT INTO notice_hours (shard, hour) VALUES (?, ?)`
	selectNoticeHrs  = `SELECT hour FROM notice_hours WHERE shard = ? AND hour >= ?`

	insertPushSend  = `INSERT INTO push_sends (shard, recipient, room, notices, payload) VALUES (?, ?, ?, ?, ?)`
	deletePushSend  = `DELETE FROM push_sends WHERE shard = ? AND recipient = ? AND room = ?`
	selectPushSends = `SELECT recipient, room, notices, payload FROM push_sends WHERE shard = ? AND recipient IN ?`

	selectCursor  = `SELECT cursor FROM notice_cursors WHERE shard = ?`
	insertCursor  = `INSERT INTO notice_cursors (shard, cursor) VALUES (?, ?) IF NOT EXISTS`
	advanceCursor = `UPDATE notice_cursors SET cursor = ? WHERE shard = ? IF cursor < ?`

	selectLease = `SELECT holder FROM notice_leases WHERE shard = ?`
	insertLease = `INSERT INTO notice_leases (shard, holder) VALUES (?, ?) IF NOT EXISTS USING TTL ?`
	renewLease  = `UPDATE notice_leases USING TTL ? SET holder = ? WHERE shard = ? IF holder = ?`
)

// noticePageSize is the rows a read of one hour of notices fetches at a
// time: a page of notices, and the done ones among them.
const noticePageSize = 200

// noticeHour is the partition of notices holding the id's: its hour since
// the Unix epoch.
func noticeHour(id store.MessageID) int {
	return int(id.Time().Unix() / 3600)
}

// A noticePartition is a partition of notices: a shard's hour.
type noticePartition struct{ shard, hour int }

func partitionOf(shard int, id store.MessageID) noticePartition {
	return noticePartition{shard: shard, hour: noticeHour(id)}
}

// listedHours remembers the partitions of the current hour whose listing
// in notice_hours this process wrote, so that each is written once an
// hour rather than with every notice. It forgets them as the hour turns.
type listedHours struct {
	mu   sync.Mutex
	hour int
	rows map[noticePartition]bool
}

func (lh *listedHours) has(p noticePartition) bool {
	lh.mu.Lock()
	defer lh.mu.Unlock()
	return lh.hour == p.hour && lh.rows[p]
}

// add remembers p if it is of the current hour.
func (lh *listedHours) add(p noticePartition) {
	lh.mu.Lock()
	defer lh.mu.Unlock()
	now := int(time.Now().Unix() / 3600)
	if lh.hour != now || lh.rows == nil {
		lh.hour, lh.rows = now, map[noticePartition]bool{}
	}
	if p.hour == now {
		lh.rows[p] = true
	}
}

// noticeWrites returns the writes of the notices of the message id in room
// (see store.NoticesOf), to join the fan-out of the message's writes, so
// that the write is acknowledged only once they all landed: one unlogged
// batch per partition of notices (a batch of one partition is one
// mutation), and the listing of each partition's hour unless this process
// listed it this hour. Each is an idempotent upsert, retried elsewhere.
func (db *DB) noticeWrites(ctx context.Context, id store.MessageID, room string, notices []store.Notice) ([]func() error, error) {
	notices, err := store.NoticesOf(id, room, notices)
	if err != nil {
		return nil, err
	}
	byPartition := map[noticePartition][]store.Notice{}
	for _, n := range notices {
		p := partitionOf(store.NoticeShard(n.Recipient), n.ID)
		byPartition[p] = append(byPartition[p], n)
	}
	var writes []func() error
	for p, ns := range byPartition {
		writes = append(writes, func() error { return db.writeNotices(ctx, p, ns) })
		if !db.hours.has(p) {
			writes = append(writes, func() error {
				if err := db.write(ctx, insertNoticeHour, p.shard, p.hour).Exec(); err != nil {
					return fmt.Errorf("list hour %d of outbox shard %d: %w", p.hour, p.shard, err)
				}
				db.hours.add(p)
				return nil
			})
		}
	}
	return writes, nil
}

// writeNotices writes the notices of one partition, in one batch.
func (db *DB) writeNotices(ctx context.Context, p noticePartition, notices []store.Notice) error {
	args := func(n store.Notice) []any {
		return []any{p.shard, p.hour, gocql.UUID(n.ID), n.Recipient, string(n.Kind), n.Room, userUDT(n.From)}
	}
	var err error
	if len(notices) == 1 {
		err = db.write(ctx, insertNotice, args(notices[0])...).Exec()
	} else {
		b := db.session.NewBatch(gocql.UnloggedBatch).WithContext(ctx).RetryPolicy(retryElsewhere)
		for _, n := range notices {
			b.Entries = append(b.Entries, gocql.BatchEntry{Stmt: insertNotice, Args: args(n), Idempotent: true})
		}
		err = db.session.ExecuteBatch(b)
	}
	if err != nil {
		return fmt.Errorf("write notices to outbox shard %d: %w", p.shard, err)
	}
	return nil
}

// unwriteNotices deletes the notices of the message id in room that
// noticeWrites wrote, to take back a write that did not apply (see
// AddGroupMember). The listings stay, as a message's listing of its day.
func (db *DB) unwriteNotices(ctx context.Context, id store.MessageID, room string, notices []store.Notice) error {
	notices, err := store.NoticesOf(id, room, notices)
	if err != nil {
		return err
	}
	fo := newFanout(fanoutParallelism)
	for _, n := range notices {
		p := partitionOf(store.NoticeShard(n.Recipient), n.ID)
		fo.Go(func() error {
			return db.write(ctx, deleteNotice, p.shard, p.hour, gocql.UUID(n.ID), n.Recipient).Exec()
		})
	}
	return fo.Wait()
}

// PendingNotices reads the shard's listing of hours from after's on, one
// partition, then the hours listed in order, until it has limit notices.
// Empty hours are not listed, so a backlog of days costs a read per hour
// that holds notices, not per hour; the listing holds at most the
// NoticeRetention's hours (its rows expire). Within an hour the done rows
// are read and skipped: the reader moves the cursor past them.
func (db *DB) PendingNotices(ctx context.Context, shard int, after store.MessageID, limit int) ([]store.Notice, error) {
	if err := checkShard(shard); err != nil || limit <= 0 {
		return nil, err
	}
	hours, err := db.noticeHours(ctx, shard, after)
	if err != nil {
		return nil, fmt.Errorf("cassandra: pending notices of shard %d: %w", shard, err)
	}
	var out []store.Notice
	for _, h := range hours {
		if len(out) == limit {
			break
		}
		q := db.query(ctx, selectNotices, shard, h)
		if !after.IsZero() {
			q = db.query(ctx, selectNoticesAft, shard, h, gocql.UUID(after))
		}
		if out, err = readNotices(q.PageSize(noticePageSize), out, limit); err != nil {
			return nil, fmt.Errorf("cassandra: pending notices of shard %d, hour %d: %w", shard, h, err)
		}
	}
	return out, nil
}

// noticeHours lists the shard's hours that hold notices, from after's on
// (every one for the zero after), oldest first.
func (db *DB) noticeHours(ctx context.Context, shard int, after store.MessageID) ([]int, error) {
	from := math.MinInt32
	if !after.IsZero() {
		from = noticeHour(after)
	}
	iter := db.query(ctx, selectNoticeHrs, shard, from).Iter()
	var (
		hours []int
		h     int
	)
	for iter.Scan(&h) {
		hours = append(hours, h)
	}
	return hours, iter.Close()
}

// readNotices appends to out the notices q reads that are not done, until
// out has limit.
func readNotices(q *gocql.Query, out []store.Notice, limit int) ([]store.Notice, error) {
	iter := q.Iter()
	for len(out) < limit {
		var (
			id                    gocql.UUID
			recipient, kind, room string
			from                  userUDT
			done                  *bool
		)
		if !iter.Scan(&id, &recipient, &kind, &room, &from, &done) {
			break
		}
		if done != nil && *done {
			continue // handled (or a mark outliving its notice: see MarkNoticesDone)
		}
		out = append(out, store.Notice{ID: store.MessageID(id), Recipient: recipient, Kind: store.NoticeKind(kind), Room: room, From: store.UserRef(from)})
	}
	return out, iter.Close()
}

// MarkNoticesDone sets done on each notice and deletes the push send of
// each recipient and conversation, in one logged batch: the partitions of
// the notices and the shard's of push_sends change together or not at
// all, so a send is never left recorded with its notices done (the next
// send of the conversation would push it again), nor forgotten with its
// notices pending. An UPDATE makes the row it sets a column of: a mark of
// a notice no longer kept leaves a row of done alone (its other cells
// expired first, or were never written), which readNotices skips as done
// and the table's TTL drops.
func (db *DB) MarkNoticesDone(ctx context.Context, shard int, notices []store.Notice) error {
	if err := checkShard(shard); err != nil || len(notices) == 0 {
		return err
	}
	type conversation struct{ recipient, room string }
	forgot := map[conversation]bool{}
	b := db.session.NewBatch(gocql.LoggedBatch).WithContext(ctx).RetryPolicy(retryElsewhere)
	for _, n := range notices {
		p := partitionOf(shard, n.ID)
		b.Entries = append(b.Entries, gocql.BatchEntry{Stmt: markNoticeDone, Args: []any{p.shard, p.hour, gocql.UUID(n.ID), n.Recipient}, Idempotent: true})
		if c := (conversation{n.Recipient, n.Room}); !forgot[c] {
			forgot[c] = true
			b.Entries = append(b.Entries, gocql.BatchEntry{Stmt: deletePushSend, Args: []any{shard, n.Recipient, n.Room}, Idempotent: true})
		}
	}
	if err := db.session.ExecuteBatch(b); err != nil {
		return fmt.Errorf("cassandra: mark notices of shard %d done: %w", shard, err)
	}
	return nil
}

// RecordPushSends writes the sends in one unlogged batch of the shard's
// partition, one mutation. It is not retried: a retry landing after the
// batch that marks the notices done could bring a send back (the client's
// timestamps order them, but a retry of the same statement is a new
// write).
func (db *DB) RecordPushSends(ctx context.Context, shard int, sends []store.PushSend) error {
	if err := store.CheckPushSends(shard, sends); err != nil || len(sends) == 0 {
		return err
	}
	b := db.session.NewBatch(gocql.UnloggedBatch).WithContext(ctx)
	for _, s := range sends {
		ids := make([]gocql.UUID, len(s.Notices))
		for i, id := range s.Notices {
			ids[i] = gocql.UUID(id)
		}
		b.Entries = append(b.Entries, gocql.BatchEntry{Stmt: insertPushSend, Args: []any{shard, s.Recipient, s.Room, ids, s.Payload}})
	}
	if err := db.session.ExecuteBatch(b); err != nil {
		return fmt.Errorf("cassandra: record push sends of shard %d: %w", shard, err)
	}
	return nil
}

// PushSends reads the recipients' rows of the shard's partition in one
// query (recipient IN ?, the first clustering column).
func (db *DB) PushSends(ctx context.Context, shard int, recipients []string) ([]store.PushSend, error) {
	if err := checkShard(shard); err != nil || len(recipients) == 0 {
		return nil, err
	}
	recipients = slices.Compact(slices.Sorted(slices.Values(recipients)))
	iter := db.query(ctx, selectPushSends, shard, recipients).Iter()
	var out []store.PushSend
	for {
		var (
			s   store.PushSend
			ids []gocql.UUID
		)
		if !iter.Scan(&s.Recipient, &s.Room, &ids, &s.Payload) {
			break
		}
		for _, id := range ids {
			s.Notices = append(s.Notices, store.MessageID(id))
		}
		out = append(out, s)
	}
	if err := iter.Close(); err != nil {
		return nil, fmt.Errorf("cassandra: push sends of shard %d: %w", shard, err)
	}
	return out, nil
}

// NoticeCursor reads the cursor at serial consistency, so it sees every
// move that SetNoticeCursor reported.
func (db *DB) NoticeCursor(ctx context.Context, shard int) (store.MessageID, error) {
	if err := checkShard(shard); err != nil {
		return store.MessageID{}, err
	}
	cursor, err := db.readCursor(ctx, shard)
	if err != nil {
		return store.MessageID{}, fmt.Errorf("cassandra: cursor of shard %d: %w", shard, err)
	}
	return cursor, nil
}

// readCursor reads the shard's cursor at serial consistency: the zero id
// if it has none.
func (db *DB) readCursor(ctx context.Context, shard int) (store.MessageID, error) {
	var cursor gocql.UUID
	err := db.serialRead(ctx, selectCursor, shard).Scan(&cursor)
	if errors.Is(err, gocql.ErrNotFound) {
		return store.MessageID{}, nil
	}
	return store.MessageID(cursor), err
}

// SetNoticeCursor moves the cursor by a compare-and-set, UPDATE ... IF
// cursor < upTo, or, for a shard without one, INSERT ... IF NOT EXISTS.
// A read, a comparison and a plain write could move it back: two readers
// (a lease changing hands) both read 5, one writes 9, the other 7 after
// it. Cassandra compares timeuuids in a condition by their time, as
// store.MessageID.Compare does.
func (db *DB) SetNoticeCursor(ctx context.Context, shard int, upTo store.MessageID) error {
	if err := checkShard(shard); err != nil {
		return err
	}
	if upTo.IsZero() {
		return nil
	}
	settle := func(ctx context.Context) (casOutcome, error) {
		cur, err := db.readCursor(ctx, shard)
		switch {
		case err != nil:
			return 0, err
		case cur.Compare(upTo) >= 0:
			return casApplied, nil // ours, or a further move
		case cur.IsZero():
			return casRejected, nil
		}
		return casNotApplied, nil
	}
	for range 3 {
		var cur gocql.UUID
		applied, err := lwt(ctx, db.query(ctx, advanceCursor, gocql.UUID(upTo), shard, gocql.UUID(upTo)), map[string]any{"cursor": &cur}, settle)
		switch {
		case err != nil:
			return fmt.Errorf("cassandra: move the cursor of shard %d: %w", shard, err)
		case applied || cur != (gocql.UUID{}):
			return nil // moved, or at upTo or further
		}
		// No cursor yet: insert it, unless another reader just did.
		applied, err = againIfNotApplied(func() (bool, error) {
			return lwt(ctx, db.query(ctx, insertCursor, shard, gocql.UUID(upTo)), nil, func(ctx context.Context) (casOutcome, error) {
				switch outcome, err := settle(ctx); {
				case err != nil || outcome == casApplied:
					return outcome, err
				case outcome == casRejected: // still none
					return casNotApplied, nil
				}
				return casRejected, nil // another's, behind upTo: move it
			})
		})
		if err != nil {
			return fmt.Errorf("cassandra: set the cursor of shard %d: %w", shard, err)
		}
		if applied {
			return nil
		}
	}
	return fmt.Errorf("cassandra: move the cursor of shard %d: it keeps changing", shard)
}

// noticeLease is the table of the outbox shards' leases.
var noticeLease = leaseTable{
	name:   "shard",
	insert: insertLease,
	renew:  renewLease,
	sel:    selectLease,
}

// LeaseNoticeShard takes or renews the shard's lease (see leaseTable.take).
func (db *DB) LeaseNoticeShard(ctx context.Context, shard int, holder string, ttl time.Duration) (bool, error) {
	if err := checkShard(shard); err != nil {
		return false, err
	}
	if holder == "" || ttl <= 0 {
		return false, store.Invalidf("lease of shard %d: a holder and a positive ttl are needed", shard)
	}
	return noticeLease.take(ctx, db, shard, holder, ttl)
}

// A leaseTable is a table of leases, a row per leased thing (its key),
// holding the holder, with the three statements that take, renew and
// read a lease: INSERT (key, holder) ... IF NOT EXISTS USING TTL ?,
// UPDATE ... USING TTL ? SET holder = ? WHERE key = ? IF holder = ?, and
// SELECT holder ... WHERE key = ?.
type leaseTable struct {
	name               string
	insert, renew, sel string
}

// take takes the lease of key by the insert, or renews the holder's by the
// update, for leaseSeconds(ttl). A lease that expires between the two is
// taken again by the insert.
func (l leaseTable) take(ctx context.Context, db *DB, key any, holder string, ttl time.Duration) (bool, error) {
	secs := leaseSeconds(ttl)
	for range 3 {
		var current string
		settle := l.settle(db, key, holder, &current)
		applied, err := againIfNotApplied(func() (bool, error) {
			return lwt(ctx, db.query(ctx, l.insert, key, holder, secs), map[string]any{"holder": &current}, settle)
		})
		switch {
		case err != nil:
			return false, fmt.Errorf("cassandra: take the lease of %s %v: %w", l.name, key, err)
		case applied:
			return true, nil
		case current != holder:
			return false, nil // another's
		}
		current = ""
		applied, err = lwt(ctx, db.query(ctx, l.renew, secs, holder, key, holder), map[string]any{"holder": &current}, settle)
		switch {
		case err != nil:
			return false, fmt.Errorf("cassandra: renew the lease of %s %v: %w", l.name, key, err)
		case applied:
			return true, nil
		case current != "":
			return false, nil // expired, and taken by another
		}
		// Expired between the insert and the renewal: take it again.
	}
	return false, fmt.Errorf("cassandra: lease of %s %v: it keeps changing", l.name, key)
}

// leaseSeconds is the TTL of a lease for ttl: ttl rounded up to whole
// seconds, and one more, since Cassandra counts a TTL from the start of
// the current second (a cell written at 10.9 s with a TTL of 2 expires at
// 12 s). A lease thus lasts at least ttl, and at most a second more.
func leaseSeconds(ttl time.Duration) int {
	return int(math.Ceil(ttl.Seconds())) + 1
}

// settle reads the lease of key back for a conditional write of holder's:
// it is holder's (applied), another's (rejected, its holder in current),
// or nobody's (not applied).
func (l leaseTable) settle(db *DB, key any, holder string, current *string) settleFunc {
	return func(ctx context.Context) (casOutcome, error) {
		var h string
		err := db.serialRead(ctx, l.sel, key).Scan(&h)
		switch {
		case errors.Is(err, gocql.ErrNotFound):
			return casNotApplied, nil
		case err != nil:
			return 0, err
		case h == holder:
			return casApplied, nil
		}
		*current = h
		return casRejected, nil
	}
}

// checkShard rejects a shard out of [0, NoticeShards).
func checkShard(shard int) error {
	if shard < 0 || shard >= store.NoticeShards {
		return store.Invalidf("outbox shard %d is not in [0, %d)", shard, store.NoticeShards)
	}
	return nil
}
