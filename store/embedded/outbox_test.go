package embedded

import (
	"context"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

// A shard's cursor moves every second, notices or not; the notices up to
// it are deleted once a minute of its moves, and only when there are
// some: each deletion is a range tombstone, which every read of the store
// pays for until the memtable is flushed.
func TestNoticeCursorSweepsOnceAMinute(t *testing.T) {
	db := open(t, t.TempDir())
	defer db.Close()
	ctx := context.Background()
	const shard = 3
	p := noticesPartition(shard)
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	move := func(at time.Time) {
		t.Helper()
		if err := db.SetNoticeCursor(ctx, shard, store.MinMessageID(at)); err != nil {
			t.Fatal(err)
		}
	}
	pending := func() int {
		t.Helper()
		notices, err := db.PendingNotices(ctx, shard, store.MessageID{}, 100)
		if err != nil {
			t.Fatal(err)
		}
		return len(notices)
	}
	addNotice := func(at time.Time) {
		t.Helper()
		b := db.batch()
		b.set(noticeKey(shard, store.MessageIDAt(at), "bob"), noticeRow{Kind: string(store.NoticeMention), Room: "hall"})
		if err := b.commit(); err != nil {
			t.Fatal(err)
		}
	}

	for s := range 180 {
		move(t0.Add(time.Duration(s) * time.Second))
	}
	if n := rangeDeletions(t, db, p, p.end()); n != 0 {
		t.Fatalf("three minutes of moves without notices left %d range tombstones, want none", n)
	}

	addNotice(t0.Add(200 * time.Second))
	addNotice(t0.Add(230 * time.Second))
	move(t0.Add(210 * time.Second)) // the last sweep's minute is over
	if got := pending(); got != 1 {
		t.Fatalf("after a sweep to the first notice: %d notices kept, want the second", got)
	}
	for s := 211; s < 260; s++ {
		move(t0.Add(time.Duration(s) * time.Second))
	}
	if got := pending(); got != 1 {
		t.Fatalf("within a minute of the sweep: %d notices kept, want the second (before the cursor, not yet swept)", got)
	}
	move(t0.Add(270 * time.Second))
	if got := pending(); got != 0 {
		t.Fatalf("a minute after the sweep: %d notices kept, want none", got)
	}
	if n := rangeDeletions(t, db, p, p.end()); n == 0 || n > 3 {
		t.Fatalf("two sweeps left %d range tombstones (fragmented), want 1 to 3", n)
	}
}
