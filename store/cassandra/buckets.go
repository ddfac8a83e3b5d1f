package cassandra

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/killrchat/chatql/store"
)

// A bucketFamily is a table listing the non-empty day buckets of a message
// family: the messages of one room, or of one author. Each is a partition
// per key with the buckets as clustering rows, newest first, written behind
// the same in-memory buffer.
type bucketFamily uint8

const (
	// roomBuckets is messages_bucket: the days of a room's chat_room_messages.
	roomBuckets bucketFamily = iota
	// authorBuckets is author_buckets: the days of an author's messages_by_author.
	authorBuckets
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
}

func (f bucketFamily) String() string { return familyQueries[f].table }

// listedBucket is one row of a family's listing: key is the room name or the
// author's login.
type listedBucket struct {
	family bucketFamily
	key    string
	bucket store.Bucket
}

// maxKnownBuckets bounds the memory of a bucketBuffer. Past it the buffer
// forgets what it listed, which costs only repeated (idempotent) writes.
const maxKnownBuckets = 100_000

// bucketBuffer is the seed's write-behind buffer for the bucket listings: it
// remembers the rows of today already listed or queued, so a post adds no
// write of its own, and queues new ones for the flusher.
type bucketBuffer struct {
	mu      sync.Mutex
	today   store.Bucket
	known   map[listedBucket]bool // listed or queued today
	pending map[listedBucket]bool // queued, not yet listed
}

func newBucketBuffer() *bucketBuffer {
	return &bucketBuffer{known: map[listedBucket]bool{}, pending: map[listedBucket]bool{}}
}

// note records that a message of key in family f is going into bucket b, at
// now. It returns false if the caller must list the bucket itself, before
// the write: only today's bucket may wait for the flusher, as only the
// recent buckets are probed by readers while unlisted.
func (bb *bucketBuffer) note(f bucketFamily, key string, b store.Bucket, now time.Time) bool {
	today := store.BucketOf(now)
	if b != today {
		return false
	}
	lb := listedBucket{f, key, b}
	bb.mu.Lock()
	defer bb.mu.Unlock()
	if bb.today != today || len(bb.known) >= maxKnownBuckets {
		// A new day: yesterday's rows will not be posted to again.
		bb.today = today
		bb.known = make(map[listedBucket]bool, len(bb.pending))
		for p := range bb.pending {
			bb.known[p] = true
		}
	}
	if !bb.known[lb] {
		bb.known[lb] = true
		bb.pending[lb] = true
	}
	return true
}

// take removes and returns the queued rows.
func (bb *bucketBuffer) take() []listedBucket {
	bb.mu.Lock()
	defer bb.mu.Unlock()
	out := make([]listedBucket, 0, len(bb.pending))
	for lb := range bb.pending {
		out = append(out, lb)
	}
	clear(bb.pending)
	return out
}

// requeue queues again a row whose write failed.
func (bb *bucketBuffer) requeue(lb listedBucket) {
	bb.mu.Lock()
	defer bb.mu.Unlock()
	bb.pending[lb] = true
}

// forget drops what the buffer knows of a key of a family (a deleted room),
// so that a new key of the same name gets its buckets listed again.
func (bb *bucketBuffer) forget(f bucketFamily, key string) {
	bb.mu.Lock()
	defer bb.mu.Unlock()
	for lb := range bb.known {
		if lb.family == f && lb.key == key {
			delete(bb.known, lb)
		}
	}
}

// listBucket makes sure bucket b of key is listed in family f before a
// message goes into it: today's through the buffer, any other day at once.
// An empty listed bucket costs a read; an unlisted message would be lost to
// paging.
func (db *DB) listBucket(ctx context.Context, f bucketFamily, key string, b store.Bucket) error {
	if db.buckets.note(f, key, b, time.Now()) {
		return nil
	}
	if err := db.query(ctx, familyQueries[f].insert, key, int(b)).Exec(); err != nil {
		return fmt.Errorf("cassandra: list bucket %d of %q in %s: %w", b, key, f, err)
	}
	return nil
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

// flushLoop writes the queued buckets every interval until Close.
func (db *DB) flushLoop(interval, timeout time.Duration) {
	defer close(db.flushDone)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-db.stopFlush:
			return
		case <-tick.C:
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			// A failed row stays queued for the next tick; readers keep
			// probing its day directly for store.UnflushedWindow.
			_ = db.flushBuckets(ctx)
			cancel()
		}
	}
}

// flushParallelism bounds the concurrent writes of a flush. Midnight queues
// a row for every active room and author at once.
const flushParallelism = 16

// flushBuckets writes the queued rows to their listings and queues again
// those that failed.
func (db *DB) flushBuckets(ctx context.Context) error {
	fo := newFanout(flushParallelism)
	for _, lb := range db.buckets.take() {
		fo.Go(func() error {
			if err := db.query(ctx, familyQueries[lb.family].insert, lb.key, int(lb.bucket)).Exec(); err != nil {
				db.buckets.requeue(lb)
				return fmt.Errorf("list bucket %d of %q in %s: %w", lb.bucket, lb.key, lb.family, err)
			}
			return nil
		})
	}
	if err := fo.Wait(); err != nil {
		return fmt.Errorf("cassandra: flush buckets: %w", err)
	}
	return nil
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
