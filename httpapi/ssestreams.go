package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/killrchat/chatql/apierror"
	"github.com/killrchat/chatql/auth"
)

// TokenHeader carries the token of a single-connection event stream; the
// URL's token parameter may carry it instead (EventSource sends no
// headers).
const TokenHeader = "X-GraphQL-Event-Stream-Token"

// maxOperationID bounds an operation id: it is echoed in every event.
const maxOperationID = 128

// SSEStreams serves graphql-sse's single connection mode
// (https://github.com/enisdenjo/graphql-sse/blob/master/PROTOCOL.md), so that
// a browser page follows many subscriptions over one HTTP/1.1 connection
// (browsers open at most six per host). PUT reserves a stream and answers
// its token; GET with the token opens the event stream; POST with the token
// starts an operation whose events go out on that stream, marked with the
// operation id the body's extensions.operationId names; DELETE with the
// token and ?operationId= stops one.
//
// Every request authenticates as the distinct mode does (Authorization:
// Bearer), and a stream answers only the user who reserved it: to anyone
// else its token is unknown. Operations run through the same executor as
// every other transport, as the caller of the request that started them,
// and end with the stream.
//
// Build one with NewSSEStreams; it must come before the transports that
// take GET and POST requests.
type SSEStreams struct {
	cfg SSEStreamsConfig

	mu      sync.Mutex
	byToken map[string]*eventStream
	perUser map[string]int // streams reserved or open, by login
}

// SSEStreamsConfig configures SSEStreams.
type SSEStreamsConfig struct {
	// Context ends every stream when it ends: the server's shutdown.
	Context context.Context
	// Connected, if set, is told of each event stream's request, whose
	// context ends with the stream: presence counts it as a connection.
	Connected func(ctx context.Context)
	// Stats, if set, counts the streams and the operations they carry.
	Stats *StreamStats
	// ReservationTTL is how long a reserved stream waits to be opened
	// before its token is forgotten; 15 s when 0.
	ReservationTTL time.Duration
	// MaxOperations caps the operations running on one stream; 100 when 0.
	MaxOperations int
	// MaxStreamsPerUser caps the streams one user holds reserved or open;
	// 16 when 0.
	MaxStreamsPerUser int
	// KeepAlive, if positive, is the interval of the comments sent on an
	// idle stream, so that proxies do not close it.
	KeepAlive time.Duration
}

// eventStream is one reservation, and once opened its event stream. Its
// fields but events are guarded by SSEStreams.mu.
type eventStream struct {
	owner  string // the login of the user who reserved it
	expiry *time.Timer
	opened bool
	// Set when opened: ctx is the stream request's context, which the
	// operations end with; events carries their encoded events to it.
	ctx     context.Context
	events  chan []byte
	ops     map[string]*operation
	running sync.WaitGroup
}

// operation is one operation running on a stream.
type operation struct {
	cancel context.CancelFunc
}

// NewSSEStreams returns the single connection mode's transport.
func NewSSEStreams(cfg SSEStreamsConfig) *SSEStreams {
	if cfg.Context == nil {
		cfg.Context = context.Background()
	}
	if cfg.ReservationTTL <= 0 {
		cfg.ReservationTTL = 15 * time.Second
	}
	if cfg.MaxOperations <= 0 {
		cfg.MaxOperations = 100
	}
	if cfg.MaxStreamsPerUser <= 0 {
		cfg.MaxStreamsPerUser = 16
	}
	return &SSEStreams{cfg: cfg, byToken: map[string]*eventStream{}, perUser: map[string]int{}}
}

var _ graphql.Transport = (*SSEStreams)(nil)

// Supports implements graphql.Transport: every PUT and DELETE (no other
// transport has a use for them), and GET and POST with a stream token.
func (s *SSEStreams) Supports(r *http.Request) bool {
	if r.Header.Get("Upgrade") != "" {
		return false
	}
	switch r.Method {
	case http.MethodPut, http.MethodDelete:
		return true
	case http.MethodGet, http.MethodPost:
		return streamToken(r) != ""
	}
	return false
}

