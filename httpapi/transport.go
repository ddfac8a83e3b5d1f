// Package httpapi is the HTTP side of the GraphQL endpoint: gqlgen
// transports that answer every failure with a coded GraphQL error and the
// status codes of the GraphQL-over-HTTP specification, the request body
// and deadline limits, and a cap on connections per client address.
//
// Statuses (https://graphql.github.io/graphql-over-http/draft/#sec-Status-Codes):
// a request that is not a well-formed GraphQL-over-HTTP request (bad JSON,
// a batch array, a wrong method or media type) gets a 4xx whatever the
// client accepts. A well-formed request whose document does not parse or
// validate, or is over a limit, gets 400 when the response is
// application/graphql-response+json and 200 when it is application/json
// (the legacy rule: a non-200 application/json body may come from a proxy).
// An executed operation gets 200, errors or not.
package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/killrchat/chatql/apierror"
	"github.com/killrchat/chatql/internal/bufpool"
)

// The response media types.
const (
	mediaGraphQLResponse = "application/graphql-response+json"
	mediaJSON            = "application/json"
)

// POST runs queries and mutations sent as application/json POST bodies.
type POST struct{}

var _ graphql.Transport = POST{}

// Supports implements graphql.Transport.
func (POST) Supports(r *http.Request) bool {
	return r.Method == http.MethodPost && r.Header.Get("Upgrade") == "" && isJSON(r.Header.Get("Content-Type"))
}

// Do implements graphql.Transport.
func (POST) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	media, ok := negotiate(w, r)
	if !ok {
		return
	}
	body, ok := readBody(w, r, media)
	if !ok {
		return
	}
	params, err := decodeParams(body)
	if err != nil {
		fail(w, media, http.StatusBadRequest, apierror.BadRequest, "%v", err)
		return
	}
	run(w, r, exec, media, params, true)
}

// GET runs queries sent in the URL. Mutations and subscriptions are
// refused with 405: GET must be safe.
type GET struct{}

var _ graphql.Transport = GET{}

// Supports implements graphql.Transport.
func (GET) Supports(r *http.Request) bool {
	return r.Method == http.MethodGet && r.Header.Get("Upgrade") == ""
}

// Do implements graphql.Transport.
func (GET) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	media, ok := negotiate(w, r)
	if !ok {
		return
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		fail(w, media, http.StatusBadRequest, apierror.BadRequest, "the URL's query string is malformed: %v", err)
		return
	}
	params := &graphql.RawParams{Query: q.Get("query"), OperationName: q.Get("operationName")}
	for name, into := range map[string]*map[string]any{"variables": &params.Variables, "extensions": &params.Extensions} {
		if v := q.Get(name); v != "" {
			if err := decodeObject([]byte(v), into); err != nil {
				fail(w, media, http.StatusBadRequest, apierror.BadRequest, "%s must be a JSON object: %v", name, err)
				return
			}
		}
	}
	run(w, r, exec, media, params, false)
}

// SSE is gqlgen's server-sent events transport with the body read, limited
// and checked first, so that a malformed or oversized body is answered
// with a coded error (gqlgen's would echo the body, and log it).
//
// Connected, if set, is told of each event stream's request, whose context
// ends with the stream: presence counts it as a connection. Stats, if set,
// counts the streams and the events they deliver.
type SSE struct {
	transport.SSE
	Connected func(ctx context.Context)
	Stats     *StreamStats
}

// StreamStats count what the SSE transports have served, for monitoring:
// an event stream is one request, which carries one operation in the
// distinct connections mode (SSE) and any number in the single connection
// mode (SSEStreams).
type StreamStats struct {
	// Streams counts the event streams opened; StreamsOpen those open now.
	Streams     atomic.Uint64
	StreamsOpen atomic.Int64
	// Subscriptions counts the streams that ran a subscription;
	// SubscriptionsOpen those running now.
	Subscriptions     atomic.Uint64
	SubscriptionsOpen atomic.Int64
	// Delivered counts the subscription events handed to the streams.
	Delivered atomic.Uint64
}

// countingExecutor counts a stream's subscription and its events.
type countingExecutor struct {
	graphql.GraphExecutor
	stats      *StreamStats
	subscribed *bool
}

func (e countingExecutor) DispatchOperation(ctx context.Context, rc *graphql.OperationContext) (graphql.ResponseHandler, context.Context) {
	responses, ctx := e.GraphExecutor.DispatchOperation(ctx, rc)
	if rc.Operation == nil || rc.Operation.Operation != ast.Subscription {
		return responses, ctx
	}
	*e.subscribed = true
	e.stats.Subscriptions.Add(1)
	e.stats.SubscriptionsOpen.Add(1)
	return func(ctx context.Context) *graphql.Response {
		resp := responses(ctx)
		if resp != nil {
			e.stats.Delivered.Add(1)
		}
		return resp
	}, ctx
}

