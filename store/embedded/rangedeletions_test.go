package embedded

import (
	"context"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable/block"
)

// rangeDeletions counts the range tombstones (as pebble keeps them,
// fragmented) in [lower, upper).
func rangeDeletions(t *testing.T, db *DB, lower, upper []byte) int {
	t.Helper()
	n := 0
	err := db.pdb.ScanInternal(context.Background(), block.CategoryUnknown, lower, upper,
		func(*pebble.InternalKey, pebble.LazyValue, pebble.IteratorLevel) error { return nil },
		func(_, _ []byte, _ pebble.SeqNum) error { n++; return nil },
		nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRangeDeletionsFlushTheMemtable: every maxMemtableRangeDeletions range
// deletions committed flush the memtable, whatever its size, so a read
// never fragments more range tombstones than that.
func TestRangeDeletionsFlushTheMemtable(t *testing.T) {
	db := open(t, t.TempDir())
	defer db.Close()
	before := db.pdb.Metrics().Flush.Count
	db.tombstones.Lock()
	db.tombstones.n = 0 // those Open made
	db.tombstones.Unlock()
	deleteRanges := func(n int) {
		t.Helper()
		b := db.batch()
		for i := range n {
			b.deleteRange(tuple("test_ranges").int(int64(i)))
		}
		if err := b.commit(); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 * maxMemtableRangeDeletions / 100 {
		deleteRanges(100)
	}
	deleteRanges(10)
	db.tombstones.Lock()
	n, flushed := db.tombstones.n, db.tombstones.flushed
	db.tombstones.Unlock()
	if flushed == nil || n != 10 {
		t.Fatalf("after %d range deletions: %d counted since a flush, flush asked for: %v; want 10 and one", 2*maxMemtableRangeDeletions+10, n, flushed != nil)
	}
	select {
	case <-flushed:
	case <-time.After(time.Minute):
		t.Fatal("the flush asked for is not done after a minute")
	}
	// Two flushes asked for; pebble may make them one.
	if got := db.pdb.Metrics().Flush.Count - before; got < 1 {
		t.Fatalf("%d range deletions flushed the memtable %d times, want at least once", 2*maxMemtableRangeDeletions+10, got)
	}
}