// streamToken is the request's stream token, from the header or the URL.
func streamToken(r *http.Request) string {
	if token := r.Header.Get(TokenHeader); token != "" {
		return token
	}
	return r.URL.Query().Get("token")
}

// Do implements graphql.Transport.
func (s *SSEStreams) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	media, ok := accepted(r.Header.Get("Accept"))
	if !ok {
		media = mediaJSON // an event stream's request accepts text/event-stream
	}
	user, err := auth.UserFrom(r.Context())
	if err != nil {
		fail(w, media, http.StatusUnauthorized, apierror.Unauthenticated, "single-connection event streams belong to a user: %v", err)
		return
	}
	if r.Method == http.MethodPut {
		s.reserve(w, media, user.Login)
		return
	}
	token := streamToken(r)
	if token == "" {
		fail(w, media, http.StatusBadRequest, apierror.BadRequest, "%s needs the token of a single-connection event stream (reserve one with PUT), in the %s header or the token URL parameter", r.Method, TokenHeader)
		return
	}
	switch r.Method {
	case http.MethodGet:
		s.open(w, r, token, user.Login)
	case http.MethodPost:
		s.start(w, r, exec, media, token, user.Login)
	case http.MethodDelete:
		s.stop(w, r, media, token, user.Login)
	}
}

// reserve answers PUT: a new stream's token, 201.
func (s *SSEStreams) reserve(w http.ResponseWriter, media, login string) {
	s.mu.Lock()
	if s.perUser[login] >= s.cfg.MaxStreamsPerUser {
		s.mu.Unlock()
		fail(w, media, http.StatusTooManyRequests, apierror.TooManyConnections, "you hold %d single-connection event streams already: close one before reserving another", s.cfg.MaxStreamsPerUser)
		return
	}
	token := rand.Text()
	st := &eventStream{owner: login}
	s.byToken[token] = st
	s.perUser[login]++
	st.expiry = time.AfterFunc(s.cfg.ReservationTTL, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if !st.opened {
			s.forget(token, st)
		}
	})
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write([]byte(token))
}

// forget drops the stream under token; s.mu must be held.
func (s *SSEStreams) forget(token string, st *eventStream) {
	if s.byToken[token] != st {
		return
	}
	delete(s.byToken, token)
	if s.perUser[st.owner]--; s.perUser[st.owner] <= 0 {
		delete(s.perUser, st.owner)
	}
}

// find is login's stream under token. To anyone but its owner a token is
// unknown, so that it reveals nothing; s.mu must be held.
func (s *SSEStreams) find(token, login string) (*eventStream, bool) {
	st := s.byToken[token]
	if st == nil || st.owner != login {
		return nil, false
	}
	return st, true
}

// notFound answers a token that is unknown, expired, closed or another
// user's.
func (s *SSEStreams) notFound(w http.ResponseWriter, media string) {
	fail(w, media, http.StatusNotFound, apierror.NotFound, "no single-connection event stream of yours has this token: reserve one with PUT and open it with GET within %v; a closed stream's token is gone", s.cfg.ReservationTTL)
}

