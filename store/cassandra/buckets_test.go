package cassandra

import (
	"cmp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

func TestBucketBuffer(t *testing.T) {
	now := time.Date(2025, 3, 4, 23, 59, 0, 0, time.UTC)
	today := store.BucketOf(now)
	bb := newBucketBuffer()
	sorted := func(lbs []listedBucket) []listedBucket {
		slices.SortFunc(lbs, func(x, y listedBucket) int {
			return cmp.Or(cmp.Compare(x.family, y.family), strings.Compare(x.key, y.key))
		})
		return lbs
	}

	if !bb.note(roomBuckets, "a", today, now) || !bb.note(roomBuckets, "a", today, now) || !bb.note(roomBuckets, "b", today, now) {
		t.Fatal("note(today) = false, want buffered")
	}
	// The families are apart: an author named like a room is another row.
	if !bb.note(authorBuckets, "a", today, now) {
		t.Fatal("note(author, today) = false, want buffered")
	}
	if bb.note(roomBuckets, "a", today-1, now) || bb.note(authorBuckets, "a", today-1, now) {
		t.Error("note(yesterday) = true, want the caller to list it")
	}
	got := sorted(bb.take())
	want := []listedBucket{{roomBuckets, "a", today}, {roomBuckets, "b", today}, {authorBuckets, "a", today}}
	if !slices.Equal(got, want) {
		t.Errorf("take() = %v, want %v", got, want)
	}
	if got := bb.take(); len(got) != 0 {
		t.Errorf("second take() = %v, want nothing", got)
	}

	// Known rows are not queued again; a failed one is.
	bb.note(roomBuckets, "a", today, now)
	bb.requeue(listedBucket{roomBuckets, "a", today})
	if got := bb.take(); !slices.Equal(got, []listedBucket{{roomBuckets, "a", today}}) {
		t.Errorf("take() after requeue = %v", got)
	}

	// A deleted room's rows are forgotten, so a new room of the name lists
	// again; the author of the same name is not.
	bb.forget(roomBuckets, "a")
	bb.note(roomBuckets, "a", today, now)
	bb.note(authorBuckets, "a", today, now)
	if got := bb.take(); !slices.Equal(got, []listedBucket{{roomBuckets, "a", today}}) {
		t.Errorf("take() after forget = %v", got)
	}

	// A new day starts a new memory.
	tomorrow := now.Add(2 * time.Minute)
	bb.note(roomBuckets, "b", store.BucketOf(tomorrow), tomorrow)
	if got := bb.take(); !slices.Equal(got, []listedBucket{{roomBuckets, "b", store.BucketOf(tomorrow)}}) {
		t.Errorf("take() on a new day = %v", got)
	}
	if len(bb.known) != 1 {
		t.Errorf("known after a new day = %v, want only today's row", bb.known)
	}
}
