package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/chatql/internal/chatclient"
)

func TestEventParsing(t *testing.T) {
	msg := []byte(`{"payload":{"data":{"roomEvents":{"kind":"MESSAGE_POSTED","room":"r","cursor":"0f1e2d3c-4b5a-1968-8776-655443322110","message":{"id":"x","content":"chatload 1700000000123456789 the quick"}}}},"id":"1","type":"next"}`)
	m := &metrics{errs: newErrorCounts()}
	s := &subscriber{m: m}
	cursor, err := graphqlEvent(msg)
	if err != nil {
		t.Fatal(err)
	}
	s.event(msg)
	if m.deliveries.Load() != 1 || string(cursor) != "0f1e2d3c-4b5a-1968-8776-655443322110" {
		t.Fatalf("deliveries %d, cursor %q", m.deliveries.Load(), cursor)
	}
	if n, ok := parseLeadingInt(msg[bytes.Index(msg, []byte("chatload "))+len("chatload "):]); !ok || n != 1700000000123456789 {
		t.Fatalf("parseLeadingInt = %d, %v", n, ok)
	}
}

// TestEventDeliveryLatency: a delivery records the time from the send
// time in its content to its arrival, and the event's size; the first
// delivery of a subscriber counts it as receiving, once; an event of
// someone else's message, or of none, counts as another event and records
// no latency.
func TestEventDeliveryLatency(t *testing.T) {
	m := &metrics{errs: newErrorCounts()}
	s := &subscriber{m: m}
	event := func(content string) []byte {
		return fmt.Appendf(nil, `{"payload":{"data":{"roomEvents":{"kind":"MESSAGE_POSTED","room":"r","cursor":"0f1e2d3c-4b5a-1968-8776-655443322110","message":{"id":"x","content":%q}}}},"id":"1","type":"next"}`, content)
	}
	const age = 250 * time.Millisecond
	var size int64
	for range 2 {
		msg := event(string(content(nil, time.Now().Add(-age).UnixNano(), 120)))
		size += int64(len(msg))
		s.event(msg)
	}
	for _, other := range [][]byte{
		event("hello, not ours"),
		event("chatload no time"),
		[]byte(`{"payload":{"data":{"roomEvents":{"kind":"USER_JOINED","room":"r","cursor":"0f1e2d3c-4b5a-1968-8776-655443322110","message":null}}},"id":"1","type":"next"}`),
	} {
		s.event(other)
	}
	snap := m.delivery.Snapshot()
	if m.deliveries.Load() != 2 || snap.n != 2 || m.deliveryBytes.Load() != size || m.otherEvents.Load() != 3 || m.subsReceiving.Load() != 1 {
		t.Fatalf("deliveries %d (latencies %d), bytes %d (want %d), other events %d, receiving %d; want 2, 2, 3, 1",
			m.deliveries.Load(), snap.n, m.deliveryBytes.Load(), size, m.otherEvents.Load(), m.subsReceiving.Load())
	}
	// At least the age it was sent with; the slack is the test's own time.
	if got := snap.Quantile(0); got < age-age/128 || got > age+10*time.Second {
		t.Errorf("delivery latency %v, want %v and a little", got, age)
	}
	if _, err := graphqlEvent([]byte(`{"payload":{"errors":[{"message":"boom","extensions":{"code":"INTERNAL"}}]},"id":"1","type":"next"}`)); err == nil || errorKind(err) != "graphql-INTERNAL" {
		t.Errorf("an event with errors = %v (%s), want the GraphQL error", err, errorKind(err))
	}
}

// TestContent: a posted message is exactly the asked size and starts with
// the marker and the send time, which parse back; a size smaller than that
// beginning does not cut it.
func TestContent(t *testing.T) {
	const sent = 1700000000123456789
	for _, size := range []int{40, 120, 4000} {
		c := content(nil, sent, size)
		rest, ok := bytes.CutPrefix(c, []byte(contentMarker))
		n, okInt := parseLeadingInt(rest)
		if len(c) != size || !ok || !okInt || n != sent || rest[len(strconv.Itoa(sent))] != ' ' {
			t.Errorf("content(%d) = %q (%d bytes)", size, c, len(c))
		}
	}
	if c := content(make([]byte, 0, 8), sent, 5); string(c) != contentMarker+strconv.Itoa(sent)+" " {
		t.Errorf("content of size 5 = %q", c)
	}
	for _, tc := range []struct {
		in string
		n  int64
		ok bool
	}{
		{"", 0, false}, {"x1", 0, false}, {"0", 0, true}, {"42 rest", 42, true},
		{"1234567890123456789012", 1234567890123456789, true}, // at most 19 digits: no overflow
	} {
		if n, ok := parseLeadingInt([]byte(tc.in)); n != tc.n || ok != tc.ok {
			t.Errorf("parseLeadingInt(%q) = %d, %v; want %d, %v", tc.in, n, ok, tc.n, tc.ok)
		}
	}
}

