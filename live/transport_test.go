package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// Every subscriber of a room gets every event, and each event is executed
// and encoded once for all subscribers that select the same fields, however
// their documents spell the selection.
func TestRoomEventsEncodedOncePerSelection(t *testing.T) {
	h := newHarness(t, nil)
	alice := h.user("alice")
	var logins []string
	for i := range 6 {
		logins = append(logins, fmt.Sprintf("u%d", i))
	}
	tokens := map[string]string{}
	for _, l := range logins {
		tokens[l] = h.user(l)
	}
	h.room("hall", "alice", logins...)

	// Three spellings of one selection, over both protocols, and one other
	// selection.
	same := []string{
		roomEvents,
		`subscription S($r: String!) { roomEvents(room: $r) { ...E } } fragment E on RoomEvent { kind cursor message { id content author { login } } user { login } }`,
		`subscription($r: String!, $withUser: Boolean!) { roomEvents(room: $r) { kind cursor message { id content author { login } } user @include(if: $withUser) { login } } }`,
	}
	other := `subscription($r: String!) { roomEvents(room: $r) { kind message { content } } }`
	type sub struct {
		c     *client
		proto *protocol
	}
	var subs []sub
	before := h.open()
	for i, login := range logins {
		proto := graphqlTransportWS
		if i%2 == 1 {
			proto = graphqlWS
		}
		c := h.connect(proto.name, tokens[login])
		query := other
		if i < 5 {
			query = same[i%len(same)]
		}
		c.subscribe(proto, "s", query, map[string]any{"r": "hall", "withUser": true})
		subs = append(subs, sub{c, proto})
	}
	waitFor(t, "six room streams", func() bool { return h.open() == before+6 })

	const posts = 20
	var ids []string
	for i := range posts {
		ids = append(ids, h.post(alice, "hall", fmt.Sprintf("hello %d", i)))
	}
	for i, s := range subs[:5] {
		for j := range posts {
			ev := s.c.event(s.proto, "s")
			if ev.Kind != "MESSAGE_POSTED" || ev.Message == nil || ev.Message.ID != ids[j] || ev.Cursor != ids[j] ||
				ev.Message.Content != fmt.Sprintf("hello %d", j) || ev.User.Login != "alice" || ev.Message.Author.Login != "alice" {
				t.Fatalf("subscriber %d, event %d: got %+v", i, j, ev)
			}
		}
	}
	last := subs[5]
	for j := range posts {
		m := last.c.read()
		want := fmt.Sprintf(`{"data":{"roomEvents":{"kind":"MESSAGE_POSTED","message":{"content":"hello %d"}}}}`, j)
		if m.Type != last.proto.next || string(m.Payload) != want {
			t.Fatalf("other selection, event %d: got %s %s, want %s", j, m.Type, m.Payload, want)
		}
	}
	encoders, encodes := h.encoderCount()
	if encoders != 2 || encodes != 2*posts {
		t.Fatalf("got %d encoders that executed %d events; want 2 encoders and %d executions (one per event per selection)", encoders, encodes, 2*posts)
	}

	// Encoders go when their last subscriber does.
	for _, s := range subs {
		s.c.send(message{ID: "s", Type: s.proto.stop})
	}
	waitFor(t, "streams to end", func() bool { return h.open() == before })
	waitFor(t, "encoders to be released", func() bool { n, _ := h.encoderCount(); return n == 0 })
}

// A hidden message's content is shown to its author only, also when the
// MESSAGE_HIDDEN event of one encoder reaches both.
func TestHiddenContentPerViewer(t *testing.T) {
	h := newHarness(t, nil)
	alice, bob := h.user("alice"), h.user("bob")
	h.room("hall", "bob", "alice")
	before := h.open()
	ca := h.connect(graphqlTransportWS.name, alice)
	cb := h.connect(graphqlTransportWS.name, bob)
	ca.subscribe(graphqlTransportWS, "a", roomEvents, map[string]any{"r": "hall"})
	cb.subscribe(graphqlTransportWS, "b", roomEvents, map[string]any{"r": "hall"})
	waitFor(t, "two room streams", func() bool { return h.open() == before+2 })

	id := h.post(alice, "hall", "oops")
	for _, c := range []*client{ca, cb} {
		if ev := c.event(graphqlTransportWS, map[*client]string{ca: "a", cb: "b"}[c]); ev.Message.Content != "oops" {
			t.Fatalf("posted: got %+v", ev)
		}
	}
	h.do(alice, `mutation($id: ID!) { hideMessage(id: $id) { id } }`, map[string]any{"id": id}, nil)
	if ev := ca.event(graphqlTransportWS, "a"); ev.Kind != "MESSAGE_HIDDEN" || ev.Message.ID != id || ev.Message.Content != "oops" {
		t.Fatalf("author sees: %+v, want the content", ev)
	}
	if ev := cb.event(graphqlTransportWS, "b"); ev.Kind != "MESSAGE_HIDDEN" || ev.Message.ID != id || ev.Message.Content != "" {
		t.Fatalf("creator sees: %+v, want the content blank", ev)
	}

	// A resume replays the hidden message the same way.
	for _, c := range []struct {
		token, want string
	}{{alice, "oops"}, {bob, ""}} {
		r := h.connect(graphqlTransportWS.name, c.token)
		r.subscribe(graphqlTransportWS, "r", roomEvents, map[string]any{"r": "hall", "after": "00000000-0000-1000-8000-000000000000"})
		ev := r.event(graphqlTransportWS, "r")
		for ev.Kind == "PARTICIPANT_JOINED" { // the room's log starts with the joins
			ev = r.event(graphqlTransportWS, "r")
		}
		if ev.Kind != "MESSAGE_POSTED" || ev.Message.ID != id || ev.Message.Content != c.want {
			t.Fatalf("replay: got %+v, want the post with content %q", ev, c.want)
		}
	}
}