// Do implements graphql.Transport.
func (t SSE) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	body, ok := readBody(w, r, mediaJSON)
	if !ok {
		return
	}
	if _, err := decodeParams(body); err != nil {
		fail(w, mediaJSON, http.StatusBadRequest, apierror.BadRequest, "%v", err)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if t.Connected != nil {
		t.Connected(r.Context())
	}
	if t.Stats != nil {
		var subscribed bool
		t.Stats.Streams.Add(1)
		t.Stats.StreamsOpen.Add(1)
		defer func() {
			t.Stats.StreamsOpen.Add(-1)
			if subscribed {
				t.Stats.SubscriptionsOpen.Add(-1)
			}
		}()
		exec = countingExecutor{GraphExecutor: exec, stats: t.Stats, subscribed: &subscribed}
	}
	t.SSE.Do(w, r, exec)
}

// Unsupported answers every request no other transport took: it must be
// the last transport.
type Unsupported struct{}

var _ graphql.Transport = Unsupported{}

// Supports implements graphql.Transport.
func (Unsupported) Supports(*http.Request) bool { return true }

// Do implements graphql.Transport.
func (Unsupported) Do(w http.ResponseWriter, r *http.Request, _ graphql.GraphExecutor) {
	media := mediaJSON
	if m, ok := accepted(r.Header.Get("Accept")); ok {
		media = m
	}
	switch {
	case r.Header.Get("Upgrade") != "":
		fail(w, media, http.StatusBadRequest, apierror.BadRequest, "unsupported upgrade %q: open a websocket with the graphql-transport-ws or graphql-ws subprotocol", r.Header.Get("Upgrade"))
	case r.Method == http.MethodPost:
		fail(w, media, http.StatusUnsupportedMediaType, apierror.BadRequest, "unsupported Content-Type %q: send application/json", r.Header.Get("Content-Type"))
	default:
		w.Header().Set("Allow", "GET, POST, PUT, DELETE, OPTIONS")
		fail(w, media, http.StatusMethodNotAllowed, apierror.BadRequest, "method %s is not allowed: use POST (or GET for queries; PUT, GET and DELETE with a stream token for single-connection event streams)", r.Method)
	}
}

// run executes a decoded request and writes its response.
func run(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor, media string, params *graphql.RawParams, post bool) {
	ctx := r.Context()
	params.Headers = r.Header
	opCtx, errs := exec.CreateOperationContext(ctx, params)
	if errs != nil {
		resp := exec.DispatchError(graphql.WithOperationContext(ctx, opCtx), errs)
		status := requestErrorStatus(media, resp.Errors)
		if status == http.StatusOK && apierror.Has(resp.Errors, apierror.PersistedQueryNotFound) {
			// The client will send the query next: nothing may cache this.
			w.Header().Set("Cache-Control", "private, no-cache, must-revalidate")
		}
		write(w, media, status, requestErrors{Errors: resp.Errors, Extensions: resp.Extensions})
		return
	}
	if !post && opCtx.Operation.Operation != ast.Query {
		w.Header().Set("Allow", "POST")
		fail(w, media, http.StatusMethodNotAllowed, apierror.BadRequest, "GET runs queries only: send a %s with POST", opCtx.Operation.Operation)
		return
	}
	if opCtx.Operation.Operation == ast.Subscription {
		// A plain request answers once: a subscription would wait for its
		// first event and hold the request open for as long as that takes.
		fail(w, media, http.StatusBadRequest, apierror.BadRequest, "subscriptions stream over a websocket (graphql-transport-ws) or server-sent events (POST with Accept: text/event-stream), not a plain request")
		return
	}
	responses, ctx := exec.DispatchOperation(ctx, opCtx)
	resp := responses(ctx)
	buf := bufpool.Get()
	b, err := appendResponse(*buf, resp)
	send(w, media, http.StatusOK, b, err)
	*buf = b
	bufpool.Put(buf)
	// The executor wrote a query's data in a buffer of the pool
	// (graph.dataBuffer); nothing reads it once the response is written.
	bufpool.PutBytes(resp.Data)
}

// appendResponse appends a response to b, encoded as encoding/json would
// but for its data, which it copies as gqlgen wrote it: JSON already,
// which encoding/json would check and compact again (a tenth of the
// server's CPU for a page of history).
func appendResponse(b []byte, r *graphql.Response) ([]byte, error) {
	if r.Label != "" || r.Path != nil || r.HasNext != nil {
		// Incremental delivery: never on this transport.
		whole, err := json.Marshal(r)
		return append(b, whole...), err
	}
	b = append(b, '{')
	if len(r.Errors) > 0 {
		errs, err := json.Marshal(r.Errors)
		if err != nil {
			return nil, err
		}
		b = append(append(append(b, `"errors":`...), errs...), ',')
	}
	b = append(b, `"data":`...)
	if len(r.Data) == 0 {
		b = append(b, "null"...)
	} else {
		b = append(b, r.Data...)
	}
	if len(r.Extensions) > 0 {
		ext, err := json.Marshal(r.Extensions)
		if err != nil {
			return nil, err
		}
		b = append(append(b, `,"extensions":`...), ext...)
	}
	return append(b, '}'), nil
}

