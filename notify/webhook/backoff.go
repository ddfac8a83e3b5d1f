package webhook

import (
	"math/rand/v2"
	"time"
)

// schedule lists the base delay before each retry: schedule[0] follows the
// first failed attempt.
var schedule = []time.Duration{
	5 * time.Second,
	5 * time.Minute,
	30 * time.Minute,
	2 * time.Hour,
	5 * time.Hour,
	10 * time.Hour,
	10 * time.Hour,
}

// MaxAttempts is the number of attempts, the first included, after which a
// message that was never delivered is dead: one more than the retries of
// the schedule.
const MaxAttempts = 8

// MaxRetryAfter caps the delay a receiver may ask for with Retry-After.
const MaxRetryAfter = 10 * time.Hour

// jitter is the largest fraction by which Backoff moves a delay either way,
// so that messages failed together are not retried together.
const jitter = 0.2

// Backoff returns the delay before the retry that follows attempt number
// attempt (1 for the first attempt): 5 s, 5 min, 30 min, 2 h, 5 h, 10 h,
// 10 h, each moved by a random ±20%. Attempts below 1 count as 1, and those
// past the schedule get its last delay (Next stops them first).
func Backoff(attempt int) time.Duration {
	return jittered(baseDelay(attempt), rand.Float64())
}

// baseDelay returns the delay of the schedule, without jitter.
func baseDelay(attempt int) time.Duration {
	i := min(max(attempt, 1), len(schedule)) - 1
	return schedule[i]
}

// jittered scales d by a factor between 1-jitter and 1+jitter, given r in
// [0, 1).
func jittered(d time.Duration, r float64) time.Duration {
	return time.Duration(float64(d) * (1 - jitter + 2*jitter*r))
}

// Next tells, after attempt number attempt ended with r, whether to try
// again and after how long: never after Delivered or Failed, nor once
// MaxAttempts attempts were made; otherwise after Backoff(attempt), or
// after the receiver's Retry-After if that is longer (up to MaxRetryAfter).
func Next(attempt int, r Result) (delay time.Duration, retry bool) {
	if r.Outcome != Retry || attempt >= MaxAttempts {
		return 0, false
	}
	return max(Backoff(attempt), min(r.RetryAfter, MaxRetryAfter)), true
}
