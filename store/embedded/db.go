// Package embedded is the default chat store: KillrChat's Cassandra tables
// kept as ordered keys in a pebble database on local disk, so the server
// runs with no database to install.
//
// Each table row is one key, `table | partition key | clustering key` (see
// keys.go), so a partition is a key range and a query of the Cassandra model
// is a read of one range. The lightweight transactions are compare-and-set
// under per-partition locks (see locks.go), and every change that touches
// several rows is one atomic pebble batch.
//
// Every change is logged, in the same batch, as an event of the room's log
// (room_events) or of a user's inbox log (inbox_events); see events.go.
//
// Open upgrades a data directory of an earlier version in place, once, in
// the order the versions added what it builds: room_members from chat_rooms
// (buildRoomMembers), then the former members of each private group from the
// inboxes (buildFormerMembers), then the read marks of the inboxes from their
// unread rows (buildReadMarks). The event logs are not back-filled: a
// directory written before them (rooms and messages, no room_events,
// inbox_events or inbox_buckets) opens as it is, and each log holds the
// events logged since the upgrade. Messages posted before it are in the
// histories (Messages, GroupMessages, the index) but in no log, so a
// subscriber resuming from an older cursor, or from the start, is replayed
// what happened since the upgrade; each inbox log starts empty.
package embedded

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/killrchat/chatql/store"
)

// DB is a store.Store on local disk. It is safe for concurrent use by one
// process; pebble locks the directory against a second.
type DB struct {
	pdb   *pebble.DB
	locks stripes

	// closing guards pdb: operations hold it shared, Close exclusively, so
	// Close waits for operations in flight and later ones fail cleanly
	// instead of touching a closed pebble.
	closing sync.RWMutex
	closed  bool
	// releaseDir gives back the data directory (lockDir); nil for a store
	// on a memory file system.
	releaseDir func() error
	// fanout defers the moves of public rooms in their participants'
	// inbox order (inboxfanout.go).
	fanout       roomFanout
	closeFlusher sync.Once
	// listed remembers the days listed in messages_bucket, author_buckets
	// and the inboxes' logs (listings.go).
	listed listedDays
	// newest keeps the newest page of the rooms read lately
	// (newestpages.go).
	newest newestPages
	// searchOff leaves the search index unwritten, for
	// BenchmarkPostSearchOnOff only: what indexing costs a post.
	searchOff bool
	// tombstones counts the range deletions committed since the memtable
	// was last flushed for them (rangeDeletionsCommitted).
	tombstones struct {
		sync.Mutex
		n int
		// flushed is closed once the last flush asked for is done.
		flushed <-chan struct{}
	}
}

// maxMemtableRangeDeletions is how many range deletions the store commits
// before it flushes the memtable for them. Pebble fragments a memtable's
// range tombstones again, all of them, for the first read after one is
// added, so their count in the memtable is what every read may pay; the
// memtable, 64 MiB, may take hours to fill on a quiet server while users
// delete rooms or make groups (2 a second each, by the default limits).
// In an sstable they are fragmented once, when it is written.
const maxMemtableRangeDeletions = 1000

var _ store.Store = (*DB)(nil)

// errClosed is returned by operations after Close.
var errClosed = errors.New("embedded store is closed")

// cacheSize is the memory pebble keeps for recently read blocks: pages of
// active rooms and the rows of their users.
const cacheSize = 64 << 20

// memTableSize is the most a memtable grows to (pebble starts one at 256
// KiB and doubles it at each flush, so an idle store stays small; two may
// be full at once). A flush writes a file of level 0 whose keys span every
// room written since, and pebble merges four of them into the next level,
// rewriting most of it: larger memtables rewrite it less often, and more
// of the search queue's rows, deleted once indexed, reach the files as
// their deletion alone. BenchmarkPostMessage/posters=64 -benchtime
// 300000x on 2 cores: 52-56 µs a post at pebble's default of 4 MiB, 40 at
// 16 MiB, 26-27 at 64 (BENCHMARKS.md). Durability is the same: every post
// is in the fsynced log before it is acknowledged.
const memTableSize = 64 << 20

// Open opens the store in dir, creating it if needed. A directory another
// process has open is refused, naming that process.
func Open(dir string) (*DB, error) {
	release, err := lockDir(dir)
	if err != nil {
		return nil, fmt.Errorf("opening embedded store: %w", err)
	}
	db, err := openFS(dir, vfs.Default)
	if err != nil {
		return nil, errors.Join(err, release())
	}
	if err := db.buildSearchIndex(dir); err != nil {
		return nil, errors.Join(err, db.pdb.Close(), release())
	}
	db.releaseDir = release
	return db, nil
}

