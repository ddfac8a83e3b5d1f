package main

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// hist is a log-linear histogram of durations in nanoseconds, in the spirit
// of HDR histograms: values below 128 ns are exact, larger ones fall in one
// of 64 buckets per power of two, so a reported percentile is within 1/64
// (1.6 %) of the true one. Its memory is fixed (about 30 KiB) however many
// samples it holds, and Record is a single atomic add, so any number of
// goroutines record into one histogram without a lock.
type hist struct {
	counts [histBuckets]atomic.Uint64
	sum    atomic.Uint64 // nanoseconds, for the mean
	max    atomic.Uint64
}

const (
	histSubBits = 6
	histSub     = 1 << histSubBits
	// The largest index is that of a 64-bit value: shift 57, mantissa 127.
	histBuckets = (64-histSubBits)*histSub + histSub
)

func histIndex(v uint64) int {
	if v < 2*histSub {
		return int(v)
	}
	shift := bits.Len64(v) - (histSubBits + 1)
	mantissa := v >> uint(shift) // in [64, 128)
	return (shift+1)*histSub + int(mantissa-histSub)
}

// histBounds is the range of values [lo, hi] that fall into bucket i.
func histBounds(i int) (lo, hi uint64) {
	if i < 2*histSub {
		return uint64(i), uint64(i)
	}
	shift := uint(i/histSub - 1)
	mantissa := uint64(i%histSub + histSub)
	return mantissa << shift, (mantissa+1)<<shift - 1
}

// Record adds one duration; negative durations (clock steps) count as 0.
func (h *hist) Record(d time.Duration) {
	v := uint64(max(d, 0))
	h.counts[histIndex(v)].Add(1)
	h.sum.Add(v)
	for {
		m := h.max.Load()
		if v <= m || h.max.CompareAndSwap(m, v) {
			return
		}
	}
}

// histSnap is a point-in-time copy of a histogram, to compute percentiles
// from, or to subtract from a later copy for the samples in between.
type histSnap struct {
	counts [histBuckets]uint64
	n, sum uint64
	max    uint64
}

func (h *hist) Snapshot() *histSnap {
	s := &histSnap{sum: h.sum.Load(), max: h.max.Load()}
	for i := range h.counts {
		c := h.counts[i].Load()
		s.counts[i] = c
		s.n += c
	}
	return s
}

// Since returns the samples recorded after prev was taken. Its max is the
// max of the buckets in between, to the bucket's precision.
func (s *histSnap) Since(prev *histSnap) *histSnap {
	d := &histSnap{sum: s.sum - prev.sum}
	for i := range s.counts {
		c := s.counts[i] - prev.counts[i]
		d.counts[i] = c
		d.n += c
		if c > 0 {
			_, hi := histBounds(i)
			d.max = hi
		}
	}
	d.max = min(d.max, s.max)
	return d
}

// Quantile returns the value at quantile q (0..1), the middle of its bucket.
func (s *histSnap) Quantile(q float64) time.Duration {
	if s.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(s.n)))
	rank = max(rank, 1)
	var seen uint64
	for i, c := range s.counts {
		seen += c
		if seen >= rank {
			lo, hi := histBounds(i)
			return time.Duration(min(lo+(hi-lo)/2, s.max))
		}
	}
	return time.Duration(s.max)
}

func (s *histSnap) Mean() time.Duration {
	if s.n == 0 {
		return 0
	}
	return time.Duration(s.sum / s.n)
}

// pct is the summary of a distribution as the report shows it.
type pct struct {
	Count  uint64  `json:"count"`
	MeanMs float64 `json:"mean_ms"`
	P50Ms  float64 `json:"p50_ms"`
	P90Ms  float64 `json:"p90_ms"`
	P99Ms  float64 `json:"p99_ms"`
	P999Ms float64 `json:"p999_ms"`
	MaxMs  float64 `json:"max_ms"`
}

func (s *histSnap) Summary() pct {
	return pct{
		Count:  s.n,
		MeanMs: ms(s.Mean()),
		P50Ms:  ms(s.Quantile(0.50)),
		P90Ms:  ms(s.Quantile(0.90)),
		P99Ms:  ms(s.Quantile(0.99)),
		P999Ms: ms(s.Quantile(0.999)),
		MaxMs:  ms(time.Duration(s.max)),
	}
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }
