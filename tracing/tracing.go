// Package tracing records OpenTelemetry traces of the server's requests
// (a GraphQL operation, the store calls it makes, the events it publishes)
// and exports them to an OTLP/HTTP endpoint (a collector, Jaeger, Tempo) in
// OTLP's JSON encoding. It is off unless an endpoint is configured, and
// then costs a span per operation and per store call.
//
// It is OTLP written out, not the OpenTelemetry SDK: the SDK's exporters
// bring gRPC and protobuf into every build of the server, which would cost
// every first `go run .` its compile time, for a feature most runs leave
// off. What it records is what the spec says: W3C trace context (an
// incoming traceparent header continues the caller's trace), span kinds,
// attributes, error status.
package tracing

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"sync/atomic"
	"time"
)

// TraceID and SpanID identify a trace and a span, as W3C trace context
// and OTLP do.
type (
	TraceID [16]byte
	SpanID  [8]byte
)

func (t TraceID) String() string { return hex.EncodeToString(t[:]) }
func (s SpanID) String() string  { return hex.EncodeToString(s[:]) }

// Kind is a span's kind, numbered as OTLP numbers them.
type Kind int

const (
	Internal Kind = 1
	Server   Kind = 2
	Producer Kind = 4
)

// Attr is a span attribute with a string value.
type Attr struct{ Key, Value string }

// Span is one timed piece of work of a trace. A nil *Span is a span not
// recorded: its methods do nothing.
type Span struct {
	tracer     *Tracer
	trace      TraceID
	id, parent SpanID
	name       string
	kind       Kind
	start, end time.Time
	attrs      []Attr
	err        string // the error that ended it, if any
}

// End ends the span, with err as its error status when not nil, and hands
// it to the exporter.
func (s *Span) End(err error) {
	if s == nil {
		return
	}
	s.end = time.Now()
	if err != nil {
		s.err = err.Error()
	}
	s.tracer.export(s)
}

// SetAttr adds an attribute.
func (s *Span) SetAttr(key, value string) {
	if s != nil {
		s.attrs = append(s.attrs, Attr{key, value})
	}
}

// TraceID is the span's trace (zero for a nil span).
func (s *Span) TraceID() TraceID {
	if s == nil {
		return TraceID{}
	}
	return s.trace
}

type spanKey struct{}

// FromContext is the span ctx carries, or nil.
func FromContext(ctx context.Context) *Span {
	if enabled.Load() == 0 {
		return nil
	}
	s, _ := ctx.Value(spanKey{}).(*Span)
	return s
}

// enabled counts the tracers running, so that a server without one skips
// even the context lookup.
var enabled atomic.Int32

// Start begins a span named name of kind as a child of the span in ctx, or
// of remote (an incoming traceparent, when valid), or else as the root of a
// new trace; it returns ctx carrying it. On a nil Tracer it records
// nothing and returns ctx.
func (t *Tracer) Start(ctx context.Context, name string, kind Kind, remote string, attrs ...Attr) (context.Context, *Span) {
	if t == nil {
		return ctx, nil
	}
	s := &Span{tracer: t, name: name, kind: kind, start: time.Now(), attrs: attrs}
	_, _ = rand.Read(s.id[:])
	if parent := FromContext(ctx); parent != nil {
		s.trace, s.parent = parent.trace, parent.id
	} else if trace, parent, ok := ParseTraceparent(remote); ok {
		s.trace, s.parent = trace, parent
	} else {
		_, _ = rand.Read(s.trace[:])
	}
	return context.WithValue(ctx, spanKey{}, s), s
}

// Record records a finished child span of the span in ctx, if any: work
// timed from start to now that starts no spans of its own (a store call, a
// publish). It costs nothing without a span in ctx.
func Record(ctx context.Context, name string, kind Kind, start time.Time, err error, attrs ...Attr) {
	parent := FromContext(ctx)
	if parent == nil {
		return
	}
	s := &Span{tracer: parent.tracer, trace: parent.trace, parent: parent.id, name: name, kind: kind, start: start, attrs: attrs}
	_, _ = rand.Read(s.id[:])
	s.End(err)
}

// ParseTraceparent reads a W3C traceparent header
// (version-traceid-parentid-flags, version 00), rejecting all-zero ids.
func ParseTraceparent(h string) (TraceID, SpanID, bool) {
	var (
		trace  TraceID
		parent SpanID
	)
	parts := strings.Split(strings.TrimSpace(h), "-")
	if len(parts) < 4 || len(parts[0]) != 2 || parts[0] == "ff" || len(parts[1]) != 32 || len(parts[2]) != 16 || len(parts[3]) != 2 {
		return trace, parent, false
	}
	if _, err := hex.Decode(trace[:], []byte(parts[1])); err != nil || trace == (TraceID{}) {
		return trace, parent, false
	}
	if _, err := hex.Decode(parent[:], []byte(parts[2])); err != nil || parent == (SpanID{}) {
		return trace, parent, false
	}
	return trace, parent, true
}
