package ratelimit

import (
	"strings"
	"testing"
	"time"
)

func TestParseLimit(t *testing.T) {
	for in, want := range map[string]Limit{
		"10/s:20": {Rate: 10, Period: time.Second, Burst: 20},
		"5/m":     {Rate: 5, Period: time.Minute, Burst: 5},
		"100/h:1": {Rate: 100, Period: time.Hour, Burst: 1},
		"3/30s":   {Rate: 3, Period: 30 * time.Second, Burst: 3},
		" 2/s ":   {Rate: 2, Period: time.Second, Burst: 2},
		"0":       {},
		"off":     {},
	} {
		got, err := ParseLimit(in)
		if err != nil || got != want {
			t.Errorf("ParseLimit(%q) = %+v, %v; want %+v", in, got, err, want)
		}
		if again, err := ParseLimit(got.String()); err != nil || again != got {
			t.Errorf("ParseLimit(%q.String() = %q) = %+v, %v", in, got.String(), again, err)
		}
	}
	for _, in := range []string{"", "10", "10/", "x/s", "-1/s", "0/s", "10/s:", "10/s:0", "10/s:x", "10/fortnight", "10/0s", "10/-1s"} {
		if l, err := ParseLimit(in); err == nil {
			t.Errorf("ParseLimit(%q) = %+v, want an error", in, l)
		}
	}
}

func TestExceededSaysWhatIsLimitedAndWhenToRetry(t *testing.T) {
	for _, c := range []struct {
		wait    time.Duration
		seconds int
	}{{time.Millisecond, 1}, {time.Second, 1}, {1001 * time.Millisecond, 2}, {12 * time.Second, 12}, {0, 1}} {
		ex := &Exceeded{Action: Post, Limit: Limit{Rate: 10, Period: time.Second, Burst: 20}, RetryAfter: c.wait}
		if got := ex.RetryAfterSeconds(); got != c.seconds {
			t.Errorf("RetryAfter %v: %d seconds, want %d", c.wait, got, c.seconds)
		}
	}
	ex := &Exceeded{Action: Login, Limit: Limit{Rate: 10, Period: time.Minute, Burst: 10}, RetryAfter: 5500 * time.Millisecond}
	if got, want := ex.Error(), "too many login attempts for this login: at most 10 per minute; retry in 6 s"; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
	ex = &Exceeded{Action: Post, Limit: Limit{Rate: 10, Period: time.Second, Burst: 20}}
	if got := ex.Error(); !strings.Contains(got, "posts") || !strings.Contains(got, "10 per second (bursts of 20)") {
		t.Errorf("message %q does not say what is limited", got)
	}
}
