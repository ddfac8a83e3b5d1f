package webpush

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Outcome is what the caller should do after a Send.
type Outcome int

const (
	// Refused: the push was not accepted and sending it again will not
	// help; a bug, a bad subscription, an oversized payload or an endpoint
	// the address policy refuses. Zero, so that a failed Send is Refused
	// unless it says otherwise.
	Refused Outcome = iota

	// Delivered: the push service accepted the message (201 Created).
	Delivered

	// Gone: the subscription has expired or been unsubscribed (404 or
	// 410) and must be dropped.
	Gone

	// RetryLater: the push service is busy or unreachable (429, 5xx, a
	// timeout or a network error); send again after Result.RetryAfter if
	// it is set, otherwise after a backoff of the caller's choosing.
	RetryLater
)

// String returns the outcome's name.
func (o Outcome) String() string {
	switch o {
	case Delivered:
		return "delivered"
	case Gone:
		return "gone"
	case RetryLater:
		return "retry later"
	default:
		return "refused"
	}
}

// Result describes the answer to one push.
type Result struct {
	// Outcome classifies the answer.
	Outcome Outcome

	// StatusCode is the push service's HTTP status, or 0 if none came.
	StatusCode int

	// RetryAfter is the delay the push service asked for with a
	// Retry-After header, or 0 if it did not ask.
	RetryAfter time.Duration

	// Detail is the start of the push service's response body, for logs.
	Detail string
}

// maxRetryAfter caps the delay a push service may ask for.
const maxRetryAfter = 24 * time.Hour

// classify returns the outcome of a push service's status code.
func classify(status int) Outcome {
	switch {
	case status >= 200 && status < 300:
		return Delivered
	case status == http.StatusNotFound || status == http.StatusGone:
		return Gone
	case status == http.StatusTooManyRequests || status >= 500:
		return RetryLater
	default:
		return Refused
	}
}

// parseRetryAfter reads a Retry-After header, either delay-seconds or an
// HTTP date, relative to now. It returns 0 for an absent or unreadable
// header and caps the delay at maxRetryAfter.
func parseRetryAfter(header string, now time.Time) time.Duration {
	header = strings.TrimSpace(header)
	if header == "" {
		return 0
	}
	var d time.Duration
	if secs, err := strconv.ParseUint(header, 10, 32); err == nil {
		d = time.Duration(secs) * time.Second
	} else if at, err := http.ParseTime(header); err == nil {
		d = at.Sub(now)
	}
	return min(max(d, 0), maxRetryAfter)
}