// openFS opens the store in dir on the file system fs: the disk, or in
// tests a memory file system that can simulate a crash.
func openFS(dir string, fs vfs.FS) (*DB, error) {
	opts := &pebble.Options{
		FS:                 fs,
		FormatMajorVersion: pebble.FormatNewest,
		CacheSize:          cacheSize,
		MemTableSize:       memTableSize,
		Logger:             pebbleLogger{dir: dir},
	}
	// Bloom filters spare the point reads (users, rooms, a post's check of
	// its day) a look into every file that cannot hold their key. Each
	// level's options default to the previous level's.
	opts.Levels[0].FilterPolicy = bloom.FilterPolicy(10)
	pdb, err := pebble.Open(dir, opts)
	if err != nil {
		return nil, fmt.Errorf("opening embedded store in %s: %w", dir, err)
	}
	db := &DB{pdb: pdb, locks: stripes{seed: maphash.MakeSeed()}}
	if err := db.buildRoomMembers(); err != nil {
		return nil, errors.Join(fmt.Errorf("opening embedded store in %s: building room_members: %w", dir, err), pdb.Close())
	}
	if err := db.markLargeRooms(); err != nil {
		return nil, errors.Join(fmt.Errorf("opening embedded store in %s: %w", dir, err), pdb.Close())
	}
	if err := db.buildFormerMembers(); err != nil {
		return nil, errors.Join(fmt.Errorf("opening embedded store in %s: recording the groups' former members: %w", dir, err), pdb.Close())
	}
	if err := db.buildReadMarks(); err != nil {
		return nil, errors.Join(fmt.Errorf("opening embedded store in %s: converting unread rows to read marks: %w", dir, err), pdb.Close())
	}
	if err := db.buildPublicRooms(); err != nil {
		return nil, errors.Join(fmt.Errorf("opening embedded store in %s: listing the public rooms: %w", dir, err), pdb.Close())
	}
	if err := db.startFlusher(); err != nil {
		return nil, errors.Join(fmt.Errorf("opening embedded store in %s: %w", dir, err), pdb.Close())
	}
	return db, nil
}

// Close flushes the store to its files and closes it. It waits for
// operations in flight; later operations return an error. Closing twice is
// harmless.
func (db *DB) Close() error {
	db.closeFlusher.Do(db.stopFlusher)
	db.closing.Lock()
	defer db.closing.Unlock()
	if db.closed {
		return nil
	}
	db.closed = true
	// Writing the memtable out is not needed for durability (the WAL has
	// every write) but makes the next Open quick: nothing to replay.
	err := errors.Join(db.pdb.Flush(), db.pdb.Close())
	if db.releaseDir != nil {
		err = errors.Join(err, db.releaseDir())
	}
	return err
}

// begin starts an operation: it fails if ctx is done or the store closed,
// and otherwise keeps the store open until the returned func is called.
func (db *DB) begin(ctx context.Context) (end func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	db.closing.RLock()
	if db.closed {
		db.closing.RUnlock()
		return nil, errClosed
	}
	return db.closing.RUnlock, nil
}

// beginLocked is begin plus the locks of the given partitions (taken in
// stripe order, so never in a deadlocking order); end releases both.
func (db *DB) beginLocked(ctx context.Context, partitions ...key) (end func(), err error) {
	endOp, err := db.begin(ctx)
	if err != nil {
		return nil, err
	}
	set := db.locks.of(partitions...)
	db.locks.lock(set)
	return func() {
		db.locks.unlock(set)
		endOp()
	}, nil
}

// getRow reads and decodes the row at k, reporting whether there is one.
func getRow[T any](db *DB, k key) (row T, found bool, err error) {
	value, closer, err := db.pdb.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return row, false, nil
	}
	if err != nil {
		return row, false, err
	}
	defer closer.Close()
	row, err = decode[T](value)
	return row, err == nil, err
}

// has reports whether there is a row at k.
func (db *DB) has(k key) (bool, error) {
	_, closer, err := db.pdb.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, closer.Close()
}

// scan calls fn on each row in [lower, upper), last to first if reverse,
// until fn returns false.
func (db *DB) scan(ctx context.Context, lower, upper []byte, reverse bool, fn func(k, v []byte) (bool, error)) (err error) {
	it, err := db.pdb.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, it.Close()) }()
	start, step := it.First, it.Next
	if reverse {
		start, step = it.Last, it.Prev
	}
	for ok := start(); ok; ok = step() {
		v, err := it.ValueAndErr()
		if err != nil {
			return err
		}
		if more, err := fn(it.Key(), v); err != nil || !more {
			return err
		}
	}
	return nil
}

// A batch gathers the writes of one operation, to commit them atomically.
// It keeps the first error, so callers check once, at commit.
type batch struct {
	*pebble.Batch
	err error
	db  *DB
	// listings are the days this batch lists (see DB.list), remembered
	// once it commits.
	listings []listing
	// roomsTouched are the rooms whose messages it writes (touch), by
	// partition prefix, whose newest pages are forgotten once it commits;
	// all of them if touchesAllRooms.
	roomsTouched    []string
	touchesAllRooms bool
	// rangeDeletions counts its range deletions.
	rangeDeletions int
}

// lists reports whether b lists day in partition p.
func (b *batch) lists(p key, day store.Bucket) bool {
	for _, l := range b.listings {
		if l.day == day && bytes.Equal(l.p, p) {
			return true
		}
	}
	return false
}