// The graphql-transport-ws rules: the close codes of its specification,
// with no message before the close (the protocol has no connection_error).
func TestProtocolViolationsClose(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.InitTimeout = 200 * time.Millisecond
		verify := c.Authenticate
		c.Authenticate = func(ctx context.Context, init map[string]any) (context.Context, bool, error) {
			if init["token"] == "store-down" {
				return ctx, false, errors.New("the user table does not answer")
			}
			return verify(ctx, init)
		}
	})
	alice := h.user("alice")
	raw := func(text string) func(c *client) {
		return func(c *client) {
			if err := c.ws.Write(c.t.Context(), websocket.MessageText, []byte(text)); err != nil {
				c.t.Fatal(err)
			}
		}
	}
	// after init, then raw text.
	initThen := func(text string) func(c *client) {
		return func(c *client) {
			c.send(message{Type: msgConnectionInit, Payload: mustJSON(map[string]any{"token": alice})})
			if m := c.read(); m.Type != msgConnectionAck {
				c.t.Fatalf("got %+v, want connection_ack", m)
			}
			raw(text)(c)
		}
	}
	cases := []struct {
		name   string
		script func(c *client)
		code   closeCode
	}{
		{"subscribe before init", func(c *client) {
			c.subscribe(graphqlTransportWS, "1", roomEvents, map[string]any{"r": "x"})
		}, closeUnauthorized},
		{"second init", func(c *client) {
			c.send(message{Type: msgConnectionInit})
			c.read()
			c.send(message{Type: msgConnectionInit})
		}, closeTooManyInits},
		{"no init in time", func(c *client) {}, closeInitTimeout},
		{"not JSON", raw("hello"), closeBadRequest},
		{"not an object", raw(`["connection_init"]`), closeBadRequest},
		{"unknown type", func(c *client) { c.send(message{Type: "subscribe-please"}) }, closeBadRequest},
		{"legacy type", initThen(`{"id":"1","type":"start","payload":{"query":"{ me { login } }"}}`), closeBadRequest},
		{"numeric id", initThen(`{"id":1,"type":"subscribe","payload":{"query":"{ me { login } }"}}`), closeBadRequest},
		{"binary", func(c *client) {
			if err := c.ws.Write(c.t.Context(), websocket.MessageBinary, []byte(`{"type":"connection_init"}`)); err != nil {
				c.t.Fatal(err)
			}
		}, closeBadRequest},
		{"init payload not an object", raw(`{"type":"connection_init","payload":"token"}`), closeBadRequest},
		{"ping payload not an object", raw(`{"type":"ping","payload":[1]}`), closeBadRequest},
		{"subscribe without id", initThen(`{"type":"subscribe","payload":{"query":"{ me { login } }"}}`), closeBadRequest},
		{"subscribe payload not an object", initThen(`{"id":"1","type":"subscribe","payload":"{ me { login } }"}`), closeBadRequest},
		{"subscribe without query", initThen(`{"id":"1","type":"subscribe","payload":{"variables":{}}}`), closeBadRequest},
		{"subscribe query not a string", initThen(`{"id":"1","type":"subscribe","payload":{"query":5}}`), closeBadRequest},
		{"subscribe variables not an object", initThen(`{"id":"1","type":"subscribe","payload":{"query":"{ me { login } }","variables":[1]}}`), closeBadRequest},
		{"subscribe operationName not a string", initThen(`{"id":"1","type":"subscribe","payload":{"query":"{ me { login } }","operationName":1}}`), closeBadRequest},
		{"subscribe extensions not an object", initThen(`{"id":"1","type":"subscribe","payload":{"query":"{ me { login } }","extensions":"x"}}`), closeBadRequest},
		{"complete without id", initThen(`{"type":"complete"}`), closeBadRequest},
		{"bad token", func(c *client) {
			c.send(message{Type: msgConnectionInit, Payload: mustJSON(map[string]any{"token": "forged"})})
		}, closeUnauthorized},
		{"token check fails", func(c *client) {
			c.send(message{Type: msgConnectionInit, Payload: mustJSON(map[string]any{"token": "store-down"})})
		}, closeInternal},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := h.dial(graphqlTransportWS.name)
			c.t = t // fail this case only
			tc.script(c)
			code, reason := c.closed()
			if code != tc.code || reason == "" {
				t.Fatalf("got close %d %q, want %d with a reason", code, reason, tc.code)
			}
			if strings.Contains(reason, "user table") {
				t.Fatalf("close reason %q shows an internal error", reason)
			}
		})
	}

	t.Run("duplicate id", func(t *testing.T) {
		h.room("dup", "alice")
		c := h.connect(graphqlTransportWS.name, alice)
		c.subscribe(graphqlTransportWS, "1", roomEvents, map[string]any{"r": "dup"})
		c.subscribe(graphqlTransportWS, "1", roomEvents, map[string]any{"r": "dup"})
		if code, reason := c.closed(); code != closeDuplicateID || !strings.Contains(reason, "1") {
			t.Fatalf("got close %d %q, want %d", code, reason, closeDuplicateID)
		}
	})
}

