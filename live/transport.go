// Package live serves GraphQL subscriptions (and any other operation) over
// websockets, in both subprotocols clients speak: graphql-transport-ws and
// the legacy graphql-ws.
//
// It exists for the roomEvents fan-out: gqlgen's own websocket transport
// executes and encodes every event once per subscriber, with four
// goroutines per subscription. Here a room event is executed and encoded
// once per selection set and the same bytes are written to every
// subscriber (see encoder), a connection holds one goroutine plus one per
// active operation, and its buffers are small (see socket.go). Other
// operations run through gqlgen's executor as usual.
package live

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/killrchat/chatql/apierror"
	"github.com/killrchat/chatql/store"
)

// Config configures a Transport.
type Config struct {
	// Rooms opens room event streams (the resolvers).
	Rooms RoomStreams
	// FeedSchema returns the API's schema with the roomEvents subscription
	// serving the events given to feed, one before each execution, instead
	// of a room (see resolvers.FeedSchema): a room event is executed in it
	// once per selection set, for every subscriber. feed must not block.
	FeedSchema func() (_ graphql.ExecutableSchema, feed func(*store.Event))
	// SeesHiddenContent reports whether viewer may read the content of the
	// hidden message m (chat.SeesHiddenContent); nil if nobody may.
	SeesHiddenContent func(m *store.Message, viewer store.UserRef) bool
	// StreamError, if set, returns a context in which the stream of a
	// subscription run by gqlgen's executor records why it failed, and a
	// function that reads it once the stream has ended
	// (resolvers.WithStreamError): the operation then fails with that
	// error instead of completing.
	StreamError func(ctx context.Context) (_ context.Context, err func() error)
	// Scope, if set, names what of a subscriber's connection context an
	// encoding depends on besides the viewer (the host the client reached
	// the server at, which files' signed URLs start with), and returns a
	// context that carries it: subscribers share an encoder only within
	// one scope, whose encodings run in the context it returns.
	Scope func(ctx context.Context) (scope string, carry func(context.Context) context.Context)
	// ProfileEpoch changes whenever the users' names an event shows may
	// have changed (resolvers.Profiles.Epoch): an event encoded in an older
	// epoch is encoded again. Nil if names never change.
	ProfileEpoch func() uint64
	// Authenticate reads the token of a connection_init payload and returns
	// the context operations run in, and whether it names a user (a
	// connection without a token is anonymous). An error, presented by
	// ErrorPresenter, closes the connection: with 4401 and the error's
	// message, or with 4500 if it is INTERNAL (the check itself failed).
	Authenticate func(ctx context.Context, init map[string]any) (_ context.Context, user bool, _ error)
	// SessionEnd, if set, is given the context Authenticate returned and
	// calls end when the connection's credentials end (the token expires,
	// the session is revoked), unless stop was called first; stop is nil if
	// they never end (auth.Sessions.OnEnd). The connection is then closed
	// with 4401 and the cause as reason.
	SessionEnd func(ctx context.Context, end func(cause error)) (stop func())
	// Connected, if set, is told of each connection that a user
	// authenticated, with the context Authenticate returned, and returns
	// what to call once when the connection ends (nil: nothing): presence
	// counts it.
	Connected func(ctx context.Context) (disconnected func())
	// ConnectionContext, if set, returns the context a connection keeps for
	// its life, which its operations run in, from its upgrade request: the
	// request's values they read, without the request's own state (net/http's
	// and the handler's), which would otherwise stay with every connection.
	// The request's context without its cancellation if nil.
	ConnectionContext func(r *http.Request) context.Context
	// Origins are the web pages that may open a websocket, besides those
	// of the server's own host.
	Origins Origins
	// InitTimeout is how long a client has to send connection_init.
	InitTimeout time.Duration
	// KeepAlive is the interval of graphql-ws "ka" messages (0: none).
	KeepAlive time.Duration
	// WriteTimeout bounds each write; a client that does not read for
	// that long is disconnected (checked every quarter of it).
	WriteTimeout time.Duration
	// ReadLimit caps the size of one client message.
	ReadLimit int64
	// CloseTimeout bounds a close handshake the server begins: the write
	// of its close frame, and the wait for the client's. 5 s when 0.
	CloseTimeout time.Duration
	// ErrorPresenter gives the errors that end a stream their code (the
	// handler's presenter; gqlgen's default if nil).
	ErrorPresenter graphql.ErrorPresenterFunc
	// MaxOperations caps the operations running on one connection.
	MaxOperations int
	// MaxUnauthenticated caps the connections open without a user: those
	// that have not yet sent connection_init (each for InitTimeout at
	// most), and the anonymous ones. Upgrades over it are refused with 503.
	MaxUnauthenticated int
	// MaxFramesPerWrite caps the frames a connection gathers into one
	// write(2) when several of its events are queued (a lone event is
	// written at once; a batch is also written at 32 KiB); 1 writes every
	// frame on its own. 32 when 0.
	MaxFramesPerWrite int
	// WriteDelay spaces a connection's writes of events: an event that
	// comes within WriteDelay of the connection's last write waits,
	// WriteDelay at most, and the events of that wait go out together
	// (see delayedDrains): fewer writes where events come often, each
	// later by up to WriteDelay; an event after a quiet spell goes at
	// once. 0, the default, writes every event at once.
	WriteDelay time.Duration
	// WriteDelayWhenBusy applies WriteDelay only while deliveries wait
	// for a CPU (busyGate): with cores to spare every event goes at once.
	WriteDelayWhenBusy bool
	// Context ends every connection when done (server shutdown).
	Context context.Context
	Log     *slog.Logger
}

