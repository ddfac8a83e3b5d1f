package main

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestHistIndexIsMonotonicAndBounded(t *testing.T) {
	prev := -1
	for _, v := range []uint64{0, 1, 127, 128, 129, 255, 256, 1000, 1 << 20, 1<<40 + 12345, 1<<63 - 1, 1<<64 - 1} {
		i := histIndex(v)
		if i < prev || i >= histBuckets {
			t.Fatalf("histIndex(%d) = %d after %d (buckets %d)", v, i, prev, histBuckets)
		}
		lo, hi := histBounds(i)
		if v < lo || v > hi {
			t.Fatalf("%d is not within bucket %d = [%d, %d]", v, i, lo, hi)
		}
		prev = i
	}
}

// TestHistBucketsTileTheRange walks every bucket: they follow one another
// without gap or overlap from 0 to the largest uint64, each value's index
// is its bucket's, values below 128 ns have a bucket each, and no bucket is
// wider than 1/64 of its lowest value.
func TestHistBucketsTileTheRange(t *testing.T) {
	var next uint64
	for i := range histBuckets {
		lo, hi := histBounds(i)
		if lo != next || hi < lo {
			t.Fatalf("bucket %d = [%d, %d], want it to start at %d", i, lo, hi, next)
		}
		if histIndex(lo) != i || histIndex(hi) != i || histIndex(lo+(hi-lo)/2) != i {
			t.Fatalf("bucket %d = [%d, %d]: histIndex gives %d, %d", i, lo, hi, histIndex(lo), histIndex(hi))
		}
		if lo < 2*histSub && hi != lo {
			t.Fatalf("bucket %d = [%d, %d]: values below %d must be exact", i, lo, hi, 2*histSub)
		}
		if lo >= 2*histSub && float64(hi-lo+1) > float64(lo)/histSub {
			t.Fatalf("bucket %d = [%d, %d] is wider than 1/%d of %d", i, lo, hi, histSub, lo)
		}
		next = hi + 1 // wraps to 0 after the last bucket
	}
	if _, hi := histBounds(histBuckets - 1); hi != math.MaxUint64 {
		t.Fatalf("the last bucket ends at %d, want %d", hi, uint64(math.MaxUint64))
	}
}

// histOf records samples into a fresh histogram and returns its snapshot.
func histOf(samples []time.Duration) *histSnap {
	var h hist
	for _, d := range samples {
		h.Record(d)
	}
	return h.Snapshot()
}

// checkQuantiles compares s's quantiles with the nearest-rank quantiles of
// the sorted samples: the value of rank ceil(q*n). The histogram returns
// the middle of that value's bucket, or the maximum if it is lower, so the
// answer must be in the same bucket and within 1/128 of the true value
// (exact below 128 ns).
func checkQuantiles(t *testing.T, name string, s *histSnap, samples []time.Duration) {
	t.Helper()
	sorted := slices.Clone(samples)
	slices.Sort(sorted)
	for _, q := range []float64{0, 1e-6, 0.001, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 0.9999, 1} {
		rank := max(int(math.Ceil(q*float64(len(sorted)))), 1)
		want := sorted[rank-1]
		got := s.Quantile(q)
		if histIndex(uint64(got)) != histIndex(uint64(want)) {
			t.Errorf("%s: q%g = %v, want %v's bucket", name, q, got, want)
		}
		if diff := math.Abs(float64(got - want)); diff > float64(want)/128 {
			t.Errorf("%s: q%g = %v, want %v ± 1/128", name, q, got, want)
		}
	}
}

// TestHistQuantilesAgainstSort checks every quantile the report uses, and
// the extremes, against a sort of the same samples, for distributions that
// stay within the exact range, spread over many powers of two, pile up on
// one value or have a far tail; and the count, mean and max exactly.
func TestHistQuantilesAgainstSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tail := func() time.Duration { // 1 % of the samples 2000 times slower
		if rng.IntN(100) == 0 {
			return 2*time.Second + time.Duration(rng.IntN(1000))
		}
		return time.Millisecond + time.Duration(rng.IntN(1000))
	}
	for _, dist := range []struct {
		name string
		next func() time.Duration
	}{
		{"exact range", func() time.Duration { return time.Duration(rng.IntN(200)) }},
		{"exponential", func() time.Duration { return time.Duration(rng.ExpFloat64() * float64(5*time.Millisecond)) }},
		{"log-uniform", func() time.Duration { return time.Duration(math.Pow(10, 3+7*rng.Float64())) }}, // 1 µs to 10 s
		{"one value", func() time.Duration { return 3300 * time.Microsecond }},
		{"far tail", tail},
	} {
		name, next := dist.name, dist.next
		for _, n := range []int{1, 2, 7, 1000, 100000} {
			samples := make([]time.Duration, n)
			var sum uint64
			for i := range samples {
				samples[i] = next()
				sum += uint64(samples[i])
			}
			s := histOf(samples)
			checkQuantiles(t, name, s, samples)
			if s.n != uint64(n) || s.Mean() != time.Duration(sum/uint64(n)) || time.Duration(s.max) != slices.Max(samples) {
				t.Errorf("%s, %d samples: count %d, mean %v, max %v; want %d, %v, %v",
					name, n, s.n, s.Mean(), time.Duration(s.max), n, time.Duration(sum/uint64(n)), slices.Max(samples))
			}
		}
	}
}