// Mistakes in one operation fail that operation only, with a coded error;
// the connection goes on.
func TestOperationErrorsKeepTheConnection(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxOperations = 2 })
	alice, bob := h.user("alice"), h.user("bob")
	h.room("hall", "alice")
	c := h.connect(graphqlTransportWS.name, alice)

	wantError := func(id, code, contains string) {
		t.Helper()
		m := c.read()
		var errs []struct {
			Message    string
			Extensions struct{ Code string }
		}
		if m.Type != msgError || m.ID != id || json.Unmarshal(m.Payload, &errs) != nil || len(errs) == 0 ||
			errs[0].Extensions.Code != code || !strings.Contains(errs[0].Message, contains) {
			t.Fatalf("want error %s (%s) for %s, got %+v %s", code, contains, id, m, m.Payload)
		}
	}
	c.subscribe(graphqlTransportWS, "v", `subscription { roomEvents(room: 5) { kind } }`, nil)
	wantError("v", "GRAPHQL_VALIDATION_FAILED", "")
	c.subscribe(graphqlTransportWS, "q", `{ nope }`, nil)
	wantError("q", "GRAPHQL_VALIDATION_FAILED", "nope")

	// A subscription its resolver refuses fails with an error message (the
	// operation's error, not a result), and no complete follows it.
	bc := h.connect(graphqlTransportWS.name, bob)
	anon := h.connect(graphqlTransportWS.name, "")
	for _, r := range []struct {
		c                *client
		query, code, msg string
		vars             map[string]any
	}{
		{bc, roomEvents, "FORBIDDEN", `"path":["roomEvents"]`, map[string]any{"r": "hall"}},
		{bc, roomEvents, "NOT_FOUND", `"path":["roomEvents"]`, map[string]any{"r": "nowhere"}},
		{anon, `subscription { inboxEvents { kind } }`, "UNAUTHENTICATED", `"path":["inboxEvents"]`, nil},
	} {
		r.c.subscribe(graphqlTransportWS, "f", r.query, r.vars)
		m := r.c.read()
		if m.Type != msgError || m.ID != "f" || !strings.HasPrefix(string(m.Payload), "[") ||
			!strings.Contains(string(m.Payload), `"code":"`+r.code+`"`) || !strings.Contains(string(m.Payload), r.msg) {
			t.Fatalf("refused subscription: got %+v %s, want an error message with %s", m, m.Payload, r.code)
		}
		r.c.send(message{Type: msgPing})
		if m := r.c.read(); m.Type != msgPong {
			t.Fatalf("after the error: got %+v, want only the pong", m)
		}
	}

	// The limit of operations per connection, and the ids freed by complete.
	before := h.open()
	c.subscribe(graphqlTransportWS, "1", roomEvents, map[string]any{"r": "hall"})
	c.subscribe(graphqlTransportWS, "2", roomEvents, map[string]any{"r": "hall"})
	waitFor(t, "two streams", func() bool { return h.open() == before+2 })
	c.subscribe(graphqlTransportWS, "3", roomEvents, map[string]any{"r": "hall"})
	wantError("3", "BAD_USER_INPUT", "too many operations")
	c.send(message{ID: "2", Type: "complete"})
	waitFor(t, "the stream of 2 to end", func() bool { return h.open() == before+1 })
	c.subscribe(graphqlTransportWS, "2", roomEvents, map[string]any{"r": "hall"})
	waitFor(t, "two streams again", func() bool { return h.open() == before+2 })

	// Queries run over the socket too, and pings are answered.
	c.send(message{ID: "1", Type: "complete"})
	waitFor(t, "the stream of 1 to end", func() bool { return h.open() == before+1 })
	c.send(message{ID: "me", Type: "subscribe", Payload: mustJSON(map[string]any{"query": `{ me { login } }`})})
	if m := c.read(); m.Type != "next" || m.ID != "me" || string(m.Payload) != `{"data":{"me":{"login":"alice"}}}` {
		t.Fatalf("query: got %+v %s", m, m.Payload)
	}
	if m := c.read(); m.Type != msgComplete || m.ID != "me" {
		t.Fatalf("query: want complete, got %+v", m)
	}
	c.send(message{Type: msgPing, Payload: json.RawMessage(`{"n":1}`)})
	if m := c.read(); m.Type != msgPong || string(m.Payload) != `{"n":1}` {
		t.Fatalf("ping: got %+v", m)
	}
	id := h.post(alice, "hall", "still here")
	if m := c.read(); m.Type != "next" || m.ID != "2" || !strings.Contains(string(m.Payload), id) {
		t.Fatalf("got %+v %s", m, m.Payload)
	}
}