// Transport is the websocket transport; add it to the gqlgen handler.
type Transport struct {
	cfg    Config
	limits socketLimits
	// poller holds the idle connections (idleConns); nil where there is
	// none, and each connection keeps a reader goroutine.
	poller   *poller
	encoders encoders
	drainers drainers
	delayed  *delayedDrains // nil: no Config.WriteDelay
	// unauthenticated counts the connections that hold a place under
	// cfg.MaxUnauthenticated.
	unauthenticated atomic.Int64
	// counts are the connections, subscriptions and deliveries of each
	// subprotocol, by protocol index; writeTimeouts the connections the
	// watchdog closed (see Stats).
	counts        [len(protocols)]protocolCounts
	writeTimeouts atomic.Uint64
	refused       atomic.Uint64 // upgrades refused over MaxUnauthenticated

	mu     sync.Mutex
	conns  []*conn // open connections, for the write watchdog and shutdown (see conn.at)
	closed bool    // cfg.Context is done: no new connections
}

// New returns a transport with cfg; zero durations and limits take defaults.
func New(cfg Config) *Transport {
	if cfg.InitTimeout <= 0 {
		cfg.InitTimeout = 10 * time.Second
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 10 * time.Second
	}
	if cfg.ReadLimit <= 0 {
		cfg.ReadLimit = 1 << 20
	}
	if cfg.CloseTimeout <= 0 {
		cfg.CloseTimeout = 5 * time.Second
	}
	if cfg.ConnectionContext == nil {
		cfg.ConnectionContext = func(r *http.Request) context.Context { return context.WithoutCancel(r.Context()) }
	}
	if cfg.MaxOperations <= 0 {
		cfg.MaxOperations = 100
	}
	if cfg.MaxUnauthenticated <= 0 {
		cfg.MaxUnauthenticated = 1000
	}
	if cfg.MaxFramesPerWrite <= 0 {
		cfg.MaxFramesPerWrite = defaultBatchFrames
	}
	if cfg.Context == nil {
		cfg.Context = context.Background()
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.ErrorPresenter == nil {
		cfg.ErrorPresenter = graphql.DefaultErrorPresenter
	}
	if cfg.SeesHiddenContent == nil {
		cfg.SeesHiddenContent = func(*store.Message, store.UserRef) bool { return false }
	}
	if cfg.StreamError == nil {
		cfg.StreamError = func(ctx context.Context) (context.Context, func() error) {
			return ctx, func() error { return nil }
		}
	}
	t := &Transport{cfg: cfg, limits: socketLimits{cfg.MaxFramesPerWrite, cfg.ReadLimit, cfg.CloseTimeout}, poller: idleConns(), encoders: encoders{
		schema: cfg.FeedSchema, errors: cfg.ErrorPresenter, epoch: cfg.ProfileEpoch, seesHidden: cfg.SeesHiddenContent,
		scope: cfg.Scope,
	}}
	if cfg.WriteDelay > 0 {
		t.delayed = &delayedDrains{delay: cfg.WriteDelay, drainers: &t.drainers}
		if cfg.WriteDelayWhenBusy {
			t.delayed.busy = &busyGate{}
			t.drainers.busy = t.delayed.busy
			go t.delayed.busy.watch(cfg.Context)
		}
	}
	go t.watch()
	return t
}

// Held reports what the transport holds now: open connections, and
// encoders shared by room subscriptions. Both are zero once every client
// has gone.
func (t *Transport) Held() (connections, encoders int) {
	t.mu.Lock()
	connections = len(t.conns)
	t.mu.Unlock()
	t.encoders.mu.Lock()
	defer t.encoders.mu.Unlock()
	return connections, len(t.encoders.byKey)
}

// watch closes connections whose write has waited longer than
// WriteTimeout (the client stopped reading), and every connection when
// cfg.Context ends. One ticker for all connections costs less than a
// deadline set and cleared around every write.
func (t *Transport) watch() {
	tick := time.NewTicker(max(t.cfg.WriteTimeout/4, time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-t.cfg.Context.Done():
			t.mu.Lock()
			t.closed = true
			conns := slices.Clone(t.conns)
			t.mu.Unlock()
			for _, c := range conns {
				c.close(closeGoingAway, "server shutting down")
			}
			t.drainers.stop()
			return
		case now := <-tick.C:
			t.drainers.trim()
			startedBefore := now.Add(-t.cfg.WriteTimeout).UnixNano()
			var stalled []*conn
			t.mu.Lock()
			for _, c := range t.conns {
				if since := c.socket.writing.Load(); since != 0 && since < startedBefore {
					stalled = append(stalled, c)
				}
			}
			t.mu.Unlock()
			for _, c := range stalled {
				if c.timedOut.CompareAndSwap(false, true) { // once, however long the abort takes
					t.writeTimeouts.Add(1)
				}
				t.cfg.Log.Debug("live: a write waited too long; closing the connection", "timeout", t.cfg.WriteTimeout)
				c.abort()
			}
		}
	}
}

var _ graphql.Transport = (*Transport)(nil)

// Supports claims websocket upgrades.
func (t *Transport) Supports(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

// tooManyConnections is the body of the 503 that refuses an upgrade over
// the cap of unauthenticated connections.
var tooManyConnections = []byte(`{"errors":[{"message":"too many websocket connections are waiting to authenticate; try again shortly","extensions":{"code":"` + apierror.TooManyConnections + `"}}]}` + "\n")

// Do accepts the websocket and serves it on a goroutine of its own, so the
// HTTP handler's goroutine, its request and its buffers are released. Over
// the cap of unauthenticated connections, it refuses before upgrading.
func (t *Transport) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	if t.unauthenticated.Add(1) > int64(t.cfg.MaxUnauthenticated) {
		t.unauthenticated.Add(-1)
		t.refused.Add(1)
		t.cfg.Log.Warn("live: refused a websocket: too many unauthenticated connections", "max", t.cfg.MaxUnauthenticated)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write(tooManyConnections)
		return
	}
	s, p := t.upgrade(w, r)
	if s == nil {
		t.unauthenticated.Add(-1)
		return // upgrade answered the request with the reason
	}
	// The request's context ends when this handler returns; the
	// connection keeps its values (an Authorization header's caller) and
	// ends with the server.
	ctx, cancel := context.WithCancel(t.cfg.ConnectionContext(r))
	c := &conn{t: t, socket: s, proto: p, exec: exec, ctx: ctx, cancel: cancel, at: -1}
	c.unauthenticated.Store(true)
	if !t.track(c) {
		c.authenticated()
		s.close(closeGoingAway, "server shutting down")
		go s.awaitClose()
		return
	}
	c.counts().connections.Add(1)
	c.counts().connectionsOpen.Add(1)
	go c.serve()
}

// track adds c to the open connections, unless the transport has closed.
func (t *Transport) track(c *conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	c.at = len(t.conns)
	t.conns = append(t.conns, c)
	return true
}

// untrack removes c from the open connections, if it is there: the last
// takes its place.
func (t *Transport) untrack(c *conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c.at < 0 {
		return
	}
	last := len(t.conns) - 1
	t.conns[c.at] = t.conns[last]
	t.conns[c.at].at = c.at
	t.conns[last] = nil
	t.conns, c.at = t.conns[:last], -1
}

// conn is one websocket connection.
type conn struct {
	t      *Transport
	socket *socket
	proto  *protocol
	exec   graphql.GraphExecutor
	// at is the connection's place in t.conns, -1 once it ended (under
	// t.mu).
	at int

	// ctx is the connection's: authenticated once connection_init is
	// accepted; cancel ends it and every operation on it.
	ctx    context.Context
	cancel context.CancelFunc

	timedOut atomic.Bool // the watchdog aborted a write: counted once
	// unauthenticated: the connection holds a place under the cap of
	// unauthenticated connections (until a user authenticates, or it ends).
	unauthenticated atomic.Bool

	mu     sync.Mutex
	inited bool // connection_init received
	acked  bool // and accepted
	user   bool // as a user's (see credentialsEnded)
	closed bool
	// draining: a goroutine delivers pending (see drain).
	draining bool
	// The poller's, under its lock: polled tells that the socket is in the
	// epoll set, released that the poller may hold it no more, and pollID
	// is the connection's id in it. (The flags sit with the others, which
	// keeps the connection a size class smaller.)
	polled, released bool
	pollID           uint64
	// wroteEvents is when the connection last wrote room events (Unix
	// nanoseconds), for Config.WriteDelay.
	wroteEvents atomic.Int64

	ops       operations
	keepAlive *time.Timer
	// stopWatching stops SessionEnd's watch, and disconnected is what
	// Connected returned: both called once the connection closes (release).
	stopWatching, disconnected func()
	// pending are the room subscriptions with events ready, which the
	// goroutine draining delivers; spare is the slice it emptied last,
	// reused.
	pending, spare []*roomSubscription
}

// counts are the counters of the connection's subprotocol.
func (c *conn) counts() *protocolCounts { return &c.t.counts[c.proto.index] }

// authenticated gives back the connection's place under the cap of
// unauthenticated connections, if it holds one.
func (c *conn) authenticated() {
	if c.unauthenticated.CompareAndSwap(true, false) {
		c.t.unauthenticated.Add(-1)
	}
}

// serve runs the connection: the handshake here, then the read loop on a
// fresh goroutine, so that the stack grown by verifying the token is not
// kept for the connection's life (idle connections are most of them).
func (c *conn) serve() {
	initTimer := time.AfterFunc(c.t.cfg.InitTimeout, func() {
		c.mu.Lock()
		inited := c.inited
		c.mu.Unlock()
		if !inited {
			c.close(closeInitTimeout, "Connection initialisation timeout")
		}
	})
	acked := c.handshake()
	initTimer.Stop()
	if !acked {
		c.end()
		c.socket.awaitClose()
		return
	}
	go c.listen()
}

// handshake handles client messages until connection_init is accepted
// (true) or the connection ends (false).
func (c *conn) handshake() bool {
	for {
		c.mu.Lock()
		acked := c.acked
		c.mu.Unlock()
		if acked {
			return true
		}
		c.socket.awaitInput()
		if ok, _ := c.readMessage(); !ok {
			return false
		}
	}
}

// listen reads the client's messages from the next one on, until the
// connection closes: see readLoop.
func (c *conn) listen() {
	if !c.awaitInput() {
		c.readLoop()
	}
}

// readLoop handles client messages, the first already sent, until the
// connection closes. Once the client has sent nothing more, it hands the
// connection to the poller (Transport.poller), which runs readLoop again when the
// client sends something: an idle connection holds no goroutine. Where the
// poller cannot take it, the loop waits for the client on a shallow stack,
// so that an idle connection's goroutine keeps the smallest stack the
// runtime gives; and after a message whose handling grew the stack (a
// subscribe, parsed and validated here), it goes on on a fresh goroutine,
// so that the grown stack is freed now rather than over the next garbage
// collections.
func (c *conn) readLoop() {
	for {
		ok, deep := c.readMessage()
		if !ok {
			c.end()
			c.socket.awaitClose()
			return
		}
		if deep {
			go c.listen()
			return
		}
		if c.awaitInput() {
			return
		}
	}
}

// awaitInput waits until the client has sent something not yet read: at
// once if bytes are buffered, else on the poller (handedOff: readLoop runs
// again once the client sends something), or where it cannot, on the
// socket.
func (c *conn) awaitInput() (handedOff bool) {
	if c.socket.buffered() {
		return false
	}
	if c.t.poller.await(c) {
		return true
	}
	c.socket.awaitInput()
	return false
}

// readMessage reads one client message and acts on it; ok false ends the
// connection; deep tells of a message whose handling grows the stack.
//
//go:noinline
func (c *conn) readMessage() (ok, deep bool) {
	data, text, err := c.socket.readMessage()
	if err != nil {
		c.close(closeNormal, "") // the socket closed; this marks the connection
		return false, false
	}
	if !text {
		c.close(closeBadRequest, "Invalid message received: binary messages are not supported")
		return false, false
	}
	var m message
	if err := json.Unmarshal(data, &m); err != nil || m.Type == "" {
		c.close(closeBadRequest, "Invalid message received")
		return false, false
	}
	if problem := c.proto.malformed(m); problem != "" {
		c.close(closeBadRequest, truncateReason("Invalid message received: "+problem))
		return false, false
	}
	return c.handle(m), m.Type == c.proto.subscribe
}

// end stops the connection's operations and releases its timers.
func (c *conn) end() {
	c.t.untrack(c)
	c.counts().connectionsOpen.Add(-1)
	c.authenticated()
	c.cancel()
	c.stopKeepAlive()
	c.release()
	c.mu.Lock()
	ops := slices.Clone(c.ops)
	c.mu.Unlock()
	for _, op := range ops {
		op.stop()
	}
}

// release stops the connection's session watch and tells presence it is
// gone, once: when it begins to close, so that a client slow to answer the
// close handshake is not counted meanwhile, or when it ends.
func (c *conn) release() {
	c.mu.Lock()
	stopWatching, disconnected := c.stopWatching, c.disconnected
	c.stopWatching, c.disconnected = nil, nil
	c.mu.Unlock()
	if stopWatching != nil {
		stopWatching()
	}
	if disconnected != nil {
		disconnected()
	}
}

// handle acts on one client message; false ends the connection.
func (c *conn) handle(m message) bool {
	switch m.Type {
	case msgConnectionInit:
		return c.init(m.Payload)
	case msgPing:
		return c.send(message{Type: msgPong, Payload: m.Payload})
	case msgPong:
		return true
	case c.proto.subscribe:
		return c.subscribe(m)
	case c.proto.stop:
		c.stop(m.ID)
		return true
	case c.proto.terminate:
		c.close(closeNormal, "terminated")
		return false
	}
	c.close(closeBadRequest, fmt.Sprintf("Invalid message type %q", m.Type))
	return false
}

// init authenticates the connection from its connection_init payload.
func (c *conn) init(payload json.RawMessage) bool {
	c.mu.Lock()
	again := c.inited
	c.inited = true
	c.mu.Unlock()
	if again {
		c.close(closeTooManyInits, "Too many initialisation requests")
		return false
	}
	var init map[string]any
	if len(payload) > 0 && string(payload) != "null" {
		if err := json.Unmarshal(payload, &init); err != nil {
			c.close(closeBadRequest, "connection_init payload must be an object")
			return false
		}
	}
	ctx, user := c.ctx, false
	var disconnected func()
	if c.t.cfg.Authenticate != nil {
		var err error
		if ctx, user, err = c.t.cfg.Authenticate(ctx, init); err != nil {
			c.reject(err)
			return false
		}
	}
	if user {
		c.authenticated()
		if c.t.cfg.Connected != nil {
			disconnected = c.t.cfg.Connected(ctx)
		}
	}
	var stopWatching func()
	if c.t.cfg.SessionEnd != nil {
		stopWatching = c.t.cfg.SessionEnd(ctx, func(cause error) {
			c.close(closeUnauthorized, truncateReason("Unauthorized: "+cause.Error()))
		})
	}
	c.mu.Lock()
	c.ctx, c.acked, c.user, c.stopWatching, c.disconnected = ctx, true, user, stopWatching, disconnected
	c.mu.Unlock()
	if !c.send(message{Type: msgConnectionAck}) {
		return false
	}
	if c.proto.keepAlive != "" && c.t.cfg.KeepAlive > 0 {
		c.sendKeepAlive()
	}
	return true
}

// credentialsEnded reports whether errs, which end an operation of the
// connection, say that the credentials the connection was opened with no
// longer hold (an UNAUTHENTICATED error on a user's connection: the
// session ended, the token expired, the user was deleted), and if so the
// reason to close it with. The connection is then closed with 4401, as
// when SessionEnd tells it first, and the operation gets no error of its
// own: a client treats an operation's error as final, but reconnects
// after 4401 with fresh credentials and starts every operation again (the
// graphql-ws client reports 4401 to each of them). An anonymous
// connection's UNAUTHENTICATED errors (an operation that needs a user)
// are the operation's.
func (c *conn) credentialsEnded(errs []*gqlerror.Error) (reason string, ended bool) {
	c.mu.Lock()
	user := c.user
	c.mu.Unlock()
	if !user {
		return "", false
	}
	for _, e := range errs {
		if apierror.CodeOf(e) == apierror.Unauthenticated {
			return truncateReason("Unauthorized: " + e.Message), true
		}
	}
	return "", false
}

// reject closes a connection whose connection_init failed: 4401 for a
// refused token, 4500 if the check could not be made. graphql-ws clients
// first get a connection_error with the coded error.
func (c *conn) reject(err error) {
	refusal := c.t.cfg.ErrorPresenter(c.ctx, err)
	code, reason := closeUnauthorized, refusal.Message
	if apierror.CodeOf(refusal) == apierror.Internal {
		code, reason = closeInternal, "Internal server error"
	}
	if c.proto.connectionError != "" {
		if payload, err := json.Marshal(refusal); err == nil {
			c.send(message{Type: c.proto.connectionError, Payload: payload})
		}
	}
	c.close(code, truncateReason(reason))
}

// sendKeepAlive sends a graphql-ws "ka" now and every KeepAlive after.
func (c *conn) sendKeepAlive() {
	if !c.send(message{Type: c.proto.keepAlive}) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	if c.keepAlive == nil {
		c.keepAlive = time.AfterFunc(c.t.cfg.KeepAlive, c.sendKeepAlive)
	} else {
		c.keepAlive.Reset(c.t.cfg.KeepAlive)
	}
}

func (c *conn) stopKeepAlive() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.keepAlive != nil {
		c.keepAlive.Stop()
	}
}

