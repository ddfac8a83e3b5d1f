package resolvers

import (
	"context"
	"errors"
	"unicode/utf8"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/killrchat/chatql/auth"
	"github.com/killrchat/chatql/broker"
	"github.com/killrchat/chatql/ratelimit"
	"github.com/killrchat/chatql/store"
)

// The error codes clients see in extensions.code.
const (
	CodeUnauthenticated = "UNAUTHENTICATED"
	CodeForbidden       = "FORBIDDEN"
	CodeNotFound        = "NOT_FOUND"
	CodeConflict        = "CONFLICT"
	CodeBadUserInput    = "BAD_USER_INPUT"
	CodeInternal        = "INTERNAL"
	// CodeRateLimited comes with extensions.retryAfter, the seconds to wait.
	CodeRateLimited = "RATE_LIMITED"
)

// busyRetryAfter is the retryAfter hint, in seconds, of a refusal because
// too many passwords are being hashed.
const busyRetryAfter = 1

// codeOf maps an error to its client-facing code. Only errors wrapping a
// known sentinel have messages meant for clients; everything else is
// INTERNAL and its details stay in the server log.
func codeOf(err error) (code string, public bool) {
	switch {
	case errors.Is(err, auth.ErrUnauthenticated):
		return CodeUnauthenticated, true
	case errors.Is(err, auth.ErrBusy):
		return CodeRateLimited, true
	case errors.Is(err, store.ErrForbidden):
		return CodeForbidden, true
	case errors.Is(err, store.ErrNotFound):
		return CodeNotFound, true
	case errors.Is(err, store.ErrConflict):
		return CodeConflict, true
	case errors.Is(err, store.ErrInvalid):
		return CodeBadUserInput, true
	case errors.As(err, new(*ratelimit.Exceeded)):
		return CodeRateLimited, true
	case errors.Is(err, broker.ErrSlowSubscriber), errors.Is(err, broker.ErrClosed):
		return CodeInternal, true
	}
	return CodeInternal, false
}

// ErrorPresenter turns every error into a GraphQL error with a code. It is
// the one place where errors meet the wire.
func (r *Resolver) ErrorPresenter(ctx context.Context, err error) *gqlerror.Error {
	var gqlErr *gqlerror.Error
	if errors.As(err, &gqlErr) && gqlErr.Err == nil {
		if code, _ := gqlErr.Extensions["code"].(string); code != "" {
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
// logged and shown only as "internal error".
func (r *Resolver) present(ctx context.Context, err error) *gqlerror.Error {
	presented := graphql.DefaultErrorPresenter(ctx, err)
	code, public := codeOf(err)
	if !public {
		r.Log.ErrorContext(ctx, "request failed", "err", err, "path", presented.Path.String())
		presented.Message = "internal error"
	}
	setCode(presented, code)
	if ex, ok := errors.AsType[*ratelimit.Exceeded](err); ok {
		presented.Extensions["retryAfter"] = ex.RetryAfterSeconds()
	} else if errors.Is(err, auth.ErrBusy) {
		presented.Extensions["retryAfter"] = busyRetryAfter
	}
	return presented
}

func setCode(e *gqlerror.Error, code string) {
	if e.Extensions == nil {
		e.Extensions = map[string]any{}
	}
	e.Extensions["code"] = code
}

// Recover turns a resolver panic into an INTERNAL error and logs it; the
// server keeps running.
func (r *Resolver) Recover(ctx context.Context, p any) error {
	r.Log.ErrorContext(ctx, "resolver panic", "panic", p)
	return errors.New("internal error: resolver panic")
}
