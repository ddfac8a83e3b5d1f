package tracing

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
)

func TestParseTraceparent(t *testing.T) {
	trace, parent, ok := ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	if !ok || trace.String() != "4bf92f3577b34da6a3ce929d0e0e4736" || parent.String() != "00f067aa0ba902b7" {
		t.Fatalf("valid header: %v %v %v", trace, parent, ok)
	}
	for _, bad := range []string{
		"",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",    // no flags
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01", // zero trace
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", // zero parent
		"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", // version ff
		"00-4bf92f3577b34da6a3ce929d0e0e47zz-00f067aa0ba902b7-01", // not hex
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902-01",   // short parent
	} {
		if _, _, ok := ParseTraceparent(bad); ok {
			t.Errorf("ParseTraceparent(%q) accepted", bad)
		}
	}
}

// receiver is an OTLP/HTTP endpoint that keeps the spans it is sent.
type receiver struct {
	mu    sync.Mutex
	spans []otlpSpan
	svc   []string
}

func (rv *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req otlpRequest
	if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/json" || json.NewDecoder(r.Body).Decode(&req) != nil {
		http.Error(w, "bad export", http.StatusBadRequest)
		return
	}
	rv.mu.Lock()
	defer rv.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, a := range rs.Resource.Attributes {
			rv.svc = append(rv.svc, a.Key+"="+a.Value.String)
		}
		for _, ss := range rs.ScopeSpans {
			rv.spans = append(rv.spans, ss.Spans...)
		}
	}
}

func (rv *receiver) got() []otlpSpan {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	return append([]otlpSpan(nil), rv.spans...)
}

func TestExportsSpanTree(t *testing.T) {
	rv := &receiver{}
	srv := httptest.NewServer(rv)
	defer srv.Close()
	tr, err := New(srv.URL+"/", "chatql-test", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, root := tr.Start(context.Background(), "mutation postMessage", Server,
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", Attr{"graphql.operation.type", "mutation"})
	start := time.Now()
	Record(ctx, "store.PostMessage", Internal, start, nil)
	Record(ctx, "broker.publish", Producer, start, errors.New("redis down"), Attr{"chat.topic", "room:tea"})
	Record(context.Background(), "orphan", Internal, start, nil) // no trace: not recorded
	root.End(nil)
	if err := tr.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	spans := rv.got()
	if len(spans) != 3 {
		t.Fatalf("exported %d spans, want 3: %+v", len(spans), spans)
	}
	byName := map[string]otlpSpan{}
	for _, s := range spans {
		byName[s.Name] = s
	}
	op := byName["mutation postMessage"]
	if op.TraceID != "4bf92f3577b34da6a3ce929d0e0e4736" || op.ParentSpanID != "00f067aa0ba902b7" || op.Kind != Server {
		t.Errorf("the operation does not continue the caller's trace: %+v", op)
	}
	for _, name := range []string{"store.PostMessage", "broker.publish"} {
		c := byName[name]
		if c.TraceID != op.TraceID || c.ParentSpanID != op.SpanID {
			t.Errorf("%s is not a child of the operation: %+v", name, c)
		}
		startNs, err1 := strconv.ParseInt(c.Start, 10, 64)
		endNs, err2 := strconv.ParseInt(c.End, 10, 64)
		if err1 != nil || err2 != nil || startNs < start.UnixNano() || endNs < startNs {
			t.Errorf("%s times: %s .. %s", name, c.Start, c.End)
		}
	}
	if pub := byName["broker.publish"]; pub.Status.Code != 2 || pub.Status.Message != "redis down" || len(pub.Attributes) != 1 {
		t.Errorf("the failed publish: %+v", pub)
	}
	if len(rv.svc) != 1 || rv.svc[0] != "service.name=chatql-test" {
		t.Errorf("resource: %v", rv.svc)
	}
	if exported, dropped, failed := tr.Stats(); exported != 3 || dropped != 0 || failed != 0 {
		t.Errorf("stats: %d exported, %d dropped, %d failed", exported, dropped, failed)
	}
}

// An endpoint that refuses the export loses the batch, counted; the
// requests traced go on.
func TestExportFailureIsCounted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	tr, err := New(srv.URL, "chatql-test", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, s := tr.Start(context.Background(), "query rooms", Server, "")
	s.End(nil)
	if err := tr.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if exported, _, failed := tr.Stats(); exported != 0 || failed != 1 {
		t.Fatalf("stats: %d exported, %d failed; want 0, 1", exported, failed)
	}
	if _, err := New("127.0.0.1:4318", "x", nil); err == nil {
		t.Fatal("an endpoint without a scheme was accepted")
	}
}

// Without a tracer nothing is recorded, and nothing breaks.
func TestNilTracer(t *testing.T) {
	var tr *Tracer
	ctx, s := tr.Start(context.Background(), "x", Server, "")
	s.SetAttr("k", "v")
	s.End(nil)
	if s != nil || FromContext(ctx) != nil || tr.Close(ctx) != nil {
		t.Fatal("a nil tracer recorded a span")
	}
}
