package tracing

import (
	"context"
	"errors"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
)

// GraphQL is the gqlgen extension that traces each query and mutation: a
// server span named by the operation's type and root fields ("mutation
// postMessage"), continuing the trace of the request's traceparent header,
// with the store calls and publishes made under it as its children.
// Subscriptions are not traced: a stream lives for hours.
type GraphQL struct{ Tracer *Tracer }

var (
	_ graphql.HandlerExtension    = GraphQL{}
	_ graphql.ResponseInterceptor = GraphQL{}
)

func (GraphQL) ExtensionName() string                   { return "Tracing" }
func (GraphQL) Validate(graphql.ExecutableSchema) error { return nil }

// InterceptResponse runs around the execution of a query or mutation.
func (g GraphQL) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	if g.Tracer == nil || !graphql.HasOperationContext(ctx) {
		return next(ctx)
	}
	rc := graphql.GetOperationContext(ctx)
	if rc.Operation == nil || rc.Operation.Operation == ast.Subscription {
		return next(ctx)
	}
	op := string(rc.Operation.Operation)
	var fields []string
	for _, f := range graphql.CollectFields(rc, rc.Operation.SelectionSet, nil) {
		if !strings.HasPrefix(f.Name, "__") {
			fields = append(fields, f.Name)
		}
	}
	attrs := []Attr{{"graphql.operation.type", op}}
	if rc.OperationName != "" {
		attrs = append(attrs, Attr{"graphql.operation.name", rc.OperationName})
	}
	ctx, span := g.Tracer.Start(ctx, op+" "+strings.Join(fields, ","), Server, rc.Headers.Get("traceparent"), attrs...)
	resp := next(ctx)
	var err error
	if resp != nil && len(resp.Errors) > 0 {
		err = errors.New(resp.Errors[0].Message)
	}
	span.End(err)
	return resp
}