// TestPaceInterval: workers each ticking at the interval offer the rate
// asked; no rate (or no worker) is as fast as the server answers.
func TestPaceInterval(t *testing.T) {
	for _, tc := range []struct {
		workers int
		rate    float64
		want    time.Duration
	}{
		{10, 500, 20 * time.Millisecond},
		{2, 20, 100 * time.Millisecond},
		{40, 600, time.Second * 40 / 600},
		{1, 3, time.Second / 3},
		{10, 0, 0},
		{10, -1, 0},
		{0, 20, 0},
	} {
		got := paceInterval(tc.workers, tc.rate)
		if got != tc.want {
			t.Errorf("paceInterval(%d, %g) = %v, want %v", tc.workers, tc.rate, got, tc.want)
		}
		if got > 0 {
			if offered := float64(tc.workers) / got.Seconds(); offered < tc.rate*0.999999 || offered > tc.rate*1.000001 {
				t.Errorf("paceInterval(%d, %g) = %v offers %g/s", tc.workers, tc.rate, got, offered)
			}
		}
	}
}

// TestErrorCounts: errors count by operation and kind, with the first
// message of each kind as its example, truncated.
func TestErrorCounts(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{chatclient.Errors{{Message: "slow down", Extensions: map[string]any{"code": "RATE_LIMITED"}}}, "graphql-RATE_LIMITED"},
		{fmt.Errorf("post: %w", chatclient.Errors{{Message: "no code"}}), "graphql"},
		{fmt.Errorf("post: %w", context.DeadlineExceeded), "timeout"},
		{context.Canceled, "canceled"},
		{&statusError{status: 503, body: "busy"}, "http-503"},
		{fmt.Errorf("read: %w", io.ErrUnexpectedEOF), "eof"},
		{errors.New("something else"), "transport"},
	} {
		if got := errorKind(tc.err); got != tc.want {
			t.Errorf("errorKind(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
	e := newErrorCounts()
	long := strings.Repeat("x", 300)
	e.Add("post", &statusError{status: 503, body: long})
	e.Add("post", &statusError{status: 503, body: "second"})
	e.Add("subscribe", io.EOF)
	counts, examples := e.Snapshot()
	if e.total.Load() != 3 || len(counts) != 2 || counts["post:http-503"] != 2 || counts["subscribe:eof"] != 1 {
		t.Errorf("counts %v, total %d", counts, e.total.Load())
	}
	if ex := examples["post:http-503"]; len(ex) != 203 || !strings.HasPrefix(ex, "HTTP 503: xxx") || !strings.HasSuffix(ex, "...") {
		t.Errorf("example %q, want the first message, truncated to 200 bytes", ex)
	}
	counts["post:http-503"] = 99 // a snapshot is a copy
	if again, _ := e.Snapshot(); again["post:http-503"] != 2 {
		t.Error("changing a snapshot changed the counts")
	}
}

// TestCentrifugoMessages: a frame of Centrifugo's JSON protocol holds
// several messages, one per line; a push gives its publication's offset to
// recover from, and a disconnect or unsubscribe push ends the stream.
func TestCentrifugoMessages(t *testing.T) {
	s := &centrifugoStream{pending: []byte(`{}` + "\n" + `{"push":{"channel":"r","pub":{"data":{"content":"chatload 1 x"},"offset":42}}}`)}
	var got []string
	for range 2 {
		msg, err := s.message(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(msg))
	}
	if got[0] != "{}" || !strings.HasPrefix(got[1], `{"push":`) || len(s.pending) != 0 {
		t.Fatalf("messages %q, left %q; want the ping, then the push", got, s.pending)
	}
	if offset, err := centrifugoPush([]byte(got[1])); err != nil || string(offset) != "42" {
		t.Fatalf("centrifugoPush = %q, %v; want offset 42", offset, err)
	}
	if offset, err := centrifugoPush([]byte(`{"push":{"channel":"r","pub":{"data":{"content":"no history"}}}}`)); err != nil || offset != nil {
		t.Fatalf("centrifugoPush of a publication without offset = %q, %v; want none", offset, err)
	}
	for _, end := range []string{`{"push":{"disconnect":{"code":3001,"reason":"shutdown"}}}`, `{"push":{"channel":"r","unsubscribe":{"code":2500}}}`} {
		if _, err := centrifugoPush([]byte(end)); err == nil {
			t.Errorf("centrifugoPush(%s) = nil, want the end of the subscription", end)
		}
	}
}
