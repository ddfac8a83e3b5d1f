package metrics

import (
	"context"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/killrchat/chatql/apierror"
	"github.com/killrchat/chatql/stream"
)

// Label values for what has no root field, or one outside the schema.
const (
	// noOperation labels errors of a request refused before it ran (it
	// does not parse or validate, it is over a limit) and errors with no
	// path.
	noOperation = "none"
	// otherOperation stands for a root field the schema did not have when
	// the server started; with a validated document it does not happen.
	otherOperation = "other"
	// otherCode labels an error whose code is not in apierror.Codes.
	otherCode = "OTHER"
)

// operationBuckets are the bounds, in seconds, of the operation latency
// histograms: from a cached read (a millisecond) to a slow page on a
// loaded cluster.
var operationBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 10}

// GraphQL is a gqlgen extension: it counts and times every root field of
// the operations executed, by operation type and field name, and counts
// the errors of every response by root field and extensions.code.
//
// An operation is labeled by its root fields, which the schema bounds,
// never by its client-chosen operation name: `query Foo { me rooms }`
// counts once for me and once for rooms. A query's or mutation's root field
// is timed from its resolver's start to its selection resolved; a
// subscription's, from the operation's dispatch to its stream open. The
// label children of every root field of the schema are made when the
// extension is added, so that the hot path looks one up without locking
// or allocating.
type GraphQL struct {
	operations *prometheus.CounterVec
	durations  *prometheus.HistogramVec
	errors     *prometheus.CounterVec

	// fields holds the metrics of each root field, by operation type and
	// field name; read-only once Validate has run.
	fields map[ast.Operation]map[string]*fieldMetrics
	// codes are the error codes labeled as such.
	codes map[string]bool
}

// fieldMetrics are one root field's resolved series.
type fieldMetrics struct {
	count    prometheus.Counter
	duration prometheus.Observer
}

var (
	_ graphql.HandlerExtension     = (*GraphQL)(nil)
	_ graphql.RootFieldInterceptor = (*GraphQL)(nil)
	_ graphql.OperationInterceptor = (*GraphQL)(nil)
	_ graphql.ResponseInterceptor  = (*GraphQL)(nil)
)

func newGraphQL(reg prometheus.Registerer) *GraphQL {
	g := &GraphQL{
		operations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Subsystem: "graphql", Name: "operations_total",
			Help: "Root fields of the GraphQL operations executed, by operation type (query, mutation, subscription) and root field name: an operation counts once per root field.",
		}, []string{"type", "operation"}),
		durations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Subsystem: "graphql", Name: "operation_duration_seconds",
			Help:    "Time to resolve a root field with its selection (queries, mutations) or to open its stream (subscriptions), by operation type and root field name.",
			Buckets: operationBuckets,
		}, []string{"type", "operation"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Subsystem: "graphql", Name: "errors_total",
			Help: "Errors sent to clients, by the root field of their path (none: a request refused before it ran, or an error without a path) and extensions.code (OTHER: a code outside the server's table).",
		}, []string{"operation", "code"}),
		fields: map[ast.Operation]map[string]*fieldMetrics{},
		codes:  map[string]bool{},
	}
	for _, code := range apierror.Codes {
		g.codes[code] = true
	}
	reg.MustRegister(g.operations, g.durations, g.errors)
	return g
}

// ExtensionName implements graphql.HandlerExtension.
func (g *GraphQL) ExtensionName() string { return "Metrics" }

// Validate implements graphql.HandlerExtension: it makes the series of every
// root field of the schema, and of the introspection fields.
func (g *GraphQL) Validate(es graphql.ExecutableSchema) error {
	schema := es.Schema()
	for op, def := range map[ast.Operation]*ast.Definition{
		ast.Query: schema.Query, ast.Mutation: schema.Mutation, ast.Subscription: schema.Subscription,
	} {
		if def == nil {
			continue
		}
		names := []string{"__typename", otherOperation}
		if op == ast.Query {
			names = append(names, "__schema", "__type")
		}
		for _, f := range def.Fields {
			names = append(names, f.Name)
		}
		byName := map[string]*fieldMetrics{}
		for _, name := range names {
			byName[name] = &fieldMetrics{
				count:    g.operations.WithLabelValues(string(op), name),
				duration: g.durations.WithLabelValues(string(op), name),
			}
		}
		g.fields[op] = byName
	}
	return nil
}

// field returns the series of a root field (those of "other" for a field
// the schema does not have), nil for an unknown operation type.
func (g *GraphQL) field(op ast.Operation, name string) *fieldMetrics {
	byName := g.fields[op]
	if byName == nil {
		return nil
	}
	if m := byName[name]; m != nil {
		return m
	}
	return byName[otherOperation]
}

