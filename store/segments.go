package store

import (
	"context"
	"slices"
	"time"
)

// Segment is one bounded read of one bucket: the messages with
// From <= id < Before, newest first. A zero bound is open.
type Segment struct {
	Bucket Bucket
	From   MessageID
	Before MessageID
}

// SegmentReader reads up to limit messages of one segment, newest first.
type SegmentReader func(ctx context.Context, s Segment, limit int) ([]Message, error)

// PlanSegments returns, in the order to read them, the segments of a
// newest-first page of a private group for a member with these membership
// windows, older than before (zero: from the newest). It follows the
// interval-by-bucket walk of seed 004: windows newest first, and within each
// window only the non-empty buckets it overlaps, each bounded by the window
// and the cursor. Windows after the cursor, and buckets outside every
// window, are never read. Windows must not overlap (a member is in a group
// or not); overlapping windows would read their common messages twice.
func PlanSegments(listed []Bucket, windows []Window, before MessageID) []Segment {
	buckets := NewestFirstBuckets(listed, before)
	ws := slices.Clone(windows)
	slices.SortFunc(ws, func(a, b Window) int { return b.From.Compare(a.From) })
	var plan []Segment
	for _, w := range ws {
		from := MinMessageID(w.From)
		// upper bounds the ids (exclusive); last is the newest bucket that
		// can hold a match (zero: no bound).
		upper, last := before, Bucket(0)
		if !before.IsZero() {
			last = BucketOf(before.Time())
		}
		if !w.To.IsZero() {
			if to := MinMessageID(w.To); upper.IsZero() || to.Compare(upper) < 0 {
				// Matches are strictly before To: a window ending at
				// midnight never reads the day that starts then.
				upper, last = to, BucketOf(w.To.Add(-time.Nanosecond))
			}
		}
		if !upper.IsZero() && upper.Compare(from) <= 0 {
			continue // the whole window is at or after the cursor
		}
		first := BucketOf(w.From)
		for _, b := range buckets {
			if b < first {
				break
			}
			if last != 0 && b > last {
				continue
			}
			plan = append(plan, Segment{Bucket: b, From: from, Before: upper})
		}
	}
	return plan
}

// ScanSegments reads segments in order until limit messages are collected,
// asking each only for what the page still lacks.
func ScanSegments(ctx context.Context, plan []Segment, limit int, read SegmentReader) ([]Message, error) {
	return scanInOrder(ctx, plan, limit, read)
}

// A Stream is a conversation's message stream as a backend reads it: the
// days it has messages in, and bounded reads of one day.
type Stream struct {
	Listed func(ctx context.Context) ([]Bucket, error)
	Read   SegmentReader
}

// Page returns up to limit messages within windows, older than before,
// newest first: one read of the listing, then PlanSegments' reads until
// the page is full.
func (s Stream) Page(ctx context.Context, windows []Window, before MessageID, limit int) ([]Message, error) {
	if limit <= 0 || len(windows) == 0 {
		return nil, nil
	}
	listed, err := s.Listed(ctx)
	if err != nil {
		return nil, err
	}
	return ScanSegments(ctx, PlanSegments(listed, windows, before), limit, s.Read)
}
