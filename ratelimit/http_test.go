package ratelimit

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"testing"
	"time"
)

func TestClientAddress(t *testing.T) {
	proxies, err := ParseTrustedProxies([]string{"10.0.0.0/8", "192.0.2.1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, remote, forwarded string
		trusted                 bool
		want                    string
	}{
		{"remote address", "203.0.113.9:5555", "", false, "203.0.113.9"},
		{"forwarded ignored without trusted proxies", "203.0.113.9:5555", "198.51.100.1", false, "203.0.113.9"},
		{"forwarded ignored from an untrusted peer", "203.0.113.9:5555", "198.51.100.1", true, "203.0.113.9"},
		{"IPv6 counts by /64", "[2001:db8:1:2:3:4:5:6]:443", "", false, "2001:db8:1:2::/64"},
		{"IPv4-mapped IPv6 is IPv4", "[::ffff:203.0.113.9]:443", "", false, "203.0.113.9"},
		{"behind a trusted proxy", "10.1.2.3:80", "203.0.113.9", true, "203.0.113.9"},
		{"nearest untrusted hop, not what the client wrote", "10.1.2.3:80", "198.51.100.66, 203.0.113.9, 10.0.0.7", true, "203.0.113.9"},
		{"every hop trusted", "192.0.2.1:80", "10.0.0.7", true, "10.0.0.7"},
		{"no header from a trusted proxy", "10.1.2.3:80", "", true, "10.1.2.3"},
		{"garbage stops at the last trusted hop", "10.1.2.3:80", "203.0.113.9, nonsense, 10.0.0.7", true, "10.0.0.7"},
		{"unknown", "@", "", false, "unknown"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var trusted []netip.Prefix
			if c.trusted {
				trusted = proxies
			}
			var got string
			h := NewAddresses(trusted).Middleware(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				got = AddressFrom(r.Context())
			}))
			r := httptest.NewRequest(http.MethodPost, "/query", nil)
			r.RemoteAddr = c.remote
			if c.forwarded != "" {
				r.Header.Set("X-Forwarded-For", c.forwarded)
			}
			h.ServeHTTP(httptest.NewRecorder(), r)
			if got != c.want {
				t.Fatalf("client address %q, want %q", got, c.want)
			}
		})
	}
	if _, err := ParseTrustedProxies([]string{"10.0.0.0/33"}); err == nil {
		t.Error("a bad prefix was accepted")
	}
}

func TestRetryAfterHeaderOfPlainRequests(t *testing.T) {
	limits := New(Limits{Signup: {Rate: 1, Period: time.Hour, Burst: 1}}, Options{Now: newTestClock().now})
	h := NewAddresses(nil).Middleware(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		_ = limits.Allow(r.Context(), Signup, AddressFrom(r.Context()))
	}))
	serve := func(header, value string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "/query", nil)
		if header != "" {
			r.Header.Set(header, value)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	if got := serve("", "").Header().Get("Retry-After"); got != "" {
		t.Fatalf("allowed request: Retry-After %q", got)
	}
	if got := serve("", "").Header().Get("Retry-After"); got != strconv.Itoa(3600) {
		t.Fatalf("refused request: Retry-After %q, want 3600", got)
	}
	for header, value := range map[string]string{"Upgrade": "websocket", "Accept": "text/event-stream"} {
		if got := serve(header, value).Header().Get("Retry-After"); got != "" {
			t.Fatalf("%s: %s: Retry-After %q set on a stream", header, value, got)
		}
	}
}
