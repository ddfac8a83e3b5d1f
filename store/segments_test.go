package store_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

// march returns the instant of March 2024 at day d, hour h (UTC).
func march(d, h int) time.Time { return time.Date(2024, 3, d, h, 0, 0, 0, time.UTC) }

// fmtPlan lists segments as bucket[from,before) with times, for messages.
func fmtPlan(plan []store.Segment) string {
	bound := func(id store.MessageID) string {
		if id.IsZero() {
			return "-"
		}
		return id.Time().Format("01-02T15:04")
	}
	parts := make([]string, len(plan))
	for i, s := range plan {
		parts[i] = fmt.Sprintf("%d[%s,%s)", s.Bucket, bound(s.From), bound(s.Before))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func TestPlanSegments(t *testing.T) {
	listed := []store.Bucket{20240309, 20240301, 20240302, 20240303, 20240305, 20240306, 20240308}
	orig := slices.Clone(listed)
	min := store.MinMessageID
	seg := func(b store.Bucket, from time.Time, before store.MessageID) store.Segment {
		return store.Segment{Bucket: b, From: min(from), Before: before}
	}
	a := store.Window{From: march(2, 6), To: march(5, 12)}
	early := store.Window{From: march(1, 10), To: march(2, 10)}
	late := store.Window{From: march(6, 0), To: march(8, 12)}
	open := store.Window{From: march(8, 9)}
	cursor3, cursor8 := store.MessageIDAt(march(3, 15)), store.MessageIDAt(march(8, 12))
	for _, tc := range []struct {
		name    string
		windows []store.Window
		before  store.MessageID
		want    []store.Segment
	}{
		{"no windows", nil, store.MessageID{}, nil},
		{"closed window: its listed buckets, bounded by it", []store.Window{a}, store.MessageID{}, []store.Segment{
			seg(20240305, a.From, min(a.To)), seg(20240303, a.From, min(a.To)), seg(20240302, a.From, min(a.To)),
		}},
		{"windows newest first, whatever their order", []store.Window{early, late}, store.MessageID{}, []store.Segment{
			seg(20240308, late.From, min(late.To)), seg(20240306, late.From, min(late.To)),
			seg(20240302, early.From, min(early.To)), seg(20240301, early.From, min(early.To)),
		}},
		{"open window: to the newest listed bucket", []store.Window{open}, store.MessageID{}, []store.Segment{
			seg(20240309, open.From, store.MessageID{}), seg(20240308, open.From, store.MessageID{}),
		}},
		{"cursor inside a closed window", []store.Window{a}, cursor3, []store.Segment{
			seg(20240303, a.From, cursor3), seg(20240302, a.From, cursor3),
		}},
		{"cursor inside an open window", []store.Window{{From: march(5, 0)}}, cursor8, []store.Segment{
			seg(20240308, march(5, 0), cursor8), seg(20240306, march(5, 0), cursor8), seg(20240305, march(5, 0), cursor8),
		}},
		{"cursor after a closed window: bounded by the window", []store.Window{a}, store.MessageIDAt(march(9, 1)), []store.Segment{
			seg(20240305, a.From, min(a.To)), seg(20240303, a.From, min(a.To)), seg(20240302, a.From, min(a.To)),
		}},
		{"cursor between windows: the later one skipped", []store.Window{early, {From: march(6, 0)}}, store.MessageIDAt(march(5, 0)), []store.Segment{
			seg(20240302, early.From, min(early.To)), seg(20240301, early.From, min(early.To)),
		}},
		{"cursor before every window", []store.Window{early, a, open}, store.MessageIDAt(march(1, 5)), nil},
		{"cursor at a window's very start", []store.Window{a}, min(a.From), nil},
		{"two windows share a bucket, read once per window", []store.Window{
			{From: march(3, 2), To: march(3, 8)}, {From: march(3, 12), To: march(5, 6)},
		}, store.MessageID{}, []store.Segment{
			seg(20240305, march(3, 12), min(march(5, 6))), seg(20240303, march(3, 12), min(march(5, 6))),
			seg(20240303, march(3, 2), min(march(3, 8))),
		}},
		{"window over unlisted days only", []store.Window{{From: march(4, 0), To: march(4, 23)}}, store.MessageID{}, nil},
		{"window long before the listed days", []store.Window{{From: march(1, 0).AddDate(0, -1, 0), To: march(1, 0).AddDate(0, 0, -20)}}, store.MessageID{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			windows := slices.Clone(tc.windows)
			got := store.PlanSegments(listed, windows, tc.before)
			if !slices.Equal(got, tc.want) {
				t.Errorf("PlanSegments(windows %v, before %v) =\n  %s\nwant\n  %s", tc.windows, tc.before.Time(), fmtPlan(got), fmtPlan(tc.want))
			}
			if !slices.Equal(windows, tc.windows) {
				t.Errorf("PlanSegments changed its windows argument to %v, was %v", windows, tc.windows)
			}
		})
	}
	if !slices.Equal(listed, orig) {
		t.Errorf("PlanSegments changed its listed argument to %v, was %v", listed, orig)
	}
}

func TestPlanSegmentsAfter(t *testing.T) {
	listed := []store.Bucket{20240309, 20240301, 20240302, 20240303, 20240305, 20240306, 20240308}
	min := store.MinMessageID
	from := func(b store.Bucket, from time.Time, before store.MessageID) store.Segment {
		return store.Segment{Bucket: b, From: min(from), Before: before}
	}
	after := func(b store.Bucket, after, before store.MessageID) store.Segment {
		return store.Segment{Bucket: b, After: after, Before: before}
	}
	a := store.Window{From: march(2, 6), To: march(5, 12)}
	early := store.Window{From: march(1, 10), To: march(2, 10)}
	open := store.Window{From: march(8, 9)}
	cursor3 := store.MessageIDAt(march(3, 15))
	for _, tc := range []struct {
		name    string
		windows []store.Window
		after   store.MessageID
		want    []store.Segment
	}{
		{"no windows", nil, store.MessageID{}, nil},
		{"windows and buckets oldest first, whatever their order", []store.Window{open, a, early}, store.MessageID{}, []store.Segment{
			from(20240301, early.From, min(early.To)), from(20240302, early.From, min(early.To)),
			from(20240302, a.From, min(a.To)), from(20240303, a.From, min(a.To)), from(20240305, a.From, min(a.To)),
			from(20240308, open.From, store.MessageID{}), from(20240309, open.From, store.MessageID{}),
		}},
		{"cursor inside a window: it bounds the window's reads from its day on", []store.Window{early, a}, cursor3, []store.Segment{
			after(20240303, cursor3, min(a.To)), after(20240305, cursor3, min(a.To)),
		}},
		{"cursor between windows: the earlier one skipped", []store.Window{early, open}, store.MessageIDAt(march(5, 0)), []store.Segment{
			from(20240308, open.From, store.MessageID{}), from(20240309, open.From, store.MessageID{}),
		}},
		{"cursor after every window's end", []store.Window{early, a}, store.MessageIDAt(march(9, 1)), nil},
		{"cursor at a window's very end", []store.Window{a}, min(a.To), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := store.PlanSegmentsAfter(listed, tc.windows, tc.after)
			if !slices.Equal(got, tc.want) {
				t.Errorf("PlanSegmentsAfter(windows %v, after %v) =\n  %v\nwant\n  %v", tc.windows, tc.after.Time(), got, tc.want)
			}
		})
	}
}

// TestPlanSegmentsOnlyWindows checks, for many random windows and cursors,
// that every planned segment lies in a listed bucket that its
// window overlaps, and is bounded by the window and the cursor.
func TestPlanSegmentsOnlyWindows(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	now := march(20, 0).Add(30 * time.Second)
	for range 500 {
		listed := randomBuckets(r)
		windows := randomWindows(r, now)
		before := randomCursor(r, nil)
		plan := store.PlanSegments(listed, windows, before)
		for _, s := range plan {
			what := fmt.Sprintf("PlanSegments(%v, %v, %v) segment %s", listed, windows, before.Time(), fmtPlan([]store.Segment{s}))
			if !slices.Contains(listed, s.Bucket) {
				t.Fatalf("%s: bucket not listed", what)
			}
			i := slices.IndexFunc(windows, func(w store.Window) bool { return store.MinMessageID(w.From) == s.From })
			if i < 0 {
				t.Fatalf("%s: From is no window's start", what)
			}
			w := windows[i]
			if s.Bucket < store.BucketOf(w.From) || !w.To.IsZero() && s.Bucket > store.BucketOf(w.To) {
				t.Fatalf("%s: bucket outside its window %v", what, w)
			}
			if !w.To.IsZero() && (s.Before.IsZero() || s.Before.Compare(store.MinMessageID(w.To)) > 0) {
				t.Fatalf("%s: Before past the end of its window %v", what, w)
			}
			if !before.IsZero() && (s.Before.IsZero() || s.Before.Compare(before) > 0) {
				t.Fatalf("%s: Before past the cursor", what)
			}
		}
	}
}

// randomBuckets lists some days of March 2024.
func randomBuckets(r *rand.Rand) []store.Bucket {
	var listed []store.Bucket
	for d := 1; d <= 20; d++ {
		if r.IntN(2) == 0 {
			listed = append(listed, store.BucketOf(march(d, 0)))
		}
	}
	return listed
}

// randomWindows returns up to four disjoint windows in March 2024, oldest
// first, the last possibly open; their bounds fall on whole minutes and
// sometimes on midnight.
func randomWindows(r *rand.Rand, now time.Time) []store.Window {
	n := r.IntN(5)
	bounds := make([]time.Time, 2*n)
	for i := range bounds {
		t := march(1, 0).Add(time.Duration(r.Int64N(int64(now.Sub(march(1, 0))/time.Minute))) * time.Minute)
		if r.IntN(4) == 0 {
			t = store.BucketOf(t).Start()
		}
		bounds[i] = t
	}
	slices.SortFunc(bounds, time.Time.Compare)
	bounds = slices.CompactFunc(bounds, time.Time.Equal)
	var windows []store.Window
	for i := 0; i+1 < len(bounds); i += 2 {
		windows = append(windows, store.Window{From: bounds[i], To: bounds[i+1]})
	}
	if len(windows) > 0 && r.IntN(2) == 0 {
		windows[len(windows)-1].To = time.Time{}
	}
	return windows
}

// randomCursor returns the zero id, a message's id or a random id in March.
func randomCursor(r *rand.Rand, msgs []store.Message) store.MessageID {
	switch r.IntN(3) {
	case 0:
		return store.MessageID{}
	case 1:
		if len(msgs) > 0 {
			return msgs[r.IntN(len(msgs))].ID
		}
	}
	return store.MessageIDAt(march(1, 0).Add(time.Duration(r.Int64N(int64(20 * 24 * time.Hour)))))
}

// segmentStore serves messages by segment, as a backend reads one bucket
// partition between two bounds, and records each read.
type segmentStore struct {
	msgs  []store.Message // newest first
	reads int
}

func (f *segmentStore) read(_ context.Context, s store.Segment, limit int) ([]store.Message, error) {
	f.reads++
	var out []store.Message
	for _, m := range f.msgs {
		if len(out) == limit {
			break
		}
		if store.BucketOf(m.PostedAt()) == s.Bucket && m.ID.Compare(s.From) >= 0 &&
			(s.Before.IsZero() || m.ID.Compare(s.Before) < 0) {
			out = append(out, m)
		}
	}
	return out, nil
}

// TestPlanAndScanSegments reads random histories through random windows,
// page by page, with ScanSegments along PlanSegments' plans: the pages
// concatenate to exactly the messages in the windows, newest first.
func TestPlanAndScanSegments(t *testing.T) {
	r := rand.New(rand.NewPCG(0, 4))
	now := march(20, 0).Add(30 * time.Second)
	for round := range 300 {
		// Messages on some days of March 1 to 20, none after now.
		var msgs []store.Message
		days := map[store.Bucket]bool{}
		for d := 1; d <= 20; d++ {
			if r.IntN(3) == 0 {
				continue
			}
			for range r.IntN(6) {
				at := march(d, 0).Add(time.Duration(r.Int64N(int64(24 * time.Hour))))
				if r.IntN(8) == 0 {
					at = march(d, 0) // the first tick of the day
				}
				if at.After(now) {
					continue
				}
				msgs = append(msgs, store.Message{Room: "g", ID: store.MessageIDAt(at), Content: at.Format(time.RFC3339Nano)})
				days[store.BucketOf(at)] = true
			}
		}
		slices.SortFunc(msgs, func(a, b store.Message) int { return b.ID.Compare(a.ID) })
		var listed []store.Bucket
		for b := range days {
			listed = append(listed, b)
		}
		windows := randomWindows(r, now)
		// Messages on the windows' bounds.
		for _, w := range windows {
			bounds := []time.Time{w.From}
			if !w.To.IsZero() {
				bounds = append(bounds, w.To, w.To.Add(-100*time.Nanosecond))
			}
			for _, at := range bounds {
				if at.Before(now) {
					msgs = append(msgs, store.Message{Room: "g", ID: store.MessageIDAt(at), Content: "bound " + at.Format(time.RFC3339Nano)})
					if b := store.BucketOf(at); !slices.Contains(listed, b) {
						listed = append(listed, b)
					}
				}
			}
		}
		slices.SortFunc(msgs, func(a, b store.Message) int { return b.ID.Compare(a.ID) })
		f := &segmentStore{msgs: msgs}
		cursor := randomCursor(r, msgs)
		limit := 1 + r.IntN(5)

		var want []store.Message
		for _, m := range msgs {
			if !cursor.IsZero() && m.ID.Compare(cursor) >= 0 {
				continue
			}
			for _, w := range windows {
				if at := m.PostedAt(); !at.Before(w.From) && (w.To.IsZero() || at.Before(w.To)) {
					want = append(want, m)
					break
				}
			}
		}

		var got []store.Message
		before := cursor
		for page := 0; ; page++ {
			if page > len(msgs)+1 {
				t.Fatalf("round %d: paging never ends", round)
			}
			plan := store.PlanSegments(listed, windows, before)
			msgs, err := store.ScanSegments(t.Context(), plan, limit, f.read)
			if err != nil {
				t.Fatalf("round %d: ScanSegments = %v", round, err)
			}
			if len(msgs) > limit {
				t.Fatalf("round %d: page %d has %d messages, limit %d", round, page, len(msgs), limit)
			}
			if len(msgs) == 0 {
				break
			}
			got = append(got, msgs...)
			before = msgs[len(msgs)-1].ID
		}
		if !slices.Equal(contentsOf(got), contentsOf(want)) {
			t.Fatalf("round %d: windows %v, cursor %v, limit %d: pages read\n  %q\nwant\n  %q",
				round, windows, cursor.Time(), limit, contentsOf(got), contentsOf(want))
		}
	}
}

func contentsOf(msgs []store.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Content
	}
	return out
}