// requestErrorStatus is the status of a response that has errors and no
// data: the operation was refused before it ran.
func requestErrorStatus(media string, errs gqlerror.List) int {
	switch {
	case apierror.Has(errs, apierror.BadRequest):
		return http.StatusBadRequest
	case apierror.Has(errs, apierror.PersistedQueryNotFound):
		// As Apollo Server answers: some clients only retry with the full
		// query on a 200.
		return http.StatusOK
	case media == mediaGraphQLResponse:
		return http.StatusBadRequest
	default:
		return http.StatusOK
	}
}

// requestErrors is the body of a request error: no data entry, since the
// operation never ran.
type requestErrors struct {
	Errors     gqlerror.List  `json:"errors"`
	Extensions map[string]any `json:"extensions,omitempty"`
}

// fail answers with one coded error.
func fail(w http.ResponseWriter, media string, status int, code, format string, args ...any) {
	write(w, media, status, requestErrors{Errors: gqlerror.List{apierror.New(code, format, args...)}})
}

func write(w http.ResponseWriter, media string, status int, body any) {
	b, err := json.Marshal(body)
	send(w, media, status, b, err)
}

// send writes the encoded body b, or a coded error if encoding it failed
// (err).
func send(w http.ResponseWriter, media string, status int, b []byte, err error) {
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"errors":[{"message":"internal error: the response could not be encoded","extensions":{"code":"` + apierror.Internal + `"}}]}`)
	}
	h := w.Header()
	h.Set("Content-Type", media+"; charset=utf-8")
	// With its length known, net/http sends a page of history in two
	// writes (the headers and the body's first 4 KB, then the rest), not
	// three chunks with the terminating one in a write of its own.
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// negotiate picks the response media type from the Accept header, or
// answers 406 when the client accepts neither JSON type.
func negotiate(w http.ResponseWriter, r *http.Request) (string, bool) {
	media, ok := accepted(r.Header.Get("Accept"))
	if !ok {
		fail(w, mediaJSON, http.StatusNotAcceptable, apierror.BadRequest, "the Accept header allows neither %s nor %s", mediaGraphQLResponse, mediaJSON)
	}
	return media, ok
}

// accepted is the first supported media type the Accept header lists.
// Without an Accept header the response is application/graphql-response+json,
// as the specification asks of servers since 2025; */* gets
// application/json, as legacy clients expect.
func accepted(accept string) (string, bool) {
	if strings.TrimSpace(accept) == "" {
		return mediaGraphQLResponse, true
	}
	for part := range strings.SplitSeq(accept, ",") {
		media, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		switch media {
		case mediaGraphQLResponse:
			return mediaGraphQLResponse, true
		case mediaJSON, "application/*", "*/*":
			return mediaJSON, true
		}
	}
	return "", false
}

func isJSON(contentType string) bool {
	media, _, err := mime.ParseMediaType(contentType)
	return err == nil && media == mediaJSON
}

// readBody reads the whole request body within its limit (see LimitBody),
// or answers 413 or 400 and returns false.
func readBody(w http.ResponseWriter, r *http.Request, media string) ([]byte, bool) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		// The read deadline stays: the connection is not reused.
		if tooLarge := new(http.MaxBytesError); errors.As(err, &tooLarge) {
			fail(w, media, http.StatusRequestEntityTooLarge, apierror.PayloadTooLarge, "the request body is larger than %d bytes", tooLarge.Limit)
		} else if errors.Is(err, os.ErrDeadlineExceeded) {
			w.Header().Set("Connection", "close")
			fail(w, media, http.StatusRequestTimeout, apierror.BadRequest, "the request body came too slowly")
		} else {
			fail(w, media, http.StatusBadRequest, apierror.BadRequest, "the request body could not be read")
		}
		return nil, false
	}
	bodyRead(w)
	return body, true
}

// decodeParams decodes a POST body: one JSON object with a string query.
// Error messages never quote the body: it may hold passwords.
func decodeParams(body []byte) (*graphql.RawParams, error) {
	if trimmed := bytes.TrimSpace(body); len(trimmed) > 0 && trimmed[0] == '[' {
		return nil, errors.New("batched operations are not supported: send one operation per request")
	}
	params := &graphql.RawParams{}
	if err := decodeObject(body, params); err != nil {
		return nil, fmt.Errorf("the body must be a JSON object {\"query\": string, \"variables\": object, \"operationName\": string, \"extensions\": object}: %v", err)
	}
	return params, nil
}

// decodeObject decodes exactly one JSON value, numbers kept as
// json.Number for gqlgen's input coercion.
func decodeObject(data []byte, into any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(into); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("unexpected data after the JSON value")
	}
	return nil
}

// jsonError describes a decoding error without the values it met.
func jsonError(err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Errorf("invalid JSON at byte %d", syntax.Offset)
	case errors.As(err, &typ) && typ.Field != "":
		return fmt.Errorf("%s must not be a JSON %s", typ.Field, typ.Value)
	case errors.As(err, &typ):
		return fmt.Errorf("a JSON %s is not allowed here", typ.Value)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("the JSON ends too soon")
	default:
		return errors.New("invalid JSON")
	}
}
