package store

import (
	"context"
	"slices"
	"time"
)

// Segment is one bounded read of one bucket: the messages with
// From <= id < Before and, in a read toward the newest, After < id. A
// zero bound is open; PlanSegmentsAfter sets From or After, never both.
type Segment struct {
	Bucket Bucket
	From   MessageID
	Before MessageID
	After  MessageID
}

// SegmentReader reads up to limit messages of one segment, in the order of
// the page it serves.
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

// PlanSegmentsAfter returns, in the order to read them, the segments of an
// oldest-first page of a private group for a member with these membership
// windows, newer than after (zero: from the oldest): PlanSegments' walk the
// other way, windows and buckets oldest first, each bounded by the window
// and the cursor.
func PlanSegmentsAfter(listed []Bucket, windows []Window, after MessageID) []Segment {
	buckets := OldestFirstBuckets(listed, after)
	ws := slices.Clone(windows)
	slices.SortFunc(ws, func(a, b Window) int { return a.From.Compare(b.From) })
	var plan []Segment
	for _, w := range ws {
		var before MessageID
		last := Bucket(0) // the newest bucket that can hold a match (zero: no bound)
		if !w.To.IsZero() {
			before, last = MinMessageID(w.To), BucketOf(w.To.Add(-time.Nanosecond))
			if !after.IsZero() && after.Compare(before) >= 0 {
				continue // the whole window is at or before the cursor
			}
		}
		seg := Segment{From: MinMessageID(w.From), Before: before}
		first := BucketOf(w.From)
		if !after.IsZero() && after.Compare(seg.From) >= 0 {
			seg.From, seg.After, first = MessageID{}, after, BucketOf(after.Time())
		}
		for _, b := range buckets {
			if last != 0 && b > last {
				break
			}
			if b < first {
				continue
			}
			seg.Bucket = b
			plan = append(plan, seg)
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
	Read   SegmentReader // newest first
	// ReadOldestFirst reads a segment of PlanSegmentsAfter, oldest first.
	ReadOldestFirst SegmentReader
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

// PageAfter returns up to limit messages within windows, newer than after,
// oldest first: one read of the listing, then PlanSegmentsAfter's reads
// until the page is full.
func (s Stream) PageAfter(ctx context.Context, windows []Window, after MessageID, limit int) ([]Message, error) {
	if limit <= 0 || len(windows) == 0 {
		return nil, nil
	}
	listed, err := s.Listed(ctx)
	if err != nil {
		return nil, err
	}
	return ScanSegments(ctx, PlanSegmentsAfter(listed, windows, after), limit, s.ReadOldestFirst)
}