// TestScanSegments checks that segments are read in order, each asked for
// what the page still lacks, and none after the page is full.
func TestScanSegments(t *testing.T) {
	from := store.MinMessageID(march(1, 0))
	plan := []store.Segment{
		{Bucket: 20240305, From: from}, {Bucket: 20240304, From: from}, {Bucket: 20240303, From: from},
		{Bucket: 20240303}, // the same bucket again, for an older window
	}
	sizes := map[int]int{0: 2, 1: 0, 2: 3, 3: 1} // messages per segment
	errFail := errors.New("read failed")
	for _, tc := range []struct {
		name      string
		limit     int
		fail      int // index of a segment whose read fails, -1 for none
		wantCalls []string
		want      int
		wantErr   error
	}{
		{"filled across an empty segment", 4, -1, []string{"0:4", "1:2", "2:2"}, 4, nil},
		{"filled by the first", 2, -1, []string{"0:2"}, 2, nil},
		{"all, with a bucket read twice", 10, -1, []string{"0:10", "1:8", "2:8", "3:5"}, 6, nil},
		{"zero limit", 0, -1, nil, 0, nil},
		{"read error", 10, 2, []string{"0:10", "1:8", "2:8"}, 0, errFail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls []string
			read := func(_ context.Context, s store.Segment, limit int) ([]store.Message, error) {
				i := slices.Index(plan, s)
				calls = append(calls, fmt.Sprintf("%d:%d", i, limit))
				if i == tc.fail {
					return nil, errFail
				}
				out := make([]store.Message, min(limit, sizes[i]))
				for j := range out {
					out[j].Content = fmt.Sprintf("%d/%d", i, j)
				}
				return out, nil
			}
			got, err := store.ScanSegments(t.Context(), plan, tc.limit, read)
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("ScanSegments error = %v, want %v", err, tc.wantErr)
			}
			if len(got) != tc.want {
				t.Errorf("ScanSegments = %q, want %d messages", contentsOf(got), tc.want)
			}
			if !slices.Equal(calls, tc.wantCalls) {
				t.Errorf("ScanSegments read (segment:limit) %q, want %q", calls, tc.wantCalls)
			}
		})
	}
}

// A window that ends at midnight never plans the day that starts then: that
// bucket cannot hold a message of the window.
func TestPlanSegmentsWindowEndingAtMidnight(t *testing.T) {
	day := func(d int) time.Time { return time.Date(2024, 3, d, 0, 0, 0, 0, time.UTC) }
	listed := []store.Bucket{20240305, 20240304, 20240303}
	plan := store.PlanSegments(listed, []store.Window{{From: day(3).Add(time.Hour), To: day(5)}}, store.MessageID{})
	for _, s := range plan {
		if s.Bucket == 20240305 {
			t.Fatalf("planned bucket 20240305 for a window ending at its first instant: %+v", plan)
		}
	}
	if len(plan) != 2 {
		t.Fatalf("got %d segments, want 2 (March 4 and 3): %+v", len(plan), plan)
	}
}