// send writes one protocol message; false means the connection is gone.
func (c *conn) send(m message) bool {
	b, err := json.Marshal(m)
	if err != nil {
		c.t.cfg.Log.Error("live: encode message", "type", m.Type, "err", err)
		return false
	}
	return c.write(b)
}

// sendError sends an error message with errs as the payload list.
func (c *conn) sendError(typ, id string, errs ...*gqlerror.Error) bool {
	payload, err := json.Marshal(errs)
	if err != nil {
		c.t.cfg.Log.Error("live: encode errors", "err", err)
		return false
	}
	return c.send(message{ID: id, Type: typ, Payload: payload})
}

// write sends one text message of the parts' bytes. A write that fails
// closes the connection, and so does one that waits longer than the write
// timeout (the watchdog aborts it): the client is gone or not reading.
func (c *conn) write(parts ...[]byte) bool {
	if err := c.socket.writeText(parts...); err != nil {
		c.mu.Lock()
		closed := c.closed
		c.mu.Unlock()
		if !closed {
			c.t.cfg.Log.Debug("live: write failed; closing the connection", "err", err)
		}
		c.abort()
		return false
	}
	return true
}

// ready hands the connection a room subscription with events ready (its
// pumping flag set): a goroutine draining the connection delivers it,
// found (see drainers) if none is.
func (c *conn) ready(r *roomSubscription) {
	c.mu.Lock()
	c.pending = append(c.pending, r)
	start := !c.draining
	c.draining = true
	wait := start && c.t.delayed.holding() && time.Now().UnixNano()-c.wroteEvents.Load() < int64(c.t.delayed.delay)
	c.mu.Unlock()
	switch {
	case wait:
		c.t.delayed.add(c)
	case start:
		c.t.drainers.drain(c)
	}
}

