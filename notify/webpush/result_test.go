package webpush

import (
	"net/http"
	"testing"
	"time"
)

func TestClassify(t *testing.T) {
	want := map[int]Outcome{
		201: Delivered, 200: Delivered, 202: Delivered,
		404: Gone, 410: Gone,
		429: RetryLater, 500: RetryLater, 502: RetryLater, 503: RetryLater,
		301: Refused, 400: Refused, 401: Refused, 403: Refused, 413: Refused,
	}
	for status, outcome := range want {
		if got := classify(status); got != outcome {
			t.Errorf("classify(%d) = %v, want %v", status, got, outcome)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	cases := map[string]time.Duration{
		"":          0,
		"0":         0,
		"120":       2 * time.Minute,
		" 5 ":       5 * time.Second,
		"-3":        0,
		"soon":      0,
		"999999999": maxRetryAfter,
		now.Add(90 * time.Second).Format(http.TimeFormat): 90 * time.Second,
		now.Add(-time.Hour).Format(http.TimeFormat):       0,
	}
	for header, want := range cases {
		if got := parseRetryAfter(header, now); got != want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", header, got, want)
		}
	}
}
