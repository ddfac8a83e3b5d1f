package main

import (
	"math/rand/v2"
	"sort"
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

func TestHistQuantilesWithinPrecision(t *testing.T) {
	var h hist
	samples := make([]time.Duration, 100000)
	for i := range samples {
		samples[i] = time.Duration(rand.ExpFloat64() * float64(5*time.Millisecond))
		h.Record(samples[i])
	}
	sort.Slice(samples, func(i, j int) bool { return samples[i] < samples[j] })
	s := h.Snapshot()
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
		want := samples[int(q*float64(len(samples)))-1]
		got := s.Quantile(q)
		if diff := float64(got-want) / float64(want); diff > 0.02 || diff < -0.02 {
			t.Errorf("q%.3f = %v, want %v ±2%%", q, got, want)
		}
	}
	later := h.Snapshot()
	if d := later.Since(s); d.n != 0 {
		t.Errorf("Since of an unchanged histogram has %d samples", d.n)
	}
}

func TestEventParsing(t *testing.T) {
	msg := []byte(`{"payload":{"data":{"roomEvents":{"kind":"MESSAGE_POSTED","room":"r","cursor":"0f1e2d3c-4b5a-1968-8776-655443322110","message":{"id":"x","content":"chatload 1700000000123456789 the quick"}}}},"id":"1","type":"next"}`)
	m := &metrics{errs: newErrorCounts()}
	s := &subscriber{m: m}
	if err := s.event(msg); err != nil {
		t.Fatal(err)
	}
	if m.deliveries.Load() != 1 || !s.hasCursor || string(s.cursor[:]) != "0f1e2d3c-4b5a-1968-8776-655443322110" {
		t.Fatalf("deliveries %d, cursor %q", m.deliveries.Load(), s.cursor)
	}
	if n, ok := parseLeadingInt(msg[bytesIndex(msg, "chatload ")+len("chatload "):]); !ok || n != 1700000000123456789 {
		t.Fatalf("parseLeadingInt = %d, %v", n, ok)
	}
}

func bytesIndex(b []byte, s string) int {
	for i := 0; i+len(s) <= len(b); i++ {
		if string(b[i:i+len(s)]) == s {
			return i
		}
	}
	return -1
}