// delayedDrains holds the connections that became ready (conn.ready)
// within Config.WriteDelay of their last write of events, for WriteDelay
// at most, then hands them to the drainers all at once: the events that
// reach a connection meanwhile queue behind the first, and its drain
// writes them together. One timer serves every connection: the first held
// arms it, and those that follow before it fires wait less. A timer
// armed when the transport ends fires once more, into drains that find
// their connections closed and end their subscriptions: it must.
type delayedDrains struct {
	delay    time.Duration
	drainers *drainers
	busy     *busyGate // nil: always hold (Config.WriteDelayWhenBusy)
	mu       sync.Mutex
	due      []*conn
	spare    []*conn // due's array, emptied, for the next round
	timer    *time.Timer
}

// holding reports whether a connection that wrote events within the delay
// waits now: false without a delay, or with the busy gate closed.
func (d *delayedDrains) holding() bool {
	return d != nil && (d.busy == nil || d.busy.on.Load())
}

// add holds c until the timer fires.
func (d *delayedDrains) add(c *conn) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.due = append(d.due, c)
	switch {
	case len(d.due) > 1: // the timer is armed
	case d.timer == nil:
		d.timer = time.AfterFunc(d.delay, d.fire)
	default:
		d.timer.Reset(d.delay)
	}
}

