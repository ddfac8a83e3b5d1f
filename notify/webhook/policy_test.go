package webhook

import (
	"errors"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"
)

// itoa formats a port.
func itoa(n int) string { return strconv.Itoa(n) }

func TestAllowedAddr(t *testing.T) {
	cases := []struct {
		addr     string
		loopback bool
		want     bool
	}{
		{"93.184.216.34", false, true},
		{"2606:2800:220:1:248:1893:25c8:1946", false, true},
		{"127.0.0.1", false, false},
		{"127.0.0.1", true, true},
		{"::1", false, false},
		{"::1", true, true},
		{"::ffff:127.0.0.1", false, false},
		{"::ffff:10.1.2.3", true, false},
		{"10.0.0.1", true, false},
		{"172.16.5.4", false, false},
		{"192.168.1.1", false, false},
		{"169.254.169.254", false, false},
		{"fe80::1", false, false},
		{"fc00::1", false, false},
		{"100.64.0.1", false, false},
		{"0.0.0.0", true, false},
		{"224.0.0.1", false, false},
		{"255.255.255.255", false, false},
		{"192.0.2.1", false, false},
		{"64:ff9b::a00:1", false, false},
	}
	for _, c := range cases {
		if got := allowedAddr(netip.MustParseAddr(c.addr), c.loopback); got != c.want {
			t.Errorf("allowedAddr(%s, loopback=%v) = %v, want %v", c.addr, c.loopback, got, c.want)
		}
	}
}

func TestValidateURL(t *testing.T) {
	long := "https://example.com/" + strings.Repeat("a", MaxURLLength)
	cases := []struct {
		url      string
		loopback bool
		want     error
	}{
		{"https://hooks.example.com/chatql?x=1", false, nil},
		{"https://93.184.216.34/", false, nil},
		{"http://hooks.example.com/", false, ErrBadURL},
		{"http://hooks.example.com/", true, ErrBadURL},
		{"http://127.0.0.1:8080/", false, ErrBadURL},
		{"http://127.0.0.1:8080/", true, nil},
		{"http://localhost:8080/", true, nil},
		{"https://127.0.0.1/", false, ErrRefused},
		{"https://[::1]/", false, ErrRefused},
		{"https://10.0.0.1/", true, ErrRefused},
		{"https://169.254.169.254/latest/meta-data", false, ErrRefused},
		{"https://user:pass@hooks.example.com/", false, ErrBadURL},
		{"https://hooks.example.com/#frag", false, ErrBadURL},
		{"ftp://hooks.example.com/", false, ErrBadURL},
		{"hooks.example.com/path", false, ErrBadURL},
		{"https:///path", false, ErrBadURL},
		{"https://hooks.example.com/%zz", false, ErrBadURL},
		{long, false, ErrBadURL},
	}
	for _, c := range cases {
		_, err := ValidateURL(c.url, c.loopback)
		if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("ValidateURL(%.60q, %v) = %v, want %v", c.url, c.loopback, err, c.want)
		}
	}
}

func TestBackoffSchedule(t *testing.T) {
	want := []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour}
	for i, base := range want {
		attempt := i + 1
		if got := baseDelay(attempt); got != base {
			t.Errorf("baseDelay(%d) = %v, want %v", attempt, got, base)
		}
		lo, hi := jittered(base, 0), jittered(base, 0.999999)
		if lo != base*8/10 || hi < base*119/100 || hi > base*12/10 {
			t.Errorf("attempt %d: jitter range %v..%v around %v", attempt, lo, hi, base)
		}
		for range 50 {
			if d := Backoff(attempt); d < lo || d > hi {
				t.Errorf("Backoff(%d) = %v, outside %v..%v", attempt, d, lo, hi)
			}
		}
	}
	if baseDelay(0) != want[0] || baseDelay(100) != want[len(want)-1] {
		t.Errorf("out-of-range attempts not clamped")
	}
}

func TestNextStopsAfterMaxAttempts(t *testing.T) {
	r := Result{Outcome: Retry}
	attempts := 1
	for {
		if _, again := Next(attempts, r); !again {
			break
		}
		attempts++
	}
	if attempts != MaxAttempts || MaxAttempts != len(schedule)+1 {
		t.Fatalf("gave up after %d attempts, MaxAttempts %d, want 8", attempts, MaxAttempts)
	}
	if _, again := Next(1, Result{Outcome: Delivered}); again {
		t.Fatalf("Next retries a delivered message")
	}
	if d, _ := Next(3, Result{Outcome: Retry, RetryAfter: 100 * time.Hour}); d > MaxRetryAfter {
		t.Fatalf("Retry-After not capped: %v", d)
	}
}