// The legacy graphql-ws protocol: keepalives, start/stop, terminate.
func TestLegacyProtocol(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.KeepAlive = 50 * time.Millisecond })
	alice := h.user("alice")
	h.room("hall", "alice")
	c := h.dial("") // no subprotocol: graphql-ws, as gqlgen did
	c.send(message{Type: msgConnectionInit, Payload: mustJSON(map[string]any{"token": alice})})
	if m, _ := c.next(time.Second); m.Type != msgConnectionAck {
		t.Fatalf("got %+v", m)
	}
	kas := 0
	for kas < 3 {
		m, err := c.next(time.Second)
		if err != nil || m.Type != "ka" {
			t.Fatalf("want keepalives, got %+v %v", m, err)
		}
		kas++
	}
	before := h.open()
	c.subscribe(graphqlWS, "1", roomEvents, map[string]any{"r": "hall"})
	waitFor(t, "the stream", func() bool { return h.open() == before+1 })
	id := h.post(alice, "hall", "hi")
	if ev := c.event(graphqlWS, "1"); ev.Message.ID != id {
		t.Fatalf("got %+v", ev)
	}
	c.send(message{ID: "1", Type: "stop"})
	waitFor(t, "the stream to stop", func() bool { return h.open() == before })
	// A start this protocol does not shape fails alone.
	c.send(message{ID: "p", Type: "start", Payload: json.RawMessage(`"not an object"`)})
	if m := c.read(); m.Type != msgError || m.ID != "p" || !strings.Contains(string(m.Payload), `"code":"BAD_USER_INPUT"`) {
		t.Fatalf("malformed start: got %+v %s", m, m.Payload)
	}
	c.send(message{Type: "connection_terminate"})
	if code, _ := c.closed(); code != closeNormal {
		t.Fatalf("terminate: got close %d", code)
	}

	// A bad token: connection_error (part of this protocol), with the coded
	// error as its payload, then 4401.
	bad := h.dial(graphqlWS.name)
	bad.send(message{Type: msgConnectionInit, Payload: mustJSON(map[string]any{"token": "forged"})})
	m := bad.read()
	var refusal struct {
		Message    string
		Extensions struct{ Code string }
	}
	if m.Type != "connection_error" || json.Unmarshal(m.Payload, &refusal) != nil ||
		refusal.Extensions.Code != "UNAUTHENTICATED" || refusal.Message == "" {
		t.Fatalf("bad token: got %+v %s, want connection_error with an UNAUTHENTICATED error", m, m.Payload)
	}
	if code, _ := bad.closed(); code != closeUnauthorized {
		t.Fatalf("bad token: got close %d, want %d", code, closeUnauthorized)
	}
}

// Shutdown closes every connection with 1001 and ends every stream.
func TestShutdownClosesConnections(t *testing.T) {
	var stop func()
	h := newHarness(t, func(c *Config) {
		ctx, cancel := contextWithCancel(c.Context)
		c.Context, stop = ctx, cancel
	})
	alice := h.user("alice")
	h.room("hall", "alice")
	before := h.open()
	var clients []*client
	for range 3 {
		c := h.connect(graphqlTransportWS.name, alice)
		c.subscribe(graphqlTransportWS, "1", roomEvents, map[string]any{"r": "hall"})
		clients = append(clients, c)
	}
	waitFor(t, "three streams", func() bool { return h.open() == before+3 })
	stop()
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Go(func() {
			if code, _ := c.closed(); code != closeGoingAway {
				t.Errorf("got close %d, want %d", code, closeGoingAway)
			}
		})
	}
	wg.Wait()
	waitFor(t, "streams to end", func() bool { return h.open() == before })
}

