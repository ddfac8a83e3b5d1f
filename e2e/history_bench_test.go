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
	ts := startServer(b, testConfig(b))
	ts.user(b, "alice")
	var login struct{ Login struct{ Token string } }
	mustDo(b, ts.Client, `mutation { login(login: "alice", password: "password-alice") { token } }`, nil, &login)
	alice := ts.Client.WithToken(login.Login.Token)
	mustDo(b, alice, createRoom, map[string]any{"n": "hall"}, nil)
	for i := range 200 {
		mustDo(b, alice, postMessage, map[string]any{"r": "hall", "c": fmt.Sprintf("message %d of the benchmark's history, of a typical length", i)}, nil)
	}
	body, err := json.Marshal(map[string]any{
		"query":     `query($r: String!, $n: Int) { messages(room: $r, first: $n) { edges { cursor node { id content system postedAt author { login firstname lastname } } } pageInfo { hasNextPage endCursor } } }`,
		"variables": map[string]any{"r": "hall", "n": 50},
	})
	if err != nil {
		b.Fatal(err)
	}
	handler := ts.Server.Handler()
	page := func(w http.ResponseWriter) {
		req := httptest.NewRequest(http.MethodPost, "/query", bytes.NewReader(body))
		req.RemoteAddr = "127.0.0.1:40000"
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		req.Header.Set("Authorization", "Bearer "+login.Login.Token)
		handler.ServeHTTP(w, req)
	}
	rec := httptest.NewRecorder()
	page(rec)
	var out struct {
		Data struct {
			Messages struct{ Edges []json.RawMessage }
		}
		Errors []json.RawMessage
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || rec.Code != http.StatusOK || len(out.Errors) > 0 || len(out.Data.Messages.Edges) != 50 {
		b.Fatalf("the page: status %d, %d edges, %v: %s", rec.Code, len(out.Data.Messages.Edges), err, rec.Body.Bytes())
	}
	b.SetBytes(int64(rec.Body.Len()))
	cpu := processCPU(b)
	for b.Loop() {
		// A writer that keeps nothing, as a connection's: a recorder's
		// buffer would count against the server.
		var w discardingWriter
		if page(&w); w.status != http.StatusOK || w.written != rec.Body.Len() {
			b.Fatalf("status %d, %d bytes; the first page had %d", w.status, w.written, rec.Body.Len())
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

func (w *discardingWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.written += len(b)
	return len(b), nil
}
