// Package ratelimit limits how often a user or a client address may write:
// post, change rooms, send direct messages, sign up, log in. Limits are
// shared by every instance through Redis when the server has one
// (redis_rate's GCRA), and kept in process otherwise (x/time/rate token
// buckets); both allow Rate actions per Period on average, in bursts of up to
// Burst.
package ratelimit

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Limit allows Rate actions per Period on average, in bursts of up to Burst.
// A zero Rate turns the limit off.
type Limit struct {
	Rate   int
	Period time.Duration
	Burst  int
}

// Off reports whether the limit lets everything through.
func (l Limit) Off() bool { return l.Rate <= 0 }

// refill is how long an emptied bucket takes to be full again: a key idle
// that long is as good as new, so its state can be forgotten.
func (l Limit) refill() time.Duration {
	return time.Duration(float64(l.Period) * float64(l.Burst) / float64(l.Rate))
}

// String writes the limit as ParseLimit reads it: "10/s:20".
func (l Limit) String() string {
	if l.Off() {
		return "0"
	}
	s := fmt.Sprintf("%d/%s", l.Rate, periodName(l.Period))
	if l.Burst != l.Rate {
		s += fmt.Sprintf(":%d", l.Burst)
	}
	return s
}

// Set parses s into l (ParseLimit), so that a *Limit is a flag.Value.
func (l *Limit) Set(s string) error {
	parsed, err := ParseLimit(s)
	if err != nil {
		return err
	}
	*l = parsed
	return nil
}

// describe says the limit in words, for error messages.
func (l Limit) describe() string {
	per := l.Period.String()
	switch l.Period {
	case time.Second:
		per = "second"
	case time.Minute:
		per = "minute"
	case time.Hour:
		per = "hour"
	}
	s := fmt.Sprintf("%d per %s", l.Rate, per)
	if l.Burst != l.Rate {
		s += fmt.Sprintf(" (bursts of %d)", l.Burst)
	}
	return s
}

func periodName(d time.Duration) string {
	switch d {
	case time.Second:
		return "s"
	case time.Minute:
		return "m"
	case time.Hour:
		return "h"
	}
	return d.String()
}

// ParseLimit reads "RATE/PERIOD[:BURST]": RATE actions per PERIOD (s, m, h
// or a duration such as 30s), in bursts of up to BURST (RATE when left
// out). "0" or "off" turns the limit off.
func ParseLimit(s string) (Limit, error) {
	s = strings.TrimSpace(s)
	if s == "0" || s == "off" {
		return Limit{}, nil
	}
	rate, rest, ok := strings.Cut(s, "/")
	if !ok {
		return Limit{}, fmt.Errorf("rate limit %q: want RATE/PERIOD[:BURST], such as 10/s:20, or 0 for none", s)
	}
	period, burst, hasBurst := strings.Cut(rest, ":")
	var l Limit
	var err error
	if l.Rate, err = strconv.Atoi(rate); err != nil || l.Rate <= 0 {
		return Limit{}, fmt.Errorf("rate limit %q: the rate must be a positive integer", s)
	}
	switch period {
	case "s", "m", "h":
		period = "1" + period
	}
	if l.Period, err = time.ParseDuration(period); err != nil || l.Period < time.Millisecond {
		return Limit{}, fmt.Errorf("rate limit %q: the period must be s, m, h or a duration of 1ms or more", s)
	}
	l.Burst = l.Rate
	if hasBurst {
		if l.Burst, err = strconv.Atoi(burst); err != nil || l.Burst <= 0 {
			return Limit{}, fmt.Errorf("rate limit %q: the burst must be a positive integer", s)
		}
	}
	return l, nil
}

// Exceeded is the error of an action refused because its limit is used up.
type Exceeded struct {
	Action     Action
	Limit      Limit
	RetryAfter time.Duration // until the next action is allowed
}

func (e *Exceeded) Error() string {
	return fmt.Sprintf("too many %s: at most %s; retry in %d s", e.Action.describe(), e.Limit.describe(), e.RetryAfterSeconds())
}

// RetryAfterSeconds is RetryAfter in whole seconds, rounded up and at least
// 1, as the Retry-After header and extensions.retryAfter carry it.
func (e *Exceeded) RetryAfterSeconds() int {
	return max(1, int(math.Ceil(e.RetryAfter.Seconds())))
}