// fire hands the connections held to the drainers.
func (d *delayedDrains) fire() {
	d.mu.Lock()
	due := d.due
	d.due, d.spare = d.spare, nil
	d.mu.Unlock()
	for i, c := range due {
		d.drainers.drain(c)
		due[i] = nil
	}
	d.mu.Lock()
	if cap(due) <= maxKeptDue {
		d.spare = due[:0]
	}
	d.mu.Unlock()
}

// maxKeptDue is the longest array of held connections kept for the next
// round.
const maxKeptDue = 1 << 14

// drainers are the goroutines that deliver connections' events (conn.drain).
// One drains a connection, then parks, to drain the next connection handed
// to it. A goroutine that goes on keeps the stack the delivery path grew: a
// fresh one starts with the runtime's average stack, which the idle
// connections' readers keep small (2 KiB), and grew it on every delivery,
// copying it, at a tenth of the server's CPU under load. Handing a
// connection to a parked drainer costs a lock and a channel send, no timer
// and no select. A post to a large room readies its subscribers'
// connections at once, so as many drainers park; those not needed again
// for a tick of the watchdog end (trim).
type drainers struct {
	mu     sync.Mutex
	parked []chan handOff // each a parked drainer's, with room for one; the last parked last
	// unused is the fewest drainers parked since the last trim: that many,
	// the first parked, were not handed a connection since.
	unused  int
	stopped bool // none parks any more
	// busy is told how long each hand-off waited for its drainer, while
	// it measures (nil: no busy gate).
	busy *busyGate
}

