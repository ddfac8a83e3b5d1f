package cassandra

import (
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

func TestListedToday(t *testing.T) {
	now := time.Date(2025, 3, 4, 23, 59, 0, 0, time.UTC)
	today := store.BucketOf(now)
	lt := newListedToday()
	room, author := listing{roomBuckets, "a", today}, listing{authorBuckets, "a", today}

	if lt.has(room, now) {
		t.Fatal("has(room) before any add = true, want the first post to write it")
	}
	lt.add(room, now)
	if !lt.has(room, now) {
		t.Error("has(room) after add = false, want a later post to skip it")
	}
	// The families are apart: an author named like a room is another row.
	if lt.has(author, now) {
		t.Error("has(author) = true after adding only the room of the same name")
	}
	lt.add(author, now)

	// Another day's row is written by every post.
	yesterday := listing{roomBuckets, "a", today - 1}
	lt.add(yesterday, now)
	if lt.has(yesterday, now) {
		t.Error("has(yesterday's row) = true, want it written every time")
	}

	// A new day starts a new memory; a clock read before midnight, coming
	// late, does not turn it back.
	tomorrow := now.Add(2 * time.Minute)
	next := listing{roomBuckets, "a", store.BucketOf(tomorrow)}
	if lt.has(next, tomorrow) {
		t.Error("has(tomorrow's row) = true before any add")
	}
	if len(lt.rows) != 0 {
		t.Errorf("rows on a new day = %v, want none of yesterday's", lt.rows)
	}
	lt.add(next, tomorrow)
	lt.add(room, now) // a write of yesterday's row that ended late
	if !lt.has(next, now) || lt.has(room, tomorrow) {
		t.Errorf("late clock: has(today's row) = %v, has(yesterday's) = %v; want true, false", lt.has(next, now), lt.has(room, tomorrow))
	}

	// The memory is bounded.
	for i := range maxListedToday + 10 {
		lt.add(listing{authorBuckets, string(rune(i)), next.bucket}, tomorrow)
	}
	if len(lt.rows) > maxListedToday {
		t.Errorf("%d rows remembered, want at most %d", len(lt.rows), maxListedToday)
	}
}