// An idle room subscription holds no goroutine: nothing but its
// connection's wait for the client (the poller, or a reader) stays. Events still arrive, in order, on every subscription.
func TestIdleSubscriptionsHoldNoGoroutine(t *testing.T) {
	h := newHarness(t, nil)
	alice := h.user("alice")
	h.room("hall", "alice")
	c := h.connect(graphqlTransportWS.name, alice)
	before := h.open()
	const subs = 20
	for i := range subs {
		c.subscribe(graphqlTransportWS, fmt.Sprint(i), roomEvents, map[string]any{"r": "hall"})
	}
	waitFor(t, "the streams", func() bool { return h.open() == before+subs })
	// Counted by what they run, not against a baseline of the process's
	// goroutines, which other tests' leftovers would blur.
	idle := func() bool {
		return goroutinesRunning("live.(*roomSubscription).pump") == 0 && goroutinesRunning("live.(*conn).drain") == 0
	}
	waitFor(t, fmt.Sprint(subs, " idle subscriptions to hold no goroutine"), idle)
	for round := range 3 {
		id := h.post(alice, "hall", fmt.Sprint("round ", round))
		got := map[string]bool{}
		for range subs {
			m := c.read()
			var p struct {
				Data struct{ RoomEvents roomEvent }
			}
			if err := json.Unmarshal(m.Payload, &p); err != nil || m.Type != graphqlTransportWS.next || p.Data.RoomEvents.Message.ID != id {
				t.Fatalf("round %d: got %s %s (%v), want the post %s", round, m.Type, m.Payload, err, id)
			}
			got[m.ID] = true
		}
		if len(got) != subs {
			t.Fatalf("round %d reached %d of %d subscriptions", round, len(got), subs)
		}
		waitFor(t, fmt.Sprint("the goroutines of round ", round, " to exit"), idle)
	}
}

// An idle connection holds no goroutine: the poller holds it, and hands it
// to a reader when its client sends something, which then gives it back.
func TestIdleConnectionsHoldNoGoroutine(t *testing.T) {
	h := newHarness(t, nil)
	if h.live.poller == nil {
		t.Skip("no poller on this platform: each connection keeps a reader goroutine")
	}
	alice := h.user("alice")
	h.room("hall", "alice")
	readers := func() bool {
		return goroutinesRunning("live.(*conn).readLoop") == 0 && goroutinesRunning("live.(*conn).listen") == 0 &&
			goroutinesRunning("live.(*conn).serve") == 0
	}
	waitFor(t, "other tests' readers to end", readers)
	clients := make([]*client, 10)
	open := h.open()
	for i := range clients {
		clients[i] = h.connect(graphqlTransportWS.name, alice)
		clients[i].subscribe(graphqlTransportWS, "1", roomEvents, map[string]any{"r": "hall"})
	}
	waitFor(t, "the streams", func() bool { return h.open() == open+int64(len(clients)) })
	waitFor(t, "idle connections to hold no reader", readers)
	for round := range 3 {
		for i, c := range clients {
			c.send(message{Type: msgPing, Payload: mustJSON(map[string]any{"n": fmt.Sprint(round, i)})})
		}
		for i, c := range clients {
			if m := c.read(); m.Type != msgPong || !strings.Contains(string(m.Payload), fmt.Sprint(round, i)) {
				t.Fatalf("round %d, client %d: got %+v %s, want its pong", round, i, m, m.Payload)
			}
		}
		waitFor(t, fmt.Sprint("the readers of round ", round, " to end"), readers)
	}
	id := h.post(alice, "hall", "still subscribed")
	for i, c := range clients {
		if ev := c.event(graphqlTransportWS, "1"); ev.Message == nil || ev.Message.ID != id {
			t.Fatalf("client %d: got %+v, want the post", i, ev)
		}
	}
}

// A client that stops reading is disconnected once a write to it has waited
// WriteTimeout, and its subscription is released: it holds neither the
// room's other subscribers nor server memory.
func TestStalledClientIsDisconnected(t *testing.T) {
	// Small socket buffers on both ends, so that the server's writes block
	// soon.
	const bufferSize = 4096
	h := newHarnessOn(t, func(c *Config) { c.WriteTimeout = 200 * time.Millisecond }, func(ln net.Listener) net.Listener {
		return sendBufferListener{ln, bufferSize}
	})
	alice := h.user("alice")
	h.room("hall", "alice")
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			err = c.(*net.TCPConn).SetReadBuffer(bufferSize)
		}
		return c, err
	}
	httpClient := &http.Client{Transport: &http.Transport{DialContext: dial}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(h.url, "http"), &websocket.DialOptions{HTTPClient: httpClient, Subprotocols: []string{graphqlTransportWS.name}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	ws.SetReadLimit(1 << 20)
	c := &client{t: t, ws: ws}
	c.send(message{Type: msgConnectionInit, Payload: mustJSON(map[string]any{"token": alice})})
	if m := c.read(); m.Type != msgConnectionAck {
		t.Fatalf("got %+v, want connection_ack", m)
	}
	before := h.open()
	c.subscribe(graphqlTransportWS, "s", roomEvents, map[string]any{"r": "hall"})
	waitFor(t, "the stream", func() bool { return h.open() == before+1 })

	// The client reads nothing from here on. Fewer posts than the
	// subscriber queue holds, so that only the write timeout can end it.
	big := strings.Repeat("x", 4000)
	posts := 0
	for h.open() > before {
		if posts == 250 {
			t.Fatalf("the stalled client's stream is still open after %d posts of %d bytes", posts, len(big))
		}
		h.post(alice, "hall", big)
		posts++
		time.Sleep(2 * time.Millisecond) // paced, so the watchdog has time to act first
	}
	// The server dropped the connection: what was sent before is read,
	// then the connection ends.
	for {
		if _, err := c.next(5 * time.Second); err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("the connection is still open: %v", err)
			}
			break
		}
	}
	t.Logf("disconnected after %d posts", posts)
}