// A handOff is a connection to drain, and when it was handed over (Unix
// nanoseconds; 0 when the busy gate does not measure it).
type handOff struct {
	c  *conn
	at int64
}

// maxParkedDrainers bounds the drainers parked at once (a burst past it
// starts goroutines that exit after their drain).
const maxParkedDrainers = 8192

// drain has c drained by a parked drainer, or a new one.
func (d *drainers) drain(c *conn) {
	h := handOff{c: c}
	if d.busy != nil && d.busy.measuring() {
		h.at = time.Now().UnixNano()
	}
	d.mu.Lock()
	if n := len(d.parked); n > 0 {
		next := d.parked[n-1]
		d.parked = d.parked[:n-1]
		d.unused = min(d.unused, n-1)
		d.mu.Unlock()
		next <- h
		return
	}
	d.mu.Unlock()
	go d.run(h)
}

// run drains h's connection, then each connection handed to it while
// parked; it exits when maxParkedDrainers others are parked, or when
// handed none (trim, stop).
func (d *drainers) run(h handOff) {
	next := make(chan handOff, 1)
	for h.c != nil {
		if h.at != 0 {
			d.busy.handedOff(time.Duration(time.Now().UnixNano() - h.at))
		}
		h.c.drain()
		d.mu.Lock()
		if d.stopped || len(d.parked) >= maxParkedDrainers {
			d.mu.Unlock()
			return
		}
		d.parked = append(d.parked, next)
		d.mu.Unlock()
		h = <-next
	}
}