// open answers GET: the reserved stream's events, until the client leaves,
// the server shuts down or the request fails; its operations end with it.
func (s *SSEStreams) open(w http.ResponseWriter, r *http.Request, token, login string) {
	if !strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		fail(w, mediaJSON, http.StatusNotAcceptable, apierror.BadRequest, "GET with a stream token opens the event stream: send Accept: text/event-stream")
		return
	}
	s.mu.Lock()
	st, ok := s.find(token, login)
	switch {
	case !ok:
		s.mu.Unlock()
		s.notFound(w, mediaJSON)
		return
	case st.opened:
		s.mu.Unlock()
		fail(w, mediaJSON, http.StatusConflict, apierror.Conflict, "this token's event stream is open already: a reservation serves one stream")
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	stopWithServer := context.AfterFunc(s.cfg.Context, cancel)
	st.opened = true
	st.expiry.Stop()
	st.ctx = ctx
	st.events = make(chan []byte, 16)
	st.ops = map[string]*operation{}
	s.mu.Unlock()
	defer func() {
		stopWithServer()
		s.mu.Lock()
		s.forget(token, st) // no operation starts after this
		s.mu.Unlock()
		cancel()
		// The operations write to events, not to w: none may outlive
		// the request, nor use the store after shutdown.
		st.running.Wait()
	}()

	if s.cfg.Connected != nil {
		s.cfg.Connected(ctx)
	}
	if stats := s.cfg.Stats; stats != nil {
		stats.Streams.Add(1)
		stats.StreamsOpen.Add(1)
		defer stats.StreamsOpen.Add(-1)
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	// The client waits for the headers before it starts operations.
	if _, err := w.Write([]byte(":\n\n")); err != nil || rc.Flush() != nil {
		return
	}
	var ping <-chan time.Time
	if s.cfg.KeepAlive > 0 {
		ticker := time.NewTicker(s.cfg.KeepAlive)
		defer ticker.Stop()
		ping = ticker.C
	}
	for {
		var event []byte
		select {
		case <-ctx.Done():
			return
		case event = <-st.events:
		case <-ping:
			event = []byte(": ping\n\n")
		}
		if !writeQueued(w, event, st.events) || rc.Flush() != nil {
			return
		}
	}
}

// Bounds of what an event stream writes before one flush: the events
// already queued behind the one it took, up to these.
const (
	maxEventsPerFlush = 32
	maxBytesPerFlush  = 32 << 10
)

// writeQueued writes event and the events already queued on events behind
// it (without waiting for more, and up to the bounds above), so that the
// caller flushes them in one go: the response's buffers take them together,
// and a burst costs a write(2) per buffer's worth, not one per event.
// false means the stream is gone.
func writeQueued(w http.ResponseWriter, event []byte, events <-chan []byte) bool {
	size := 0
	for n := 1; ; n++ {
		if _, err := w.Write(event); err != nil {
			return false
		}
		if size += len(event); n == maxEventsPerFlush || size >= maxBytesPerFlush {
			return true
		}
		select {
		case event = <-events:
		default:
			return true
		}
	}
}

// start answers POST: 202 once the operation runs on the stream, or the
// request's errors as a plain POST would get them.
func (s *SSEStreams) start(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor, media, token, login string) {
	body, ok := readBody(w, r, media)
	if !ok {
		return
	}
	params, err := decodeParams(body)
	if err != nil {
		fail(w, media, http.StatusBadRequest, apierror.BadRequest, "%v", err)
		return
	}
	id, _ := params.Extensions["operationId"].(string)
	if id == "" || len(id) > maxOperationID {
		fail(w, media, http.StatusBadRequest, apierror.BadRequest, "extensions.operationId must be a string of 1 to %d characters: the stream's events carry it", maxOperationID)
		return
	}
	s.mu.Lock()
	st, ok := s.find(token, login)
	s.mu.Unlock()
	if !ok {
		s.notFound(w, media)
		return
	}
	params.Headers = r.Header
	// Validated against the request's context; run in the stream's.
	opCtx, errs := exec.CreateOperationContext(r.Context(), params)
	if errs != nil {
		resp := exec.DispatchError(graphql.WithOperationContext(r.Context(), opCtx), errs)
		write(w, media, requestErrorStatus(media, resp.Errors), requestErrors{Errors: resp.Errors, Extensions: resp.Extensions})
		return
	}

	s.mu.Lock()
	if again, ok := s.find(token, login); !ok || again != st {
		s.mu.Unlock()
		s.notFound(w, media)
		return
	}
	switch {
	case !st.opened:
		s.mu.Unlock()
		fail(w, media, http.StatusConflict, apierror.Conflict, "open the event stream (GET with its token) before starting operations on it")
		return
	case st.ops[id] != nil:
		s.mu.Unlock()
		fail(w, media, http.StatusConflict, apierror.Conflict, "operation %q runs on this stream already: give each operation its own id", id)
		return
	case len(st.ops) >= s.cfg.MaxOperations:
		s.mu.Unlock()
		fail(w, media, http.StatusTooManyRequests, apierror.BadRequest, "too many operations on this stream: at most %d at a time; stop one or open another stream", s.cfg.MaxOperations)
		return
	}
	// The stream's context ends the operation with the stream; the POST's
	// caller runs it, so that an operation started with a fresh token
	// outlives the token the stream was opened with (a subscription ends
	// when its caller's token expires or session ends).
	ctx, cancel := context.WithCancel(auth.WithCallerOf(st.ctx, r.Context()))
	op := &operation{cancel: cancel}
	st.ops[id] = op
	st.running.Add(1)
	s.mu.Unlock()

	go func() {
		defer st.running.Done()
		defer func() {
			cancel()
			s.mu.Lock()
			if st.ops[id] == op {
				delete(st.ops, id)
			}
			s.mu.Unlock()
		}()
		s.run(ctx, st, id, exec, opCtx)
	}()
	w.WriteHeader(http.StatusAccepted)
}

// run executes an operation and sends its results to the stream, then
// complete, unless the operation was stopped or the stream closed.
func (s *SSEStreams) run(ctx context.Context, st *eventStream, id string, exec graphql.GraphExecutor, opCtx *graphql.OperationContext) {
	quotedID, _ := json.Marshal(id)
	send := func(event []byte) bool {
		select {
		case st.events <- event:
			return true
		case <-ctx.Done():
			return false
		}
	}
	ctx = graphql.WithOperationContext(ctx, opCtx)
	responses, ctx := exec.DispatchOperation(ctx, opCtx)
	if stats := s.cfg.Stats; stats != nil && opCtx.Operation.Operation == ast.Subscription {
		stats.Subscriptions.Add(1)
		stats.SubscriptionsOpen.Add(1)
		defer stats.SubscriptionsOpen.Add(-1)
	}
	for {
		resp := responses(ctx)
		if resp == nil {
			break
		}
		head := append(append([]byte("event: next\ndata: {\"id\":"), quotedID...), `,"payload":`...)
		event, err := appendResponse(head, resp)
		if err != nil {
			event = append(head, `{"errors":[{"message":"internal error: the response could not be encoded","extensions":{"code":"`+apierror.Internal+`"}}]}`...)
		}
		event = append(event, "}\n\n"...)
		if !send(event) {
			return
		}
		if stats := s.cfg.Stats; stats != nil && opCtx.Operation.Operation == ast.Subscription {
			stats.Delivered.Add(1)
		}
	}
	if ctx.Err() == nil {
		send(append(append([]byte("event: complete\ndata: {\"id\":"), quotedID...), "}\n\n"...))
	}
}

// stop answers DELETE: the operation ends, without a complete event (the
// client asked), 200.
func (s *SSEStreams) stop(w http.ResponseWriter, r *http.Request, media, token, login string) {
	id := r.URL.Query().Get("operationId")
	if id == "" {
		fail(w, media, http.StatusBadRequest, apierror.BadRequest, "DELETE stops an operation: name it with the operationId URL parameter")
		return
	}
	s.mu.Lock()
	st, ok := s.find(token, login)
	if !ok {
		s.mu.Unlock()
		s.notFound(w, media)
		return
	}
	op := st.ops[id]
	if op == nil {
		s.mu.Unlock()
		fail(w, media, http.StatusNotFound, apierror.NotFound, "no operation %q runs on this stream: it completed, or never started", id)
		return
	}
	delete(st.ops, id)
	s.mu.Unlock()
	op.cancel()
	w.WriteHeader(http.StatusOK)
}