// sendBufferListener gives accepted connections a fixed send buffer.
type sendBufferListener struct {
	net.Listener
	size int
}

func (l sendBufferListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		err = c.(*net.TCPConn).SetWriteBuffer(l.size)
	}
	return c, err
}

// An operation's last message (error or complete) comes after its id and
// its place under the operation limit are free: a client may reuse both as
// soon as it reads it.
func TestEndedOperationFreesItsIDBeforeItsLastMessage(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxOperations = 1 })
	alice := h.user("alice")
	c := h.connect(graphqlTransportWS.name, alice)
	for i := range 200 {
		c.subscribe(graphqlTransportWS, "a", `{ nope }`, nil)
		if m := c.read(); m.Type != msgError || m.ID != "a" || !strings.Contains(string(m.Payload), "nope") {
			t.Fatalf("round %d, invalid query: got %+v %s, want its error", i, m, m.Payload)
		}
		c.subscribe(graphqlTransportWS, "a", `{ me { login } }`, nil)
		if m := c.read(); m.Type != graphqlTransportWS.next || m.ID != "a" {
			t.Fatalf("round %d, the id and the slot reused at once: got %+v %s, want a result", i, m, m.Payload)
		}
		if m := c.read(); m.Type != msgComplete || m.ID != "a" {
			t.Fatalf("round %d: got %+v, want complete", i, m)
		}
	}
}

// Connections without a user are capped: those that have not sent
// connection_init and the anonymous ones. Over the cap an upgrade is refused
// with a coded 503; a connection frees its place when a user authenticates
// on it, or when it ends (closed by the client, or at the init timeout).
func TestUnauthenticatedConnectionsAreCapped(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxUnauthenticated = 2; c.InitTimeout = 300 * time.Millisecond })
	alice := h.user("alice")
	held := func() int64 { return h.live.unauthenticated.Load() }
	refused := func() bool {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		ws, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(h.url, "http"), &websocket.DialOptions{Subprotocols: []string{graphqlTransportWS.name}})
		if err == nil {
			_ = ws.CloseNow()
			return false
		}
		if resp == nil || resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("refused upgrade: got %v, %+v; want 503 with Retry-After", err, resp)
		}
		var body struct {
			Errors []struct {
				Message    string
				Extensions struct{ Code string }
			}
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || len(body.Errors) != 1 ||
			body.Errors[0].Extensions.Code != "TOO_MANY_CONNECTIONS" || body.Errors[0].Message == "" {
			t.Fatalf("refused upgrade: body %+v (%v), want one TOO_MANY_CONNECTIONS error", body, err)
		}
		return true
	}

	first := h.dial(graphqlTransportWS.name)
	anon := h.connect(graphqlTransportWS.name, "") // anonymous: keeps its place
	if !refused() {
		t.Fatal("a third unauthenticated connection was accepted over a cap of 2")
	}
	// Authenticating frees a place.
	first.send(message{Type: msgConnectionInit, Payload: mustJSON(map[string]any{"token": alice})})
	if m := first.read(); m.Type != msgConnectionAck {
		t.Fatalf("got %+v", m)
	}
	if held() != 1 {
		t.Fatalf("after authenticating: %d places held, want 1", held())
	}
	late := h.dial(graphqlTransportWS.name)
	if !refused() {
		t.Fatal("accepted over the cap again")
	}
	// The counts of /metrics: two refusals; three connections accepted,
	// all open. The client's dial returns once it has read the upgrade's
	// response, which may be before the server's handler counts the
	// connection it goes on to serve.
	waitFor(t, "2 refused, 3 graphql-transport-ws connections open", func() bool {
		st := h.live.Stats()
		return st.Refused == 2 && st.Protocols[0].Connections == 3 && st.Protocols[0].ConnectionsOpen == 3
	})
	// The init timeout ends a connection and frees its place.
	if code, _ := late.closed(); code != closeInitTimeout {
		t.Fatalf("got close %d, want %d", code, closeInitTimeout)
	}
	waitFor(t, "the timed-out connection's place", func() bool { return held() == 1 })
	// So does a client that leaves.
	_ = anon.ws.Close(websocket.StatusNormalClosure, "")
	waitFor(t, "the anonymous connection's place", func() bool { return held() == 0 })
	h.connect(graphqlTransportWS.name, alice)
	if held() != 0 {
		t.Fatalf("an authenticated connection holds a place: %d", held())
	}
}

