package e2e

// graphql-sse's single connection mode, spoken by hand: PUT reserves a
// stream, GET opens it, POST starts operations on it, DELETE stops one.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/chatql/internal/chatclient"
)

// sseStream is the client side of one single-connection event stream.
type sseStream struct {
	ts     *testServer
	token  string
	events chan streamEvent // closed when the stream ends
	body   io.Closer
}

// streamEvent is one event of a single-connection stream: next carries a
// payload, complete none.
type streamEvent struct {
	Event string
	Data  struct {
		ID      string
		Payload json.RawMessage
	}
}

// streamRequest sends a request of the single connection mode as c, with
// the stream token when it is not empty.
func (ts *testServer) streamRequest(t *testing.T, c *chatclient.Client, method, token, query string, body any) *http.Response {
	t.Helper()
	var r io.Reader = http.NoBody
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(testContext(t), method, ts.URL+query, r)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if method == http.MethodGet {
		req.Header.Set("Accept", "text/event-stream")
	}
	if token != "" {
		req.Header.Set("X-GraphQL-Event-Stream-Token", token)
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// reserveStream reserves a stream as c and returns its token.
func (ts *testServer) reserveStream(t *testing.T, c *chatclient.Client) string {
	t.Helper()
	resp := ts.streamRequest(t, c, http.MethodPut, "", "", nil)
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") || len(b) == 0 {
		t.Fatalf("PUT: %d %s %q, want 201 and a token", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	return string(b)
}

// openStream reserves a stream as c and opens it.
func (ts *testServer) openStream(t *testing.T, c *chatclient.Client) *sseStream {
	t.Helper()
	token := ts.reserveStream(t, c)
	resp := ts.streamRequest(t, c, http.MethodGet, token, "", nil)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET: %d %s", resp.StatusCode, b)
	}
	s := &sseStream{ts: ts, token: token, events: make(chan streamEvent, 64), body: resp.Body}
	go func() {
		defer close(s.events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		var ev streamEvent
		for sc.Scan() {
			line := sc.Text()
			if v, ok := strings.CutPrefix(line, "event: "); ok {
				ev.Event = v
			} else if v, ok := strings.CutPrefix(line, "data: "); ok {
				if err := json.Unmarshal([]byte(v), &ev.Data); err != nil {
					t.Errorf("event data %q: %v", v, err)
					return
				}
			} else if line == "" && ev.Event != "" {
				s.events <- ev
				ev = streamEvent{}
			}
		}
	}()
	return s
}

// start starts roomEvents of room on the stream as operation id, and waits
// until the server streams it.
func (s *sseStream) start(t *testing.T, c *chatclient.Client, id, room string) {
	t.Helper()
	started := s.ts.Streams().Started()
	resp := s.ts.streamRequest(t, c, http.MethodPost, s.token, "", map[string]any{
		"query": roomEvents, "variables": map[string]any{"r": room}, "extensions": map[string]any{"operationId": id},
	})
	if resp.StatusCode != http.StatusAccepted {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST %s: %d %s, want 202", id, resp.StatusCode, b)
	}
	waitFor(t, func() bool { return s.ts.Streams().Started() > started })
}

// next is the stream's next event.
func (s *sseStream) next(t *testing.T) streamEvent {
	t.Helper()
	select {
	case ev, ok := <-s.events:
		if !ok {
			t.Fatal("the event stream ended")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10 s")
	}
	return streamEvent{}
}

// nextRoomEvent is the stream's next event, a roomEvents result.
func (s *sseStream) nextRoomEvent(t *testing.T) (id string, ev roomEvent) {
	t.Helper()
	e := s.next(t)
	var out struct {
		Data   struct{ RoomEvents roomEvent }
		Errors []any
	}
	if e.Event != "next" || json.Unmarshal(e.Data.Payload, &out) != nil || len(out.Errors) > 0 {
		t.Fatalf("got %s %s %s, want a next event with data", e.Event, e.Data.ID, e.Data.Payload)
	}
	return e.Data.ID, out.Data.RoomEvents
}

// wantStreamError checks a refused request's status and extensions.code.
func wantStreamError(t *testing.T, what string, resp *http.Response, status int, code string) {
	t.Helper()
	var body struct {
		Errors []struct {
			Message    string
			Extensions struct{ Code string }
		}
	}
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &body); err != nil || resp.StatusCode != status || len(body.Errors) != 1 ||
		body.Errors[0].Extensions.Code != code || body.Errors[0].Message == "" {
		t.Errorf("%s: got %d %s, want %d with %s", what, resp.StatusCode, b, status, code)
	}
}

// Two rooms' events on one stream, each with its operation id; a stopped
// operation sends nothing more while the other goes on; the server
// completes an operation whose room is deleted.
func TestSSESingleConnection(t *testing.T) {
	ts := startServer(t, testConfig(t))
	alice := ts.user(t, "alice")
	for _, r := range []string{"one", "two"} {
		mustDo(t, alice, createRoom, map[string]any{"n": r}, nil)
	}
	s := ts.openStream(t, alice)
	s.start(t, alice, "op-one", "one")
	s.start(t, alice, "op-two", "two")

	post := func(room, content string) {
		mustDo(t, alice, postMessage, map[string]any{"r": room, "c": content}, nil)
	}
	post("one", "hello one")
	if id, ev := s.nextRoomEvent(t); id != "op-one" || ev.Room != "one" || ev.Message == nil || ev.Message.Content != "hello one" {
		t.Fatalf("got %s %+v, want op-one's message in one", id, ev)
	}
	post("two", "hello two")
	if id, ev := s.nextRoomEvent(t); id != "op-two" || ev.Room != "two" || ev.Message == nil || ev.Message.Content != "hello two" {
		t.Fatalf("got %s %+v, want op-two's message in two", id, ev)
	}

	open := ts.Streams().Open()
	resp := ts.streamRequest(t, alice, http.MethodDelete, s.token, "?operationId=op-two", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE: %d, want 200", resp.StatusCode)
	}
	waitFor(t, func() bool { return ts.Streams().Open() == open-1 })
	wantStreamError(t, "DELETE again", ts.streamRequest(t, alice, http.MethodDelete, s.token, "?operationId=op-two", nil), http.StatusNotFound, "NOT_FOUND")
	post("two", "unheard")
	post("one", "still heard")
	if id, ev := s.nextRoomEvent(t); id != "op-one" || ev.Message == nil || ev.Message.Content != "still heard" {
		t.Fatalf("got %s %+v, want only op-one's message after op-two stopped", id, ev)
	}

	mustDo(t, alice, deleteRoom, map[string]any{"r": "one"}, nil)
	if id, ev := s.nextRoomEvent(t); id != "op-one" || ev.Kind != "ROOM_DELETED" {
		t.Fatalf("got %s %+v, want op-one's ROOM_DELETED", id, ev)
	}
	if ev := s.next(t); ev.Event != "complete" || ev.Data.ID != "op-one" {
		t.Fatalf("got %+v, want op-one's complete", ev)
	}
	waitFor(t, func() bool { return ts.Streams().Open() == 0 })
}

// A stream answers only its owner; unknown, expired and closed tokens,
// and malformed requests, get coded errors.
func TestSSESingleConnectionRefusals(t *testing.T) {
	cfg := testConfig(t)
	cfg.SSEReservationTTL = 300 * time.Millisecond
	ts := startServer(t, cfg)
	alice, bob := ts.user(t, "alice"), ts.user(t, "bob")
	mustDo(t, alice, createRoom, map[string]any{"n": "hers"}, nil)
	s := ts.openStream(t, alice)
	s.start(t, alice, "a", "hers")
	start := func(id string) map[string]any {
		return map[string]any{"query": roomEvents, "variables": map[string]any{"r": "hers"}, "extensions": map[string]any{"operationId": id}}
	}

	wantStreamError(t, "anonymous PUT", ts.streamRequest(t, ts.Client, http.MethodPut, "", "", nil), http.StatusUnauthorized, "UNAUTHENTICATED")
	wantStreamError(t, "anonymous GET", ts.streamRequest(t, ts.Client, http.MethodGet, s.token, "", nil), http.StatusUnauthorized, "UNAUTHENTICATED")
	wantStreamError(t, "bob's GET", ts.streamRequest(t, bob, http.MethodGet, s.token, "", nil), http.StatusNotFound, "NOT_FOUND")
	wantStreamError(t, "bob's POST", ts.streamRequest(t, bob, http.MethodPost, s.token, "", start("b")), http.StatusNotFound, "NOT_FOUND")
	wantStreamError(t, "bob's DELETE", ts.streamRequest(t, bob, http.MethodDelete, s.token, "?operationId=a", nil), http.StatusNotFound, "NOT_FOUND")
	wantStreamError(t, "unknown token", ts.streamRequest(t, alice, http.MethodGet, "no-such-token", "", nil), http.StatusNotFound, "NOT_FOUND")
	wantStreamError(t, "token in the URL, another user", ts.streamRequest(t, bob, http.MethodPost, "", "?token="+url.QueryEscape(s.token), start("b")), http.StatusNotFound, "NOT_FOUND")
	wantStreamError(t, "second GET", ts.streamRequest(t, alice, http.MethodGet, s.token, "", nil), http.StatusConflict, "CONFLICT")
	wantStreamError(t, "same operation id", ts.streamRequest(t, alice, http.MethodPost, s.token, "", start("a")), http.StatusConflict, "CONFLICT")
	wantStreamError(t, "no operation id", ts.streamRequest(t, alice, http.MethodPost, s.token, "", map[string]any{"query": roomEvents}), http.StatusBadRequest, "BAD_REQUEST")
	wantStreamError(t, "invalid document", ts.streamRequest(t, alice, http.MethodPost, s.token, "", map[string]any{"query": "subscription { nope }", "extensions": map[string]any{"operationId": "x"}}), http.StatusBadRequest, "GRAPHQL_VALIDATION_FAILED")
	wantStreamError(t, "DELETE without operationId", ts.streamRequest(t, alice, http.MethodDelete, s.token, "", nil), http.StatusBadRequest, "BAD_REQUEST")
	wantStreamError(t, "DELETE without token", ts.streamRequest(t, alice, http.MethodDelete, "", "?operationId=a", nil), http.StatusBadRequest, "BAD_REQUEST")

	// A reservation never opened expires.
	expiring := ts.reserveStream(t, alice)
	wantStreamError(t, "POST before GET", ts.streamRequest(t, alice, http.MethodPost, expiring, "", start("c")), http.StatusConflict, "CONFLICT")
	time.Sleep(3 * cfg.SSEReservationTTL)
	wantStreamError(t, "expired token", ts.streamRequest(t, alice, http.MethodGet, expiring, "", nil), http.StatusNotFound, "NOT_FOUND")

	// A user holds at most 16 streams; expired reservations give their
	// place back.
	for range 15 {
		ts.reserveStream(t, alice)
	}
	wantStreamError(t, "17th stream", ts.streamRequest(t, alice, http.MethodPut, "", "", nil), http.StatusTooManyRequests, "TOO_MANY_CONNECTIONS")
	time.Sleep(3 * cfg.SSEReservationTTL)
	ts.reserveStream(t, alice)

	// Bob's refusals touched nothing of alice's stream.
	mustDo(t, alice, postMessage, map[string]any{"r": "hers", "c": "still mine"}, nil)
	if id, ev := s.nextRoomEvent(t); id != "a" || ev.Message == nil || ev.Message.Content != "still mine" {
		t.Fatalf("got %s %+v, want a's message", id, ev)
	}
}

// Closing the stream ends its operations, and forgets its token.
func TestSSESingleConnectionCloseEndsOperations(t *testing.T) {
	ts := startServer(t, testConfig(t))
	alice := ts.user(t, "alice")
	for _, r := range []string{"one", "two"} {
		mustDo(t, alice, createRoom, map[string]any{"n": r}, nil)
	}
	s := ts.openStream(t, alice)
	s.start(t, alice, "op-one", "one")
	s.start(t, alice, "op-two", "two")
	if n := ts.Streams().Open(); n != 2 {
		t.Fatalf("%d streams open, want 2", n)
	}
	s.body.Close()
	waitFor(t, func() bool { return ts.Streams().Open() == 0 && ts.Released() })
	waitFor(t, func() bool {
		resp := ts.streamRequest(t, alice, http.MethodPost, s.token, "", map[string]any{"query": roomEvents, "variables": map[string]any{"r": "one"}, "extensions": map[string]any{"operationId": "late"}})
		return resp.StatusCode == http.StatusNotFound
	})
}

// A stream runs at most 100 operations at once; a stopped one gives its
// place back.
func TestSSESingleConnectionOperationCap(t *testing.T) {
	ts := startServer(t, testConfig(t))
	alice := ts.user(t, "alice")
	mustDo(t, alice, createRoom, map[string]any{"n": "busy"}, nil)
	s := ts.openStream(t, alice)
	for i := range 100 {
		s.start(t, alice, fmt.Sprint("op-", i), "busy")
	}
	over := map[string]any{"query": roomEvents, "variables": map[string]any{"r": "busy"}, "extensions": map[string]any{"operationId": "op-100"}}
	wantStreamError(t, "101st operation", ts.streamRequest(t, alice, http.MethodPost, s.token, "", over), http.StatusTooManyRequests, "BAD_REQUEST")
	if resp := ts.streamRequest(t, alice, http.MethodDelete, s.token, "?operationId=op-0", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE: %d, want 200", resp.StatusCode)
	}
	s.start(t, alice, "op-100", "busy")
}

// Each operation runs as the caller of the request that started it: after
// the token the stream was opened with expires, an operation started with a
// fresh token follows its room.
func TestSSESingleConnectionOperationsOutliveTheStreamsToken(t *testing.T) {
	cfg := testConfig(t)
	cfg.TokenTTL = 2 * time.Second
	ts := startServer(t, cfg)
	alice := ts.user(t, "alice")
	mustDo(t, alice, createRoom, map[string]any{"n": "long"}, nil)
	s := ts.openStream(t, alice)
	time.Sleep(cfg.TokenTTL + time.Second)
	var out struct{ Login struct{ Token string } }
	mustDo(t, ts.Client, `mutation { login(login: "alice", password: "password-alice") { token } }`, nil, &out)
	fresh := ts.Client.WithToken(out.Login.Token)
	s.start(t, fresh, "later", "long")
	mustDo(t, fresh, postMessage, map[string]any{"r": "long", "c": "after the first token"}, nil)
	if id, ev := s.nextRoomEvent(t); id != "later" || ev.Message == nil || ev.Message.Content != "after the first token" {
		t.Fatalf("got %s %+v, want the message on the operation started with the fresh token", id, ev)
	}
}