func TestHistEmpty(t *testing.T) {
	var h hist
	s := h.Snapshot()
	for _, q := range []float64{0, 0.5, 1} {
		if got := s.Quantile(q); got != 0 {
			t.Errorf("empty: q%g = %v, want 0", q, got)
		}
	}
	if s.Mean() != 0 || s.Summary() != (pct{}) {
		t.Errorf("empty: mean %v, summary %+v; want zeros", s.Mean(), s.Summary())
	}
	if d := s.Since(h.Snapshot()); d.n != 0 || d.max != 0 || d.Summary() != (pct{}) {
		t.Errorf("empty window: %d samples, max %d, summary %+v", d.n, d.max, d.Summary())
	}
}

// TestHistOneSample: every quantile of one sample is that sample when it
// is below its bucket's middle (the maximum clamps it), and within 1/128
// of it otherwise; the mean and max are exact.
func TestHistOneSample(t *testing.T) {
	for _, v := range []time.Duration{0, 1, 127, 128, 1234567, 1238000, time.Hour} {
		s := histOf([]time.Duration{v})
		lo, hi := histBounds(histIndex(uint64(v)))
		mid := time.Duration(lo + (hi-lo)/2)
		for _, q := range []float64{0, 0.5, 0.999, 1} {
			got := s.Quantile(q)
			if got != min(v, mid) {
				t.Errorf("one sample %v: q%g = %v, want %v", v, q, got, min(v, mid))
			}
		}
		if s.Mean() != v || time.Duration(s.max) != v || s.n != 1 {
			t.Errorf("one sample %v: mean %v, max %v, count %d", v, s.Mean(), time.Duration(s.max), s.n)
		}
		if p := s.Summary(); p.Count != 1 || p.MaxMs != ms(v) || p.MeanMs != ms(v) {
			t.Errorf("one sample %v: summary %+v", v, p)
		}
	}
}

// TestHistExtremes: a negative duration (a clock step) counts as 0; the
// largest duration lands in a bucket and comes back within precision; two
// of them still sum without overflow (2^64 ns is 584 years of latency).
func TestHistExtremes(t *testing.T) {
	s := histOf([]time.Duration{-time.Second, -1})
	if s.n != 2 || s.counts[0] != 2 || s.max != 0 || s.sum != 0 || s.Quantile(1) != 0 {
		t.Errorf("negative durations: count %d (bucket 0: %d), max %d, sum %d", s.n, s.counts[0], s.max, s.sum)
	}
	big := time.Duration(math.MaxInt64)
	s = histOf([]time.Duration{big, big})
	checkQuantiles(t, "max duration", s, []time.Duration{big, big})
	if s.Mean() != big || time.Duration(s.max) != big {
		t.Errorf("max duration: mean %v, max %v, want %v", s.Mean(), time.Duration(s.max), big)
	}
	if p := s.Summary(); p.MaxMs != 9223372036854.775 {
		t.Errorf("max duration: MaxMs %v", p.MaxMs)
	}
}

