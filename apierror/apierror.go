// Package apierror is the one table of the error codes clients see in
// extensions.code, and the mapping from the chat domain's sentinel errors
// (store, auth, ratelimit, broker) to them. The resolvers, the live
// transport, the HTTP transport and the query limits all code their errors
// from here.
package apierror

import (
	"errors"
	"fmt"
	"time"

	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/killrchat/chatql/auth"
	"github.com/killrchat/chatql/broker"
	"github.com/killrchat/chatql/files"
	"github.com/killrchat/chatql/ratelimit"
	"github.com/killrchat/chatql/store"
)

// The codes of the domain's errors, which resolvers answer with.
const (
	Unauthenticated = "UNAUTHENTICATED"
	Forbidden       = "FORBIDDEN"
	NotFound        = "NOT_FOUND"
	Conflict        = "CONFLICT"
	BadUserInput    = "BAD_USER_INPUT"
	Internal        = "INTERNAL"
	// RateLimited comes with extensions.retryAfter, the seconds to wait.
	RateLimited = "RATE_LIMITED"
	// QuotaExceeded: the caller's files would take more than their quota.
	QuotaExceeded = "QUOTA_EXCEEDED"
	// Unavailable: a service the request needs (the object store) failed
	// or is slow; retrying later may succeed. It comes with
	// extensions.retryAfter.
	Unavailable = "UNAVAILABLE"
	// SlowMode: a post came sooner after the poster's previous one than
	// the room's slow mode allows. It comes with extensions.retryAfter.
	SlowMode = "SLOW_MODE"
	// TwoFactorRequired: the sign-in or refresh needs a one-time code; it
	// comes with extensions.challenge (answer it with verifyTwoFactor) and
	// extensions.challengeExpiresAt.
	TwoFactorRequired = "TWO_FACTOR_REQUIRED"
	// FreshSignInRequired: the operation needs a proof of the account
	// (its password, a one-time code) that was not given, or a session
	// that signed in moments ago: sign in again, then retry.
	FreshSignInRequired = "FRESH_SIGN_IN_REQUIRED"
)

// The codes of verdicts on the request itself, given before any resolver
// runs: by gqlgen's parser and validator, the query limits, persisted
// queries and the transports.
const (
	ParseFailed            = errcode.ParseFailed      // GRAPHQL_PARSE_FAILED
	ValidationFailed       = errcode.ValidationFailed // GRAPHQL_VALIDATION_FAILED
	ComplexityExceeded     = "COMPLEXITY_LIMIT_EXCEEDED"
	BadRequest             = "BAD_REQUEST"
	PayloadTooLarge        = "PAYLOAD_TOO_LARGE"
	PersistedQueryNotFound = "PERSISTED_QUERY_NOT_FOUND"
	TooManyConnections     = "TOO_MANY_CONNECTIONS"
)

// Codes are every code above: the values the server's error metrics label
// errors with (any other code counts as OTHER). A new code goes here too.
var Codes = []string{
	Unauthenticated, Forbidden, NotFound, Conflict, BadUserInput, Internal, RateLimited,
	QuotaExceeded, Unavailable, SlowMode, TwoFactorRequired, FreshSignInRequired,
	ParseFailed, ValidationFailed, ComplexityExceeded, BadRequest, PayloadTooLarge,
	PersistedQueryNotFound, TooManyConnections,
}

// busyRetryAfter is the retryAfter hint, in seconds, of a refusal because
// too many passwords are being hashed.
const busyRetryAfter = 1

// unavailableRetryAfter is the retryAfter hint, in seconds, of an
// UNAVAILABLE error.
const unavailableRetryAfter = 5

// Of maps an error to its client-facing code. Only errors wrapping a known
// sentinel have messages meant for clients (public); everything else is
// INTERNAL and its details stay in the server log.
func Of(err error) (code string, public bool) {
	switch {
	case errors.Is(err, auth.ErrTwoFactorRequired):
		return TwoFactorRequired, true
	case errors.Is(err, auth.ErrFreshSignInRequired):
		return FreshSignInRequired, true
	case errors.Is(err, auth.ErrUnauthenticated):
		return Unauthenticated, true
	case errors.Is(err, auth.ErrBusy):
		return RateLimited, true
	case errors.Is(err, store.ErrForbidden):
		return Forbidden, true
	case errors.Is(err, store.ErrNotFound):
		return NotFound, true
	case errors.Is(err, store.ErrConflict):
		return Conflict, true
	case errors.Is(err, store.ErrInvalid):
		return BadUserInput, true
	case errors.Is(err, store.ErrQuota):
		return QuotaExceeded, true
	case errors.Is(err, files.ErrUnavailable):
		return Unavailable, true
	case errors.As(err, new(*ratelimit.Exceeded)):
		return RateLimited, true
	case store.IsPostTooSoon(err):
		return SlowMode, true
	case errors.Is(err, broker.ErrSlowSubscriber), errors.Is(err, broker.ErrClosed):
		return Internal, true
	}
	return Internal, false
}

// RetryAfter is the extensions.retryAfter of a RATE_LIMITED, UNAVAILABLE
// or SLOW_MODE error, in whole seconds; ok is false for any other error.
func RetryAfter(err error) (seconds int, ok bool) {
	if soon, isSlow := errors.AsType[*store.PostTooSoon](err); isSlow {
		return soon.RetryAfterSeconds(), true
	}
	if ex, isLimit := errors.AsType[*ratelimit.Exceeded](err); isLimit {
		return ex.RetryAfterSeconds(), true
	}
	if errors.Is(err, auth.ErrBusy) {
		return busyRetryAfter, true
	}
	if errors.Is(err, files.ErrUnavailable) {
		return unavailableRetryAfter, true
	}
	return 0, false
}

// Field is the input field an error of code BAD_USER_INPUT is about, as
// the schema names it (its extensions.field): an argument, or a field of
// an input object under its argument ("input.firstname"); "" when the
// error names none.
func Field(err error) string {
	if fe, ok := errors.AsType[*store.FieldError](err); ok {
		return fe.Field
	}
	return ""
}

// Challenge is the extensions.challenge and challengeExpiresAt of a
// TWO_FACTOR_REQUIRED error; ok is false for any other error.
func Challenge(err error) (challenge string, expiresAt time.Time, ok bool) {
	if tf, is := errors.AsType[*auth.TwoFactorRequired](err); is {
		return tf.Challenge, tf.ExpiresAt, true
	}
	return "", time.Time{}, false
}

// New is an error with a code and a message for the client.
func New(code, format string, args ...any) *gqlerror.Error {
	return &gqlerror.Error{Message: fmt.Sprintf(format, args...), Extensions: map[string]any{"code": code}}
}

// Set gives e the code.
func Set(e *gqlerror.Error, code string) {
	if e.Extensions == nil {
		e.Extensions = map[string]any{}
	}
	e.Extensions["code"] = code
}

// CodeOf is e's code, or "" when it has none.
func CodeOf(e *gqlerror.Error) string {
	code, _ := e.Extensions["code"].(string)
	return code
}

// Has reports whether any of errs has the code.
func Has(errs gqlerror.List, code string) bool {
	for _, e := range errs {
		if CodeOf(e) == code {
			return true
		}
	}
	return false
}
