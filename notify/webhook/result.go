package webhook

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Outcome is what became of one delivery attempt.
type Outcome int

// The outcomes of an attempt; see the package documentation for the policy.
const (
	// Delivered means the receiver answered 2xx.
	Delivered Outcome = iota + 1
	// Retry means the attempt failed and may be made again later.
	Retry
	// Failed means the message must not be sent to this target again:
	// the receiver answered 410 Gone, or the target is not allowed.
	Failed
)

// String names the outcome.
func (o Outcome) String() string {
	switch o {
	case Delivered:
		return "delivered"
	case Retry:
		return "retry"
	case Failed:
		return "failed"
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

// ErrStatus reports a response whose status is not 2xx.
var ErrStatus = errors.New("webhook: unexpected HTTP status")

// Result describes one delivery attempt.
type Result struct {
	// Outcome classifies the attempt.
	Outcome Outcome
	// StatusCode is the response's status, or 0 if none was received.
	StatusCode int
	// RetryAfter is the delay a 429 or 503 response asked for with
	// Retry-After, or 0.
	RetryAfter time.Duration
	// Err explains an attempt that was not delivered.
	Err error
	// Elapsed is how long the attempt took.
	Elapsed time.Duration
}

// classifyStatus turns a response status and its headers into a Result.
func classifyStatus(code int, h http.Header, now time.Time) Result {
	r := Result{StatusCode: code}
	switch {
	case code >= 200 && code < 300:
		r.Outcome = Delivered
		return r
	case code == http.StatusGone:
		r.Outcome = Failed
	default:
		r.Outcome = Retry
	}
	if code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable {
		r.RetryAfter = parseRetryAfter(h.Get("Retry-After"), now)
	}
	r.Err = fmt.Errorf("%w: %d %s", ErrStatus, code, http.StatusText(code))
	return r
}

// parseRetryAfter reads a Retry-After value, in seconds or as an HTTP date,
// returning 0 if it is absent, malformed or in the past.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		return time.Duration(min(secs, int64(MaxRetryAfter/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
