package store

import (
	"context"
	"slices"
	"time"
)

// A Bucket is one day of a room's messages, as KillrChat's time_bucket: the
// UTC date written as the integer yyyyMMdd. Messages are partitioned by
// (room, bucket) so no partition grows without bound.
type Bucket int

// BucketOf returns the bucket holding messages posted at t.
func BucketOf(t time.Time) Bucket {
	t = t.UTC()
	return Bucket(t.Year()*10000 + int(t.Month())*100 + t.Day())
}

// Start is the first instant of the bucket.
func (b Bucket) Start() time.Time {
	return time.Date(int(b)/10000, time.Month(int(b)/100%100), int(b)%100, 0, 0, 0, 0, time.UTC)
}

// BucketReader reads up to limit messages of one bucket, in the scan's
// direction and within the scan's cursor bound.
type BucketReader func(ctx context.Context, b Bucket, limit int) ([]Message, error)

// NewestFirstBuckets returns the buckets a newest-first page must visit, in
// order: the listed non-empty buckets at or before the cursor's bucket. A
// zero cursor starts at the newest bucket. Every backend lists a bucket
// before it acknowledges a message in it, so no other bucket holds one.
func NewestFirstBuckets(listed []Bucket, before MessageID) []Bucket {
	out := make([]Bucket, 0, len(listed))
	for _, b := range listed {
		// Without a cursor every listed bucket counts, even one "after now":
		// a server whose clock runs ahead may have written it.
		if before.IsZero() || b <= BucketOf(before.Time()) {
			out = append(out, b)
		}
	}
	slices.Sort(out)
	slices.Reverse(out)
	return slices.Compact(out)
}

// OldestFirstBuckets returns the buckets an oldest-first scan after the
// cursor must visit, in order.
func OldestFirstBuckets(listed []Bucket, after MessageID) []Bucket {
	var from Bucket // the zero cursor starts at the first bucket
	if !after.IsZero() {
		from = BucketOf(after.Time())
	}
	out := make([]Bucket, 0, len(listed))
	for _, b := range listed {
		if b >= from {
			out = append(out, b)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ScanBuckets reads buckets in order until limit messages are collected.
// Each bucket is asked only for what the page still lacks, so a page costs
// one read per bucket it touches and none past the one that fills it.
func ScanBuckets(ctx context.Context, buckets []Bucket, limit int, read BucketReader) ([]Message, error) {
	return scanInOrder(ctx, buckets, limit, read)
}

// scanInOrder reads parts in order until limit messages are collected.
func scanInOrder[P any](ctx context.Context, parts []P, limit int, read func(context.Context, P, int) ([]Message, error)) ([]Message, error) {
	var page []Message
	for _, p := range parts {
		if len(page) >= limit {
			break
		}
		msgs, err := read(ctx, p, limit-len(page))
		if err != nil {
			return nil, err
		}
		if page == nil {
			// Most pages are in one part: no copy. Clipped, so that a
			// second part is appended to a new array, never to the
			// reader's.
			page = slices.Clip(msgs)
			continue
		}
		page = append(page, msgs...)
	}
	return page, nil
}