// TestHistSince: the window between two snapshots holds exactly the
// samples recorded in between, however many came before; windows add up;
// the window's maximum is its own (to its bucket's precision), not the
// larger one of the samples before it.
func TestHistSince(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var h hist
	before := make([]time.Duration, 5000)
	for i := range before {
		before[i] = 10*time.Second + time.Duration(rng.IntN(int(time.Second))) // slow
		h.Record(before[i])
	}
	s0 := h.Snapshot()
	window := make([]time.Duration, 20000)
	for i := range window {
		window[i] = time.Duration(rng.ExpFloat64() * float64(time.Millisecond))
		h.Record(window[i])
	}
	s1 := h.Snapshot()
	after := []time.Duration{time.Microsecond, time.Minute}
	for _, d := range after {
		h.Record(d)
	}
	s2 := h.Snapshot()

	d := s1.Since(s0)
	alone := histOf(window)
	if d.counts != alone.counts || d.n != alone.n || d.sum != alone.sum || d.Mean() != alone.Mean() {
		t.Fatalf("window: %d samples, sum %d; want the %d samples, sum %d, of a histogram of them alone", d.n, d.sum, alone.n, alone.sum)
	}
	checkQuantiles(t, "window", d, window)
	top := slices.Max(window)
	_, hi := histBounds(histIndex(uint64(top)))
	if time.Duration(d.max) < top || d.max > hi {
		t.Errorf("window max = %v, want %v to its bucket's precision (at most %v)", time.Duration(d.max), top, time.Duration(hi))
	}

	// Windows add up: [s0, s2] = [s0, s1] + [s1, s2].
	whole, first, second := s2.Since(s0), s1.Since(s0), s2.Since(s1)
	for i := range whole.counts {
		if whole.counts[i] != first.counts[i]+second.counts[i] {
			t.Fatalf("bucket %d: %d in the whole window, %d + %d in its halves", i, whole.counts[i], first.counts[i], second.counts[i])
		}
	}
	if whole.n != first.n+second.n || whole.sum != first.sum+second.sum || whole.max != max(first.max, second.max) {
		t.Errorf("whole window n %d sum %d max %d; halves n %d+%d sum %d+%d max %d, %d",
			whole.n, whole.sum, whole.max, first.n, second.n, first.sum, second.sum, first.max, second.max)
	}
	checkQuantiles(t, "second window", second, after)
	if s2.Since(s2).n != 0 {
		t.Error("a window of no time has samples")
	}
}

// TestHistConcurrentRecording: goroutines recording into one histogram at
// once (the subscribers of a run) leave exactly what recording all their
// samples in turn leaves. Run with -race.
func TestHistConcurrentRecording(t *testing.T) {
	const workers, each = 8, 5000
	samples := make([][]time.Duration, workers)
	var all []time.Duration
	for w := range samples {
		rng := rand.New(rand.NewPCG(uint64(w), 99))
		for range each {
			samples[w] = append(samples[w], time.Duration(rng.ExpFloat64()*float64((w+1)*int(time.Millisecond))))
		}
		all = append(all, samples[w]...)
	}
	var h hist
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for _, d := range samples[w] {
				h.Record(d)
			}
		})
	}
	wg.Wait()
	got, want := h.Snapshot(), histOf(all)
	if got.counts != want.counts || got.n != want.n || got.sum != want.sum || got.max != want.max {
		t.Fatalf("concurrent: n %d sum %d max %d; in turn: n %d sum %d max %d", got.n, got.sum, got.max, want.n, want.sum, want.max)
	}
	checkQuantiles(t, "concurrent", got, all)
}

// TestHistSummary: the report's summary of 1 ms, 2 ms ... 100 ms: the mean
// exact, the percentiles those of a sort within 1/128, in milliseconds.
func TestHistSummary(t *testing.T) {
	var samples []time.Duration
	for k := 1; k <= 100; k++ {
		samples = append(samples, time.Duration(k)*time.Millisecond)
	}
	p := histOf(samples).Summary()
	near := func(got, want float64) bool { return math.Abs(got-want) <= want/128 }
	if p.Count != 100 || p.MeanMs != 50.5 || p.MaxMs != 100 ||
		!near(p.P50Ms, 50) || !near(p.P90Ms, 90) || !near(p.P99Ms, 99) || !near(p.P999Ms, 100) {
		t.Errorf("summary of 1..100 ms = %+v; want count 100, mean 50.5, p50 50, p90 90, p99 99, p99.9 100, max 100", p)
	}
}

// TestMs: milliseconds, rounded to the microsecond, half away from zero.
func TestMs(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want float64
	}{
		{0, 0}, {499, 0}, {500, 0.001}, {time.Microsecond, 0.001}, {1234567, 1.235},
		{1500 * time.Microsecond, 1.5}, {time.Second, 1000}, {-1500 * time.Microsecond, -1.5},
	} {
		if got := ms(tc.d); got != tc.want {
			t.Errorf("ms(%d ns) = %v, want %v", int64(tc.d), got, tc.want)
		}
	}
}