// goroutinesRunning counts the goroutines with fn on their stack.
func goroutinesRunning(fn string) int {
	buf := make([]byte, 1<<20)
	return strings.Count(string(buf[:runtime.Stack(buf, true)]), fn+"(")
}

// A session that ends closes its user's connections with 4401, and none of
// their operations gets an error first: a client takes an operation's error
// as final, but reconnects after 4401 with fresh credentials and starts
// its operations again. The operations' streams watch the session too, and
// may tell first (without SessionEnd, only they tell); another session's
// connection stays.
func TestSessionEndClosesWithoutOperationErrors(t *testing.T) {
	for _, connectionWatches := range []bool{false, true} {
		t.Run(fmt.Sprintf("connection watches %v", connectionWatches), func(t *testing.T) {
			var h *harness
			h = newHarness(t, func(c *Config) {
				c.KeepAlive = time.Hour
				if connectionWatches {
					c.SessionEnd = func(ctx context.Context, end func(error)) func() { return h.sessions.OnEnd(ctx, end) }
				}
			})
			h.user("alice")
			h.user("bob")
			h.room("hall", "alice", "bob")
			alice, session := h.session("alice")
			bob, _ := h.session("bob")
			const syncQuery = `subscription { sync { cursor caughtUp } }`
			var clients []*client
			var protos []*protocol
			for _, proto := range []*protocol{graphqlTransportWS, graphqlWS} {
				before := h.open()
				c := h.connect(proto.name, alice)
				c.subscribe(proto, "room", roomEvents, map[string]any{"r": "hall"})
				waitFor(t, "the room stream", func() bool { return h.open() == before+1 })
				for _, id := range []string{"sync1", "sync2"} {
					c.subscribe(proto, id, syncQuery, nil)
					// Its first page: the stream watches the session.
					if m := c.read(); m.Type != proto.next || m.ID != id || !strings.Contains(string(m.Payload), `"cursor"`) {
						t.Fatalf("%s: got %+v %s, want the first sync page", proto.name, m, m.Payload)
					}
				}
				clients, protos = append(clients, c), append(protos, proto)
			}
			other := h.connect(graphqlTransportWS.name, bob)
			other.subscribe(graphqlTransportWS, "sync", syncQuery, nil)
			other.read()

			if err := h.sessions.End(context.Background(), "alice", session); err != nil {
				t.Fatal(err)
			}
			for i, c := range clients {
				if code, reason := c.closed(); code != closeUnauthorized || !strings.Contains(reason, "session has ended") {
					t.Errorf("%s: closed with %d %q, want %d for the session's end", protos[i].name, code, reason, closeUnauthorized)
				}
			}
			other.send(message{Type: msgPing})
			if m := other.read(); m.Type != msgPong {
				t.Fatalf("another session's connection: got %+v %s, want the pong", m, m.Payload)
			}
		})
	}
}

// watchedConnection is a harness tuned by tune whose connections watch their
// session, and a connection of alice's session, open and answering.
func watchedConnection(t *testing.T, tune func(*Config)) (*harness, *client) {
	var h *harness
	h = newHarness(t, func(c *Config) {
		c.SessionEnd = func(ctx context.Context, end func(error)) func() { return h.sessions.OnEnd(ctx, end) }
		if tune != nil {
			tune(c)
		}
	})
	h.user("alice")
	alice, _ := h.session("alice")
	c := h.connect(graphqlTransportWS.name, alice)
	c.send(message{Type: msgPing})
	if m := c.read(); m.Type != msgPong {
		t.Fatalf("got %+v, want the pong", m)
	}
	return h, c
}

// A connection watching its session stops watching when it ends: nothing
// of it stays in the sessions' set.
func TestEndedConnectionStopsWatching(t *testing.T) {
	h, c := watchedConnection(t, nil)
	if n := h.sessions.Watching(); n != 1 {
		t.Fatalf("watching %d sessions with the connection open, want 1", n)
	}
	_ = c.ws.Close(websocket.StatusNormalClosure, "")
	waitFor(t, "the watch to stop", func() bool { return h.sessions.Watching() == 0 })
}

// A connection the server closes leaves presence and stops watching its
// session as the close begins, not once its client answers the close
// handshake, which a client that reads no more never does.
func TestClosingConnectionLeavesAtOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var left atomic.Int32
	h, _ := watchedConnection(t, func(c *Config) {
		c.Context = ctx
		c.CloseTimeout = time.Hour
		c.Connected = func(context.Context) func() { return func() { left.Add(1) } }
	})
	cancel() // the server shuts down; the client reads nothing more
	waitFor(t, "the connection to leave presence", func() bool { return left.Load() == 1 })
	waitFor(t, "the watch to stop", func() bool { return h.sessions.Watching() == 0 })
	if held, _ := h.live.Held(); held != 1 {
		t.Fatalf("%d connections held, want the closing one", held)
	}
}