// observe counts one root field that ran since start.
func (g *GraphQL) observe(op ast.Operation, name string, start time.Time) {
	if m := g.field(op, name); m != nil {
		m.count.Inc()
		m.duration.Observe(time.Since(start).Seconds())
	}
}

// InterceptRootField times a query's or mutation's root field.
func (g *GraphQL) InterceptRootField(ctx context.Context, next graphql.RootResolver) graphql.Marshaler {
	start := time.Now()
	res := next(ctx)
	rc := graphql.GetOperationContext(ctx)
	if rf := graphql.GetRootFieldContext(ctx); rf != nil && rc.Operation != nil {
		g.observe(rc.Operation.Operation, rf.Field.Name, start)
	}
	return res
}

// InterceptOperation times the start of a subscription gqlgen runs (its
// resolver opens the stream during dispatch). Queries and mutations are
// timed per root field.
func (g *GraphQL) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	rc := graphql.GetOperationContext(ctx)
	if rc.Operation == nil || rc.Operation.Operation != ast.Subscription {
		return next(ctx)
	}
	start := time.Now()
	h := next(ctx)
	for _, f := range graphql.CollectFields(rc, rc.Operation.SelectionSet, []string{"Subscription"}) {
		g.observe(ast.Subscription, f.Name, start)
	}
	return h
}

// InterceptResponse counts the errors of every response, refusals
// included (DispatchError runs the response interceptors too). A response
// without errors costs a length check: subscriptions come here per event.
func (g *GraphQL) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	resp := next(ctx)
	if resp == nil || len(resp.Errors) == 0 {
		return resp
	}
	var rc *graphql.OperationContext
	if graphql.HasOperationContext(ctx) {
		rc = graphql.GetOperationContext(ctx)
	}
	for _, e := range resp.Errors {
		g.countError(rc, e)
	}
	return resp
}

func (g *GraphQL) countError(rc *graphql.OperationContext, e *gqlerror.Error) {
	code := apierror.CodeOf(e)
	if !g.codes[code] {
		code = otherCode
	}
	g.errors.WithLabelValues(g.rootField(rc, e.Path), code).Inc()
}

// rootField names the root field an error's path starts at, as a label.
func (g *GraphQL) rootField(rc *graphql.OperationContext, path ast.Path) string {
	if rc == nil || rc.Operation == nil || len(path) == 0 {
		return noOperation
	}
	alias, ok := path[0].(ast.PathName)
	if !ok {
		return noOperation
	}
	name := fieldByAlias(rc.Doc, rc.Operation.SelectionSet, string(alias), 0)
	if name == "" {
		return noOperation
	}
	if g.fields[rc.Operation.Operation][name] == nil {
		return otherOperation
	}
	return name
}

// fieldByAlias finds the name of the field selected as alias in set,
// through fragments (depth bounds cycles, which validation refuses anyway).
func fieldByAlias(doc *ast.QueryDocument, set ast.SelectionSet, alias string, depth int) string {
	if depth > 32 {
		return ""
	}
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			if s.Alias == alias || (s.Alias == "" && s.Name == alias) {
				return s.Name
			}
		case *ast.InlineFragment:
			if name := fieldByAlias(doc, s.SelectionSet, alias, depth+1); name != "" {
				return name
			}
		case *ast.FragmentSpread:
			def := s.Definition
			if def == nil && doc != nil {
				def = doc.Fragments.ForName(s.Name)
			}
			if def != nil {
				if name := fieldByAlias(doc, def.SelectionSet, alias, depth+1); name != "" {
					return name
				}
			}
		}
	}
	return ""
}

// RoomStreams is what the websocket transport opens roomEvents streams
// with (live.RoomStreams).
type RoomStreams interface {
	OpenRoomEvents(ctx context.Context, room string, after *string, presence bool) (*stream.Room, error)
}

// Rooms counts and times the roomEvents subscriptions the websocket
// transport opens itself (it runs them without gqlgen's dispatch, so the
// extension's interceptors do not see them start).
func (g *GraphQL) Rooms(rooms RoomStreams) RoomStreams { return timedRooms{rooms, g} }

type timedRooms struct {
	RoomStreams
	g *GraphQL
}

func (t timedRooms) OpenRoomEvents(ctx context.Context, room string, after *string, presence bool) (*stream.Room, error) {
	start := time.Now()
	s, err := t.RoomStreams.OpenRoomEvents(ctx, room, after, presence)
	t.g.observe(ast.Subscription, "roomEvents", start)
	return s, err
}