// trim ends the drainers that stayed parked since the last trim.
func (d *drainers) trim() {
	d.mu.Lock()
	unused := slices.Clone(d.parked[:d.unused])
	d.parked = slices.Delete(d.parked, 0, d.unused)
	d.unused = len(d.parked)
	d.mu.Unlock()
	for _, next := range unused {
		next <- handOff{}
	}
}

// stop ends the parked drainers (the transport's context ended).
func (d *drainers) stop() {
	d.mu.Lock()
	parked := d.parked
	d.parked, d.unused, d.stopped = nil, 0, true
	d.mu.Unlock()
	for _, next := range parked {
		next <- handOff{}
	}
}

// drain delivers the connection's ready subscriptions, all those ready at
// once inside one batch of the socket, so that the events queued for all of
// them take one write (up to the batch's bounds), then those that became
// ready meanwhile; it exits when none is. A lone event is written as soon
// as it is encoded.
func (c *conn) drain() {
	for {
		c.mu.Lock()
		ready := c.pending
		if len(ready) == 0 {
			// The next wake appends to a slice emptied before instead of
			// allocating one; a short one, as an idle connection keeps it.
			if ready == nil {
				ready = c.spare
			}
			c.pending, c.spare = nil, nil
			if cap(ready) <= maxKeptReady {
				c.pending = ready
			}
			c.draining = false
			c.mu.Unlock()
			return
		}
		c.pending, c.spare = c.spare, nil
		c.mu.Unlock()
		c.deliver(ready)
		c.mu.Lock()
		c.spare = ready[:0]
		c.mu.Unlock()
	}
}

