package cassandra

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/gocql/gocql"

	"github.com/killrchat/chatql/store"
)

// A bucketFamily is a table listing the non-empty day buckets of a message
// family or a log: the messages and events of one room, the messages of one
// author, the events of one inbox. Each is a partition per key with the
// buckets as clustering rows, newest first. A write lists its day with its
// other writes (see listBuckets).
type bucketFamily uint8

const (
	// roomBuckets is messages_bucket: the days of a room's
	// chat_room_messages and room_events (or of a direct conversation's
	// messages).
	roomBuckets bucketFamily = iota
	// authorBuckets is author_buckets: the days of an author's messages_by_author.
	authorBuckets
	// inboxBuckets is inbox_buckets: the days of a user's inbox_events.
	inboxBuckets
)

// familyQueries are the statements of each family's listing table.
var familyQueries = [...]struct {
	table  string
	insert string
	list   string
}{
	roomBuckets: {
		table:  "messages_bucket",
		insert: `INSERT INTO messages_bucket (room_name, time_bucket) VALUES (?, ?)`,
		list:   `SELECT time_bucket FROM messages_bucket WHERE room_name = ?`,
	},
	authorBuckets: {
		table:  "author_buckets",
		insert: `INSERT INTO author_buckets (author_login, time_bucket) VALUES (?, ?)`,
		list:   `SELECT time_bucket FROM author_buckets WHERE author_login = ?`,
	},
	inboxBuckets: {
		table:  "inbox_buckets",
		insert: `INSERT INTO inbox_buckets (login, time_bucket) VALUES (?, ?)`,
		list:   `SELECT time_bucket FROM inbox_buckets WHERE login = ?`,
	},
}

func (f bucketFamily) String() string { return familyQueries[f].table }

// listing is one row of a family's listing: key is the room name or the
// author's login.
type listing struct {
	family bucketFamily
	key    string
	bucket store.Bucket
}

// maxListedToday bounds the memory of a listedToday. Past it the set starts
// afresh, which costs only repeated (idempotent) writes.
const maxListedToday = 100_000

// listedToday remembers the listing rows of today this process has written,
// so that only the first post of a day writes its rows. A row is added only
// once its write succeeded: a post that finds it here knows its day is
// listed, and a post that does not writes the row with its copies.
//
// Remembering is sound only for rows nothing deletes (see remembered):
// another process deleting a row this one remembers would leave this one's
// next posts in an unlisted day.
type listedToday struct {
	mu    sync.Mutex
	today store.Bucket
	rows  map[listing]bool
}

func newListedToday() *listedToday { return &listedToday{rows: map[listing]bool{}} }

// has reports whether row l is known to be written, at now. Only today's
// rows are remembered: another day's (a clock running behind, an import)
// is always written.
func (lt *listedToday) has(l listing, now time.Time) bool {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	lt.turnDay(now)
	return lt.rows[l]
}

// add remembers row l, whose write succeeded, if it is of today at now.
func (lt *listedToday) add(l listing, now time.Time) {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	lt.turnDay(now)
	if l.bucket != lt.today {
		return
	}
	if len(lt.rows) >= maxListedToday {
		clear(lt.rows)
	}
	lt.rows[l] = true
}

// turnDay forgets the rows of a past day: no post goes to them again. The
// day only moves forward, whatever order callers' clocks are read in.
func (lt *listedToday) turnDay(now time.Time) {
	if today := store.BucketOf(now); today > lt.today {
		lt.today = today
		clear(lt.rows)
	}
}

// remembered reports whether the rows of family f for key may be
// remembered once written: the rows nothing deletes. Those are an author's
// and a direct conversation's (neither is ever deleted). A room's or a
// group's rows are deleted with it (DeleteRoom), by any process, and a room
// of the same name may be created again at once, on any process: so every
// write to a room lists its day again (an idempotent upsert), and none
// relies on what this process wrote before.
func remembered(f bucketFamily, key string) bool {
	return f == authorBuckets || f == roomBuckets && store.IsDirectConversation(key)
}

