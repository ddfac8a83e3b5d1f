package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"
)

// BenchmarkHistoryPage is the server's own cost of chatload's history
// page, messages(room, first: 50), through its HTTP handler on the
// embedded store: authentication, the reader's access, the store read, the
// page's encoding and the middlewares, without the network and without a
// client, so that its CPU is the server's alone. Aim 4 of issue 34 compares
// this request with a plain handler serving the same page (chatload's
// history baseline).
func BenchmarkHistoryPage(b *testing.B) {
	ts, do := benchRoom(b)
	for i := range 200 {
		mustDo(b, ts.Client, postMessage, map[string]any{"r": "hall", "c": fmt.Sprintf("message %d of the benchmark's history, of a typical length", i)}, nil)
	}
	benchRequest(b, do, `query($r: String!, $n: Int) { messages(room: $r, first: $n) { edges { cursor node { id content system postedAt author { login firstname lastname } } } pageInfo { hasNextPage endCursor } } }`,
		map[string]any{"r": "hall", "n": 50}, `"edges"`)
}

// BenchmarkPostRequest is the server's own cost of chatload's post,
// postMessage(room, content), through its HTTP handler on the embedded
// store, to a room of one with nobody subscribed: the request, the
// checks, the durable write and the publish, without the network.
func BenchmarkPostRequest(b *testing.B) {
	_, do := benchRoom(b)
	benchRequest(b, do, `mutation($r: String!, $c: String!) { postMessage(room: $r, content: $c) { id postedAt } }`,
		map[string]any{"r": "hall", "c": "a message of about the size chatload posts, some eighty characters or so, ok"}, `"postMessage"`)
}

// BenchmarkTypenameRequest is what any request costs the server through
// its handler, { __typename } with the same token: the floor under the
// other two (chatload's "{ __typename }" closed loop).
func BenchmarkTypenameRequest(b *testing.B) {
	_, do := benchRoom(b)
	benchRequest(b, do, `{ __typename }`, nil, `"Query"`)
}

// benchRoom starts a server with alice in her room "hall", and returns a
// function that sends a request as alice to its handler.
func benchRoom(b *testing.B) (*testServer, func(w http.ResponseWriter, body []byte)) {
	ts := startServer(b, testConfig(b))
	ts.user(b, "alice")
	var login struct{ Login struct{ Token string } }
	mustDo(b, ts.Client, `mutation { login(login: "alice", password: "password-alice") { token } }`, nil, &login)
	ts.Client = ts.Client.WithToken(login.Login.Token)
	mustDo(b, ts.Client, createRoom, map[string]any{"n": "hall"}, nil)
	handler := ts.Server.Handler()
	return ts, func(w http.ResponseWriter, body []byte) {
		req := httptest.NewRequest(http.MethodPost, "/query", bytes.NewReader(body))
		req.RemoteAddr = "127.0.0.1:40000"
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		req.Header.Set("Authorization", "Bearer "+login.Login.Token)
		handler.ServeHTTP(w, req)
	}
}

// benchRequest checks that the request answers data holding want, then
// sends it b.N times and reports the process's CPU a request.
func benchRequest(b *testing.B, do func(http.ResponseWriter, []byte), query string, vars map[string]any, want string) {
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		b.Fatal(err)
	}
	rec := httptest.NewRecorder()
	do(rec, body)
	var out struct {
		Data   json.RawMessage
		Errors []json.RawMessage
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || rec.Code != http.StatusOK || len(out.Errors) > 0 || !bytes.Contains(out.Data, []byte(want)) {
		b.Fatalf("status %d, %v: %s", rec.Code, err, rec.Body.Bytes())
	}
	b.SetBytes(int64(rec.Body.Len()))
	cpu := processCPU(b)
	for b.Loop() {
		// A writer that keeps nothing, as a connection's: a recorder's
		// buffer would count against the server.
		var w discardingWriter
		if do(&w, body); w.status != http.StatusOK || w.written == 0 {
			b.Fatalf("status %d, %d bytes", w.status, w.written)
		}
	}
	b.ReportMetric(float64((processCPU(b)-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
}

// processCPU is the CPU time the test process has used so far, user and
// system, on every core: the server's, its garbage collector's included.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// discardingWriter is a ResponseWriter that counts the body's bytes and
// keeps none.
type discardingWriter struct {
	header  http.Header
	status  int
	written int
}

func (w *discardingWriter) Header() http.Header {
	if w.header == nil {
		w.header = http.Header{}
	}
	return w.header
}

func (w *discardingWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

// SetReadDeadline and SetWriteDeadline are a connection's, which the
// handler sets through http.ResponseController: without them it would
// build an error each time, which the server does not.
func (w *discardingWriter) SetReadDeadline(time.Time) error  { return nil }
func (w *discardingWriter) SetWriteDeadline(time.Time) error { return nil }

func (w *discardingWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.written += len(b)
	return len(b), nil
}
