package cassandra

import (
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

	if !bb.note("a", today, now) || !bb.note("a", today, now) || !bb.note("b", today, now) {
		t.Fatal("note(today) = false, want buffered")
	}
	if bb.note("a", today-1, now) {
		t.Error("note(yesterday) = true, want the caller to list it")
	}
	got := bb.take()
	slices.SortFunc(got, func(x, y roomBucket) int { return strings.Compare(x.room, y.room) })
	if want := []roomBucket{{"a", today}, {"b", today}}; !slices.Equal(got, want) {
		t.Errorf("take() = %v, want %v", got, want)
	}
	if got := bb.take(); len(got) != 0 {
		t.Errorf("second take() = %v, want nothing", got)
	}

	// Known pairs are not queued again; a failed one is.
	bb.note("a", today, now)
	bb.requeue(roomBucket{"a", today})
	if got := bb.take(); !slices.Equal(got, []roomBucket{{"a", today}}) {
		t.Errorf("take() after requeue = %v", got)
	}

	// A deleted room's pairs are forgotten, so a new room of the name lists again.
	bb.forget("a")
	bb.note("a", today, now)
	if got := bb.take(); !slices.Equal(got, []roomBucket{{"a", today}}) {
		t.Errorf("take() after forget = %v", got)
	}

	// A new day starts a new memory.
	tomorrow := now.Add(2 * time.Minute)
	bb.note("b", store.BucketOf(tomorrow), tomorrow)
	if got := bb.take(); !slices.Equal(got, []roomBucket{{"b", store.BucketOf(tomorrow)}}) {
		t.Errorf("take() on a new day = %v", got)
	}
	if len(bb.known) != 1 {
		t.Errorf("known after a new day = %v, want only today's pair", bb.known)
	}
}