// parked is how many drainers are parked.
func (d *drainers) parkedNow() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.parked)
}

// A drainer that delivered to a connection parks and delivers the next
// events, rather than a new goroutine each time; the transport's end stops
// the parked ones.
func TestDrainersAreReused(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h := newHarness(t, func(c *Config) { c.Context = ctx })
	alice := h.user("alice")
	h.room("hall", "alice")
	c := h.connect(graphqlTransportWS.name, alice)
	before := h.open()
	c.subscribe(graphqlTransportWS, "1", roomEvents, map[string]any{"r": "hall"})
	waitFor(t, "the stream", func() bool { return h.open() == before+1 })
	d := &h.live.drainers
	for round := range 5 {
		id := h.post(alice, "hall", fmt.Sprint("round ", round))
		if ev := c.event(graphqlTransportWS, "1"); ev.Message == nil || ev.Message.ID != id {
			t.Fatalf("round %d: got %+v, want the post", round, ev)
		}
		waitFor(t, "the drainer to park", func() bool { return d.parkedNow() == 1 })
	}
	cancel()
	waitFor(t, "the parked drainers to stop", func() bool { return d.parkedNow() == 0 })
	d.mu.Lock()
	stopped := d.stopped
	d.mu.Unlock()
	if !stopped {
		t.Fatal("the transport ended and its drainers still park")
	}
}

// Drainers left parked for a whole tick end at the next one; those handed a
// connection since stay.
func TestDrainersTrimTheUnused(t *testing.T) {
	d := &drainers{}
	for range 3 {
		go d.run(handOff{c: &conn{}}) // nothing pending: drains at once, then parks
	}
	waitFor(t, "three drainers to park", func() bool { return d.parkedNow() == 3 })
	d.trim() // the first tick: none was parked a whole tick yet
	if n := d.parkedNow(); n != 3 {
		t.Fatalf("the first trim left %d parked, want 3", n)
	}
	d.drain(&conn{}) // one is handed a connection, and parks again
	waitFor(t, "the drainer to park again", func() bool { return d.parkedNow() == 3 })
	d.trim()
	if n := d.parkedNow(); n != 1 {
		t.Fatalf("after a tick in which one of 3 was used: %d parked, want 1", n)
	}
	d.trim()
	if n := d.parkedNow(); n != 0 {
		t.Fatalf("after a tick in which none was used: %d parked, want 0", n)
	}
}

// TestOpenConnectionsKeepTheirPlaces: connections leaving in any order
// leave the transport's list holding exactly those still open, each knowing
// its place; one that left, or was never tracked, leaves nothing to undo;
// and a closed transport tracks none.
func TestOpenConnectionsKeepTheirPlaces(t *testing.T) {
	tr := &Transport{}
	var conns []*conn
	for range 50 {
		c := &conn{at: -1}
		if !tr.track(c) {
			t.Fatal("an open transport refused a connection")
		}
		conns = append(conns, c)
	}
	open := map[*conn]bool{}
	for _, c := range conns {
		open[c] = true
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, i := range r.Perm(len(conns))[:35] {
		tr.untrack(conns[i])
		tr.untrack(conns[i]) // again: nothing
		delete(open, conns[i])
	}
	tr.untrack(&conn{at: -1})
	if len(tr.conns) != len(open) {
		t.Fatalf("%d connections listed, %d open", len(tr.conns), len(open))
	}
	for i, c := range tr.conns {
		if !open[c] || c.at != i {
			t.Fatalf("listed at %d: a connection open %v that thinks it is at %d", i, open[c], c.at)
		}
	}
	tr.closed = true
	if tr.track(&conn{at: -1}) {
		t.Error("a closed transport tracked a connection")
	}
}

// TestOperationsFindAndRemove: a connection's operations are found by id,
// and removing one, or one not there, leaves the others in their order.
func TestOperationsFindAndRemove(t *testing.T) {
	a, b, c := &operation{id: "a"}, &operation{id: "b"}, &operation{id: "c"}
	ops := operations{a, b, c}
	if ops.find("b") != b || ops.find("x") != nil {
		t.Fatal("find returned the wrong operation")
	}
	ops = ops.without(&operation{id: "b"}) // same id, another operation
	ops = ops.without(nil)
	if !slices.Equal(ops, operations{a, b, c}) {
		t.Fatalf("removing an operation not there changed them: %v", ops)
	}
	ops = ops.without(b)
	if !slices.Equal(ops, operations{a, c}) || ops.find("b") != nil {
		t.Fatalf("after removing b: %v", ops)
	}
}
