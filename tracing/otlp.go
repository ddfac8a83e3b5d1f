package tracing

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Export flow: finished spans wait in a queue of queueSize (past it they
// are dropped and counted: tracing never holds a request up), and go out in
// batches of up to batchSize, at least every flushEvery, each POST bounded
// by postTimeout.
const (
	queueSize   = 4096
	batchSize   = 512
	flushEvery  = time.Second
	postTimeout = 5 * time.Second
)

// Tracer records spans and exports them to an OTLP/HTTP endpoint. A nil
// *Tracer records nothing.
type Tracer struct {
	url     string // endpoint + /v1/traces
	service string
	client  *http.Client
	log     *slog.Logger

	queue     chan *Span
	done      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once

	exported, dropped, failed atomic.Uint64
	failing                   atomic.Bool
}

// New starts a tracer exporting to the OTLP/HTTP endpoint (its base URL,
// such as http://127.0.0.1:4318: spans go to /v1/traces under it), naming
// the service service. log (optional) hears of export failures, once per
// outage.
func New(endpoint, service string, log *slog.Logger) (*Tracer, error) {
	endpoint = strings.TrimRight(endpoint, "/")
	if !strings.HasPrefix(endpoint, "http://") && !strings.HasPrefix(endpoint, "https://") {
		return nil, fmt.Errorf("OTLP endpoint %q: want an http:// or https:// URL", endpoint)
	}
	t := &Tracer{
		url:     endpoint + "/v1/traces",
		service: service,
		client:  &http.Client{Timeout: postTimeout},
		log:     log,
		queue:   make(chan *Span, queueSize),
		done:    make(chan struct{}),
	}
	enabled.Add(1)
	t.wg.Add(1)
	go t.run()
	return t, nil
}

// Stats are the tracer's counts: spans exported, dropped because the queue
// was full, and lost to failed exports.
func (t *Tracer) Stats() (exported, dropped, failed uint64) {
	return t.exported.Load(), t.dropped.Load(), t.failed.Load()
}

// Close exports what is queued (bounded by ctx) and stops.
func (t *Tracer) Close(ctx context.Context) error {
	if t == nil {
		return nil
	}
	t.closeOnce.Do(func() {
		close(t.done)
		enabled.Add(-1)
	})
	finished := make(chan struct{})
	go func() { t.wg.Wait(); close(finished) }()
	select {
	case <-finished:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (t *Tracer) export(s *Span) {
	select {
	case t.queue <- s:
	default:
		t.dropped.Add(1)
	}
}

// run batches the queue out until Close, then sends what is left.
func (t *Tracer) run() {
	defer t.wg.Done()
	tick := time.NewTicker(flushEvery)
	defer tick.Stop()
	batch := make([]*Span, 0, batchSize)
	for {
		select {
		case s := <-t.queue:
			if batch = append(batch, s); len(batch) < batchSize {
				continue
			}
		case <-tick.C:
		case <-t.done:
			for {
				select {
				case s := <-t.queue:
					batch = append(batch, s)
					continue
				default:
				}
				break
			}
			t.send(batch)
			return
		}
		t.send(batch)
		batch = batch[:0]
	}
}

// send posts batch in OTLP's JSON encoding.
func (t *Tracer) send(batch []*Span) {
	if len(batch) == 0 {
		return
	}
	body, err := json.Marshal(t.encode(batch))
	if err == nil {
		var resp *http.Response
		resp, err = t.client.Post(t.url, "application/json", bytes.NewReader(body))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode/100 != 2 {
				err = fmt.Errorf("%s answered %s", t.url, resp.Status)
			}
		}
	}
	if err != nil {
		t.failed.Add(uint64(len(batch)))
		if !t.failing.Swap(true) && t.log != nil {
			t.log.Warn("tracing: spans are not reaching the OTLP endpoint; dropping them until it answers", "err", err)
		}
		return
	}
	t.exported.Add(uint64(len(batch)))
	if t.failing.Swap(false) && t.log != nil {
		t.log.Info("tracing: the OTLP endpoint takes spans again")
	}
}

// The OTLP JSON encoding (ExportTraceServiceRequest): ids in hex, times in
// nanoseconds since the epoch, as strings (64-bit integers).
type (
	otlpRequest struct {
		ResourceSpans []otlpResourceSpans `json:"resourceSpans"`
	}
	otlpResourceSpans struct {
		Resource   otlpResource     `json:"resource"`
		ScopeSpans []otlpScopeSpans `json:"scopeSpans"`
	}
	otlpResource struct {
		Attributes []otlpAttr `json:"attributes"`
	}
	otlpScopeSpans struct {
		Scope otlpScope  `json:"scope"`
		Spans []otlpSpan `json:"spans"`
	}
	otlpScope struct {
		Name string `json:"name"`
	}
	otlpSpan struct {
		TraceID      string     `json:"traceId"`
		SpanID       string     `json:"spanId"`
		ParentSpanID string     `json:"parentSpanId,omitempty"`
		Name         string     `json:"name"`
		Kind         Kind       `json:"kind"`
		Start        string     `json:"startTimeUnixNano"`
		End          string     `json:"endTimeUnixNano"`
		Attributes   []otlpAttr `json:"attributes,omitempty"`
		Status       otlpStatus `json:"status"`
	}
	otlpAttr struct {
		Key   string    `json:"key"`
		Value otlpValue `json:"value"`
	}
	otlpValue struct {
		String string `json:"stringValue"`
	}
	otlpStatus struct {
		Code    int    `json:"code,omitempty"` // 2: error
		Message string `json:"message,omitempty"`
	}
)

func (t *Tracer) encode(batch []*Span) otlpRequest {
	spans := make([]otlpSpan, len(batch))
	for i, s := range batch {
		o := otlpSpan{
			TraceID: s.trace.String(), SpanID: s.id.String(), Name: s.name, Kind: s.kind,
			Start: strconv.FormatInt(s.start.UnixNano(), 10), End: strconv.FormatInt(s.end.UnixNano(), 10),
		}
		if s.parent != (SpanID{}) {
			o.ParentSpanID = s.parent.String()
		}
		for _, a := range s.attrs {
			o.Attributes = append(o.Attributes, otlpAttr{a.Key, otlpValue{a.Value}})
		}
		if s.err != "" {
			o.Status = otlpStatus{Code: 2, Message: s.err}
		}
		spans[i] = o
	}
	return otlpRequest{ResourceSpans: []otlpResourceSpans{{
		Resource:   otlpResource{Attributes: []otlpAttr{{"service.name", otlpValue{t.service}}}},
		ScopeSpans: []otlpScopeSpans{{Scope: otlpScope{Name: "github.com/killrchat/chatql"}, Spans: spans}},
	}}}
}
