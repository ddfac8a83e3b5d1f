package live

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/coder/websocket"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/killrchat/chatql/auth"
	"github.com/killrchat/chatql/broker"
	"github.com/killrchat/chatql/chat"
	"github.com/killrchat/chatql/graph"
	"github.com/killrchat/chatql/resolvers"
	"github.com/killrchat/chatql/store"
	"github.com/killrchat/chatql/store/embedded"
	"github.com/killrchat/chatql/stream"
)

// harness serves the schema with this transport (and POST for mutations)
// on an embedded store and an in-process broker.
type harness struct {
	t        testing.TB
	url      string
	live     *Transport
	tokens   *auth.Tokens
	sessions *auth.Sessions
	store    store.Store
	broker   broker.Broker
	// streams counts the harness's open room streams.
	streams *stream.Source
}

func newHarness(t testing.TB, tune func(*Config)) *harness {
	t.Helper()
	return newHarnessOn(t, tune, nil)
}

// newHarnessOn serves on wrap(listener) if wrap is not nil.
func newHarnessOn(t testing.TB, tune func(*Config), wrap func(net.Listener) net.Listener) *harness {
	t.Helper()
	st, err := embedded.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	br := broker.NewLocal(0)
	t.Cleanup(func() { _ = br.Close() })
	tokens, err := auth.NewTokens([]byte("0123456789abcdef0123456789abcdef"), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	src := &stream.Source{Store: st, Broker: br}
	// Runs before the store and broker close: streams end asynchronously
	// after the server and its context.
	t.Cleanup(func() { waitFor(t, "the streams to end", func() bool { return src.Open() == 0 }) })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	// Tokens from h.user have no session; those from h.session do, and the
	// resolvers' streams watch it.
	sessions, err := auth.NewSessions(ctx, auth.SessionConfig{Store: st, Tokens: tokens, Secret: []byte("0123456789abcdef0123456789abcdef"), RefreshTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	res := &resolvers.Resolver{Service: &chat.Service{Store: st, Broker: br, Streams: src, Log: log, Sessions: sessions}, Tokens: tokens}
	cfg := Config{
		Rooms:             res,
		FeedSchema:        res.FeedSchema,
		SeesHiddenContent: chat.SeesHiddenContent,
		StreamError:       resolvers.WithStreamError,
		Authenticate: func(ctx context.Context, init map[string]any) (context.Context, bool, error) {
			token, _ := init["token"].(string)
			if token == "" {
				return ctx, false, nil
			}
			if _, err := tokens.Verify(token); err != nil {
				return ctx, false, err
			}
			return tokens.Authenticate(ctx, token), true, nil
		},
		ErrorPresenter: res.ErrorPresenter,
		Context:        ctx,
		Log:            log,
	}
	if tune != nil {
		tune(&cfg)
	}
	h := &harness{t: t, live: New(cfg), tokens: tokens, sessions: sessions, store: st, broker: br, streams: src}
	gql := handler.New(graph.NewExecutableSchema(graph.Config{Resolvers: res}))
	gql.AddTransport(h.live)
	gql.AddTransport(transport.POST{})
	gql.SetQueryCache(lru.New[*ast.QueryDocument](100))
	gql.SetErrorPresenter(res.ErrorPresenter)
	srv := httptest.NewUnstartedServer(tokens.Middleware(gql))
	if wrap != nil {
		srv.Listener = wrap(srv.Listener)
	}
	srv.Start()
	t.Cleanup(srv.Close)
	h.url = srv.URL
	return h
}

// user creates an account and returns its token.
func (h *harness) user(login string) string {
	h.t.Helper()
	if err := h.store.CreateUser(context.Background(), store.Account{User: store.User{UserRef: store.UserRef{Login: login, Firstname: login}}, PassHash: []byte("x")}); err != nil {
		h.t.Fatal(err)
	}
	token, _, err := h.tokens.Issue(store.UserRef{Login: login, Firstname: login})
	if err != nil {
		h.t.Fatal(err)
	}
	return token
}

// session starts a session of the user login (created by h.user) and
// returns its access token and its id.
func (h *harness) session(login string) (token, id string) {
	h.t.Helper()
	pair, err := h.sessions.Start(context.Background(), store.UserRef{Login: login, Firstname: login})
	if err != nil {
		h.t.Fatal(err)
	}
	return pair.AccessToken, pair.Session
}

// room creates a room of creator that the others join.
func (h *harness) room(name string, creator string, others ...string) {
	h.t.Helper()
	ctx := context.Background()
	if err := h.store.CreateRoom(ctx, store.Room{Name: name, Creator: store.UserRef{Login: creator}, CreatedAt: time.Now(), Participants: []store.UserRef{{Login: creator}}}); err != nil {
		h.t.Fatal(err)
	}
	for _, o := range others {
		if _, _, err := h.store.JoinRoom(ctx, name, store.UserRef{Login: o}); err != nil {
			h.t.Fatal(err)
		}
	}
}

// post posts through the API, so the event is published as in production.
func (h *harness) post(token, room, content string) string {
	h.t.Helper()
	var out struct {
		PostMessage struct{ ID string }
	}
	h.do(token, `mutation($r: String!, $c: String!) { postMessage(room: $r, content: $c) { id } }`, map[string]any{"r": room, "c": content}, &out)
	return out.PostMessage.ID
}

func (h *harness) do(token, query string, vars map[string]any, out any) {
	h.t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, err := http.NewRequest("POST", h.url, bytes.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer res.Body.Close()
	resp, err := io.ReadAll(res.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	var r struct {
		Data   json.RawMessage
		Errors []json.RawMessage
	}
	if err := json.Unmarshal(resp, &r); err != nil || len(r.Errors) > 0 {
		h.t.Fatalf("%s: %s (%v)", query, resp, err)
	}
	if out != nil {
		if err := json.Unmarshal(r.Data, out); err != nil {
			h.t.Fatal(err)
		}
	}
}

// client is a raw websocket client: it sends and reads protocol messages
// as they are, so tests see exactly what the server does.
type client struct {
	t  testing.TB
	ws *websocket.Conn
}

func (h *harness) dial(protocol string) *client {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	opts := &websocket.DialOptions{}
	if protocol != "" {
		opts.Subprotocols = []string{protocol}
	}
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(h.url, "http"), opts)
	if err != nil {
		h.t.Fatal(err)
	}
	ws.SetReadLimit(1 << 20)
	h.t.Cleanup(func() { _ = ws.CloseNow() })
	return &client{t: h.t, ws: ws}
}

// connect dials and completes connection_init with token.
func (h *harness) connect(protocol, token string) *client {
	h.t.Helper()
	c := h.dial(protocol)
	c.send(message{Type: msgConnectionInit, Payload: mustJSON(map[string]any{"token": token})})
	if m := c.read(); m.Type != msgConnectionAck {
		h.t.Fatalf("after connection_init: got %+v, want connection_ack", m)
	}
	return c
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func (c *client) send(m message) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.ws.Write(ctx, websocket.MessageText, mustJSON(m)); err != nil {
		c.t.Fatalf("send %s: %v", m.Type, err)
	}
}

func (c *client) subscribe(protocol *protocol, id, query string, vars map[string]any) {
	c.t.Helper()
	c.send(message{ID: id, Type: protocol.subscribe, Payload: mustJSON(map[string]any{"query": query, "variables": vars})})
}

// read returns the next message, skipping graphql-ws keepalives.
func (c *client) read() message {
	c.t.Helper()
	for {
		m, err := c.next(5 * time.Second)
		if err != nil {
			c.t.Fatalf("read: %v", err)
		}
		if m.Type != "ka" {
			return m
		}
	}
}

func (c *client) next(timeout time.Duration) (message, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	_, b, err := c.ws.Read(ctx)
	if err != nil {
		return message{}, err
	}
	var m message
	if err := json.Unmarshal(b, &m); err != nil {
		c.t.Fatalf("server sent %q: %v", b, err)
	}
	return m, nil
}

// closed waits for the server to close the connection and returns the
// close frame's code and reason.
func (c *client) closed() (closeCode, string) {
	c.t.Helper()
	for {
		m, err := c.next(5 * time.Second)
		if err != nil {
			var ce websocket.CloseError
			if !errors.As(err, &ce) {
				c.t.Fatalf("want a close frame, got %v", err)
			}
			return closeCode(ce.Code), ce.Reason
		}
		if m.Type != "ka" {
			c.t.Fatalf("want the connection closed, got %+v %s", m, m.Payload)
		}
	}
}

const roomEvents = `subscription($r: String!, $after: String) { roomEvents(room: $r, after: $after) { kind cursor message { id content author { login } } user { login } } }`

type roomEvent struct {
	Kind    string
	Cursor  string
	Message *struct {
		ID, Content string
		Author      struct{ Login string }
	}
	User struct{ Login string }
}

// event reads the next result of operation id as a roomEvents event.
func (c *client) event(protocol *protocol, id string) roomEvent {
	c.t.Helper()
	m := c.read()
	if m.Type != protocol.next || m.ID != id {
		c.t.Fatalf("want %s of %s, got %+v (payload %s)", protocol.next, id, m, m.Payload)
	}
	var r struct {
		Data struct {
			RoomEvents roomEvent
			Alias      roomEvent
		}
		Errors []json.RawMessage
	}
	if err := json.Unmarshal(m.Payload, &r); err != nil || len(r.Errors) > 0 {
		c.t.Fatalf("result %s: %v", m.Payload, err)
	}
	if r.Data.Alias.Kind != "" {
		return r.Data.Alias
	}
	return r.Data.RoomEvents
}

// waitFor polls cond until it holds or the test times out.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// open counts the harness's open room streams.
func (h *harness) open() int64 { return h.streams.Open() }

func (h *harness) encoderCount() (encoders, encodes int) {
	h.live.encoders.mu.Lock()
	defer h.live.encoders.mu.Unlock()
	for _, enc := range h.live.encoders.byKey {
		enc.mu.Lock()
		encodes += enc.encodes
		enc.mu.Unlock()
	}
	return len(h.live.encoders.byKey), encodes
}

func contextWithCancel(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(parent)
	return ctx, cancel
}