// listBuckets starts on fo the writes of the listing rows of m's day: the
// room's in messages_bucket, the author's in author_buckets, each unless
// remembered as written today. They run with m's copies, so a post waits
// for no more than its slowest write, and it is acknowledged only when
// every write succeeded: no acknowledged message is in an unlisted day.
func (db *DB) listBuckets(ctx context.Context, fo *fanout, m store.Message, b store.Bucket) {
	db.listDays(ctx, fo, listing{roomBuckets, m.Room, b}, listing{authorBuckets, m.Author.Login, b})
}

// listDays starts on fo the writes of the listing rows ls, but for those
// remembered as written today.
func (db *DB) listDays(ctx context.Context, fo *fanout, ls ...listing) {
	for _, l := range ls {
		keep := remembered(l.family, l.key)
		if keep && db.listed.has(l, time.Now()) {
			continue
		}
		fo.Go(func() error {
			if err := db.write(ctx, familyQueries[l.family].insert, l.key, int(l.bucket)).Exec(); err != nil {
				return fmt.Errorf("list bucket %d of %q in %s: %w", l.bucket, l.key, l.family, err)
			}
			if keep {
				db.listed.add(l, time.Now())
			}
			return nil
		})
	}
}

// listedBuckets returns the buckets family f lists for key.
func (db *DB) listedBuckets(ctx context.Context, f bucketFamily, key string) ([]store.Bucket, error) {
	iter := db.query(ctx, familyQueries[f].list, key).Iter()
	var listed []store.Bucket
	var b int
	for iter.Scan(&b) {
		listed = append(listed, store.Bucket(b))
	}
	if err := iter.Close(); err != nil {
		return nil, fmt.Errorf("read %s: %w", f, err)
	}
	return listed, nil
}

// fanout runs functions concurrently, at most n at a time, and joins their
// errors. Go blocks while n are running, so a long stream of work (a room's
// every message) never holds more than n goroutines.
type fanout struct {
	wg   sync.WaitGroup
	sem  chan struct{}
	mu   sync.Mutex
	errs []error
}

func newFanout(n int) *fanout { return &fanout{sem: make(chan struct{}, n)} }

// Go runs fn once fewer than n are running.
func (f *fanout) Go(fn func() error) {
	f.sem <- struct{}{}
	f.wg.Go(func() {
		defer func() { <-f.sem }()
		if err := fn(); err != nil {
			f.mu.Lock()
			f.errs = append(f.errs, err)
			f.mu.Unlock()
		}
	})
}

// Wait waits for every fn and returns their errors joined, or nil.
func (f *fanout) Wait() error {
	f.wg.Wait()
	return errors.Join(f.errs...)
}

// readDays runs stmt, whose markers are a room, a day and a list of
// message ids, once per room and day of msgs (at most maxInList ids at a
// time), concurrently, and returns what scan made of each result, each
// result's rows together and in their order: the reads of a page's
// reactions and threads, one per partition rather than one per message.
func readDays[R any](ctx context.Context, db *DB, msgs []store.Message, stmt string, scan func(*gocql.Iter) []R) ([]R, error) {
	type partition struct {
		room   string
		bucket store.Bucket
	}
	wanted := map[partition][]gocql.UUID{}
	for _, m := range msgs {
		p := partition{m.Room, store.BucketOf(m.ID.Time())}
		wanted[p] = append(wanted[p], gocql.UUID(m.ID))
	}
	var (
		mu  sync.Mutex
		out []R
	)
	fo := newFanout(fanoutParallelism)
	for p, ids := range wanted {
		for chunk := range slices.Chunk(ids, maxInList) {
			fo.Go(func() error {
				iter := db.query(ctx, stmt, p.room, int(p.bucket), chunk).Iter()
				rows := scan(iter)
				if err := iter.Close(); err != nil {
					return fmt.Errorf("cassandra: %q, day %d: %w", p.room, p.bucket, err)
				}
				mu.Lock()
				out = append(out, rows...)
				mu.Unlock()
				return nil
			})
		}
	}
	return out, fo.Wait()
}
