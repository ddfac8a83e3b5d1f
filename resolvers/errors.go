package resolvers

import (
	"context"
	"errors"
	"log/slog"
	"time"
	"unicode/utf8"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/killrchat/chatql/apierror"
	"github.com/killrchat/chatql/store"
)

// ErrorPresenter turns every error into a GraphQL error with a code. It is
// the one place where errors meet the wire.
func (r *Resolver) ErrorPresenter(ctx context.Context, err error) *gqlerror.Error {
	var gqlErr *gqlerror.Error
	if errors.As(err, &gqlErr) && gqlErr.Err == nil {
		if apierror.CodeOf(gqlErr) != "" {
			// A verdict on the request itself, coded where it was made:
			// gqlgen's parse and validation (GRAPHQL_PARSE_FAILED,
			// GRAPHQL_VALIDATION_FAILED), the query limits
			// (COMPLEXITY_LIMIT_EXCEEDED), persisted queries
			// (PERSISTED_QUERY_NOT_FOUND), a malformed request (BAD_REQUEST).
			return clipped(graphql.DefaultErrorPresenter(ctx, err))
		}
	}
	return clipped(r.present(ctx, err))
}

// maxMessageBytes bounds an error message. Messages name the input they
// refuse ("room \"x\": not found"); without a bound, a megabyte name sent
// in twenty aliases would come back as twenty megabytes.
const maxMessageBytes = 300

// clipped cuts e's message to maxMessageBytes, on a character boundary.
func clipped(e *gqlerror.Error) *gqlerror.Error {
	if len(e.Message) <= maxMessageBytes {
		return e
	}
	cut := maxMessageBytes
	for cut > 0 && !utf8.RuneStart(e.Message[cut]) {
		cut--
	}
	e.Message = e.Message[:cut] + "..."
	return e
}

// present gives err its code; an error that wraps no known sentinel is
// logged and shown only as "internal error". The error of a request its
// client gave up on (its context canceled: the client went away) is no
// fault of the server's, and is logged at debug level only.
func (r *Resolver) present(ctx context.Context, err error) *gqlerror.Error {
	presented := graphql.DefaultErrorPresenter(ctx, err)
	code, public := apierror.Of(err)
	if !public {
		level := slog.LevelError
		if errors.Is(err, context.Canceled) && errors.Is(ctx.Err(), context.Canceled) {
			level = slog.LevelDebug
		}
		r.Log.Log(ctx, level, "request failed", "err", err, "path", presented.Path.String())
		presented.Message = "internal error"
	}
	apierror.Set(presented, code)
	if field := apierror.Field(err); field != "" {
		presented.Extensions["field"] = field
	}
	if seconds, ok := apierror.RetryAfter(err); ok {
		presented.Extensions["retryAfter"] = seconds
	}
	if challenge, expires, ok := apierror.Challenge(err); ok {
		presented.Extensions["challenge"] = challenge
		presented.Extensions["challengeExpiresAt"] = expires.UTC().Format(time.RFC3339)
	}
	return presented
}

// EveryInvalidField is a field middleware (the handler's AroundFields):
// an error about several invalid fields of one input (store.InvalidFields)
// becomes one GraphQL error per field, each with its extensions.field, so
// that a client learns of every mistake at once.
func EveryInvalidField(ctx context.Context, next graphql.Resolver) (any, error) {
	res, err := next(ctx)
	if err == nil {
		return res, nil
	}
	var many store.InvalidFields
	if !errors.As(err, &many) {
		return res, err
	}
	var locations []gqlerror.Location
	if fc := graphql.GetFieldContext(ctx); fc != nil && fc.Field.Position != nil && fc.Field.Position.Line > 0 {
		locations = []gqlerror.Location{{Line: fc.Field.Position.Line, Column: fc.Field.Position.Column}}
	}
	list := make(gqlerror.List, len(many))
	for i, e := range many {
		list[i] = &gqlerror.Error{Err: e, Message: e.Error(), Path: graphql.GetPath(ctx), Locations: locations}
	}
	return res, list
}

// Recover turns a resolver panic into an INTERNAL error and logs it; the
// server keeps running.
func (r *Resolver) Recover(ctx context.Context, p any) error {
	r.Log.ErrorContext(ctx, "resolver panic", "panic", p)
	return errors.New("internal error: resolver panic")
}