// A listing is a day listed in partition p, written after stamp (see
// listedDays).
type listing struct {
	p     key
	day   store.Bucket
	stamp listingStamp
}

func (db *DB) batch() *batch { return &batch{Batch: db.pdb.NewBatch(), db: db} }

func (b *batch) set(k key, row any) {
	if b.err != nil {
		return
	}
	value, err := encode(row)
	if err != nil {
		b.err = err
		return
	}
	b.touch(k)
	b.err = b.Set(k, value, nil)
}

func (b *batch) setEmpty(k key) {
	if b.err == nil {
		b.touch(k)
		b.err = b.Set(k, nil, nil)
	}
}

func (b *batch) delete(k key) {
	if b.err == nil {
		b.touch(k)
		b.err = b.Delete(k, nil)
	}
}

// deleteRange deletes every row whose key starts with prefix.
func (b *batch) deleteRange(prefix key) { b.deleteBetween(prefix, prefix.end()) }

// deleteBetween deletes every row in [lower, upper).
func (b *batch) deleteBetween(lower, upper []byte) {
	if b.err == nil {
		b.touch(lower)
		b.rangeDeletions++
		b.err = b.DeleteRange(lower, upper, nil)
	}
}

// rangeDeletionsCommitted counts n range deletions committed, and once
// maxMemtableRangeDeletions have been since the last flush for them,
// flushes the memtable, without waiting for it.
func (db *DB) rangeDeletionsCommitted(n int) {
	t := &db.tombstones
	t.Lock()
	defer t.Unlock()
	if t.n += n; t.n < maxMemtableRangeDeletions {
		return
	}
	flushed, err := db.pdb.AsyncFlush()
	if err != nil {
		slog.Error("flushing the memtable for its range deletions", "err", err)
		return
	}
	t.n, t.flushed = 0, flushed
}

// commit writes the batch atomically and returns once it is on disk: the
// write-ahead log holding it is fsynced (pebble.Sync), so a write the store
// acknowledged survives a crash of the process or of the machine. Every
// write of the store goes through here; there is no unsynced path.
//
// Syncing every batch costs little throughput because pebble commits in
// groups (pebble v2 commit.go, commitPipeline, and record/log_writer.go,
// LogWriter.flushLoop): a commit copies its batch into the log's in-memory
// block under the pipeline's mutex, queues a sync request and waits. One
// goroutine, the log writer's flush loop, takes every request queued so far,
// writes all the data buffered before them and issues one fsync that
// releases them all. While that fsync runs, the batches of other goroutines
// keep arriving and queue for the next one. So concurrent requests (every
// HTTP request and websocket operation runs on its own goroutine) share
// fsyncs: at N posters in flight, a fsync acknowledges up to N of them, and
// throughput grows with concurrency instead of being one fsync per write.
// The store's partition locks are held only by the writes that need them
// (a post to a public room takes none), so they do not serialize posts
// behind one another's fsync.
//
// A reader may see a batch before its fsync has finished (pebble publishes
// before it waits for the sync). That is safe for the writes that depend on
// what they read, such as a post that finds its day already listed by a
// concurrent post: the log is written in order and a fsync covers all of it,
// so the later write's fsync makes the earlier one durable too.
func (b *batch) commit() error {
	defer b.Close()
	if b.err != nil {
		return b.err
	}
	err := b.Commit(pebble.Sync)
	if err == nil {
		for _, l := range b.listings {
			b.db.listed.remember(l.p, l.day, l.stamp)
		}
		if b.rangeDeletions > 0 {
			b.db.rangeDeletionsCommitted(b.rangeDeletions)
		}
	}
	// Last, once a read would find everything the batch wrote (its rows,
	// and its days among the listed ones), and even if the commit failed:
	// pebble may have applied it.
	if len(b.roomsTouched) > 0 || b.touchesAllRooms {
		b.db.newest.forget(b.roomsTouched, b.touchesAllRooms)
	}
	return err
}

// pebbleLogger sends pebble's log lines to log/slog: its routine notes at
// debug level, so they stay out of a server's (and a test's) output, and its
// errors at error level.
type pebbleLogger struct{ dir string }

func (l pebbleLogger) log(level slog.Level, format string, args []any) {
	ctx := context.Background()
	if logger := slog.Default(); logger.Enabled(ctx, level) {
		logger.Log(ctx, level, fmt.Sprintf(format, args...), "component", "pebble", "dir", l.dir)
	}
}

func (l pebbleLogger) Infof(format string, args ...any)  { l.log(slog.LevelDebug, format, args) }
func (l pebbleLogger) Errorf(format string, args ...any) { l.log(slog.LevelError, format, args) }

// Fatalf reports an error pebble cannot continue from. Pebble's own logger
// exits the process; panicking instead keeps the stack and lets a test
// report it.
func (l pebbleLogger) Fatalf(format string, args ...any) {
	l.log(slog.LevelError, format, args)
	panic(fmt.Sprintf("pebble: "+format, args...))
}