// maxKeptReady is the longest slice of ready subscriptions a connection
// keeps between its drains.
const maxKeptReady = 16

// deliver delivers the ready subscriptions in one batch, written when they
// are done: a frame waits for no more than what was ready with it.
func (c *conn) deliver(ready []*roomSubscription) {
	c.openBatch()
	defer c.closeBatch() // also if a pump panics (each recovers its own)
	for i, r := range ready {
		r.pump()
		ready[i] = nil
	}
}

// openBatch makes the connection's writes gather until closeBatch writes
// them in one go (or they reach Config.MaxFramesPerWrite or the socket's
// byte bound): a subscription's queued events take one syscall, not one
// each, and so do those of the connection's other subscriptions written
// meanwhile.
func (c *conn) openBatch() { c.socket.openBatch() }

// closeBatch closes a batch opened by openBatch and writes what it
// gathered; false means the connection is gone.
func (c *conn) closeBatch() bool {
	if err := c.socket.closeBatch(); err != nil {
		c.abort()
		return false
	}
	return true
}

// abort drops the connection without a close handshake; its reader then
// ends it.
func (c *conn) abort() {
	c.cancel()
	c.socket.hangUp()
	c.t.poller.wake(c)
}

// close ends the connection with a close frame, once; the connection's
// reader then awaits the client's. Writing the frame waits for a client
// that does not read (for Config.CloseTimeout at most), so it runs on its
// own.
func (c *conn) close(code closeCode, reason string) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.release()
	go func() {
		c.socket.close(code, reason)
		c.t.poller.wake(c) // the reader awaits the client's close frame
	}()
}

// truncateReason fits a close reason in a control frame (123 bytes), cut
// between characters: a client may fail a close whose reason is not UTF-8.
func truncateReason(s string) string {
	if len(s) <= 123 {
		return s
	}
	cut := 120
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
