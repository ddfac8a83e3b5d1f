package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// otlpSpans is an OTLP/HTTP endpoint that keeps the spans exported to it.
type otlpSpans struct {
	mu    sync.Mutex
	spans []otlpSpan
}

type otlpSpan struct {
	TraceID, SpanID, ParentSpanID, Name string
	Kind                                int
	Attributes                          []struct {
		Key   string
		Value struct{ StringValue string }
	}
}

func (o *otlpSpans) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ResourceSpans []struct {
			ScopeSpans []struct{ Spans []otlpSpan }
		}
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			o.spans = append(o.spans, ss.Spans...)
		}
	}
}

// inTrace returns the spans of trace, by name.
func (o *otlpSpans) inTrace(trace string) map[string][]otlpSpan {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[string][]otlpSpan{}
	for _, s := range o.spans {
		if s.TraceID == trace {
			out[s.Name] = append(out[s.Name], s)
		}
	}
	return out
}

// With an OTLP endpoint configured, a post is traced from its operation to
// the store calls and the publish it made, continuing the caller's trace
// (W3C traceparent); a subscription is not traced.
func TestTracing(t *testing.T) {
	collector := &otlpSpans{}
	otlp := httptest.NewServer(collector)
	defer otlp.Close()
	cfg := testConfig(t)
	cfg.OTLPEndpoint = otlp.URL
	ts := startServer(t, cfg)
	alice := ts.user(t, "alice")
	mustDo(t, alice, createRoom, map[string]any{"n": "traced"}, nil)

	const trace, caller = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	body, _ := json.Marshal(map[string]any{"query": postMessage, "variables": map[string]any{"r": "traced", "c": "hello"}})
	req, _ := http.NewRequestWithContext(testContext(t), http.MethodPost, ts.URL, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+alice.Token)
	req.Header.Set("traceparent", "00-"+trace+"-"+caller+"-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	var spans map[string][]otlpSpan
	eventually(t, 10*time.Second, "the post's spans are exported", func() (bool, any) {
		spans = collector.inTrace(trace)
		return len(spans["mutation postMessage"]) == 1 && len(spans["broker.publish"]) > 0, spans
	})
	op := spans["mutation postMessage"][0]
	if op.ParentSpanID != caller || op.Kind != 2 {
		t.Fatalf("the operation span does not continue the caller's: %+v", op)
	}
	if len(spans["store.PostMessage"]) != 1 || spans["store.PostMessage"][0].ParentSpanID != op.SpanID {
		t.Errorf("no store.PostMessage span under the operation: %+v", spans)
	}
	topics := map[string]bool{}
	for _, pub := range spans["broker.publish"] {
		if pub.ParentSpanID != op.SpanID {
			t.Errorf("a publish outside the operation: %+v", pub)
		}
		for _, a := range pub.Attributes {
			if a.Key == "chat.topic" {
				topics[a.Value.StringValue] = true
			}
		}
	}
	if !topics["room:traced"] {
		t.Errorf("no publish to room:traced among %v", topics)
	}
	for name, ss := range spans {
		for _, s := range ss {
			if s.ParentSpanID != caller && s.ParentSpanID != op.SpanID {
				t.Errorf("span %s is outside the tree: %+v", name, s)
			}
		}
	}
	// Operators see the export on /metrics.
	if n := scrape(t, ts).value("chatql_trace_spans_total", "outcome", "exported"); n < float64(len(spans)) {
		t.Errorf("chatql_trace_spans_total{outcome=exported} = %v, want at least the %d spans of the post", n, len(spans))
	}
}
