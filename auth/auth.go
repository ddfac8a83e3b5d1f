// Package auth turns credentials into identities: slow password hashes for
// storage, short-lived signed JWTs (access tokens) tied to stored sessions
// with rotating refresh tokens, and the verified caller carried in a
// request's context. Permission checks read the caller from the context,
// never from an argument.
package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/killrchat/chatql/store"
)

// ErrUnauthenticated means the request carries no valid token, or the
// credentials do not match. Its wrapped message says which.
var ErrUnauthenticated = errors.New("unauthenticated")

// ErrFreshSignInRequired means the operation needs a proof the caller
// did not give (a password, a code), or else a session that signed in
// moments ago: signing in again and retrying it passes.
var ErrFreshSignInRequired = errors.New("a fresh sign-in is required")

type callerKey struct{}

type caller struct {
	user    store.UserRef
	session string // the session id of the access token
	expires int64  // when the access token expires, in Unix nanoseconds
	bot     bool   // authenticated by a bot's API key
	err     error  // why a presented token was rejected
}

// WithUser returns a context carrying the verified user u.
func WithUser(ctx context.Context, u store.UserRef) context.Context {
	return context.WithValue(ctx, callerKey{}, caller{user: u})
}

// WithCallerOf returns ctx carrying the caller of from, as verified for
// from's request (user, session, token expiry), or ctx as it is when from
// has none: an event stream opened by one request runs the operations that
// later requests start, each as its own request's caller.
func WithCallerOf(ctx, from context.Context) context.Context {
	return carry(ctx, from, callerKey{})
}

// WithRequestOf returns ctx carrying what Middleware put in from: the
// caller (WithCallerOf), and the request's user agent and origin, which a
// session started in ctx records. A websocket keeps them from its upgrade
// request without the rest of the request.
func WithRequestOf(ctx, from context.Context) context.Context {
	ctx = carry(ctx, from, callerKey{})
	ctx = carry(ctx, from, userAgentKey{})
	return carry(ctx, from, originKey{})
}

// carry returns ctx carrying from's value of key, as it is, if from has one.
func carry(ctx, from context.Context, key any) context.Context {
	if v := from.Value(key); v != nil {
		return context.WithValue(ctx, key, v)
	}
	return ctx
}

// withClaims returns a context carrying the verified caller of an access
// token.
func withClaims(ctx context.Context, c Claims) context.Context {
	return context.WithValue(ctx, callerKey{}, caller{user: c.User, session: c.Session, expires: c.Expires.UnixNano()})
}

// WithRejectedToken records that the request presented a token that failed
// verification, so that operations needing a user can say why.
func WithRejectedToken(ctx context.Context, err error) context.Context {
	return context.WithValue(ctx, callerKey{}, caller{err: err})
}

// UserFrom returns the verified user of the request, or an error wrapping
// ErrUnauthenticated that says what is missing.
func UserFrom(ctx context.Context) (store.UserRef, error) {
	c, err := callerFrom(ctx)
	return c.user, err
}

// IsBot reports whether the request's caller is a bot, authenticated by
// its API key.
func IsBot(ctx context.Context) bool {
	c, err := callerFrom(ctx)
	return err == nil && c.bot
}

// SessionFrom returns the verified user of the request and the id of the
// session its token belongs to (empty for a token of no session).
func SessionFrom(ctx context.Context) (store.UserRef, string, error) {
	c, err := callerFrom(ctx)
	return c.user, c.session, err
}

func callerFrom(ctx context.Context) (caller, error) {
	c, ok := ctx.Value(callerKey{}).(caller)
	switch {
	case !ok:
		return caller{}, fmt.Errorf("%w: log in and send the token as 'Authorization: Bearer <token>'", ErrUnauthenticated)
	case c.err != nil:
		return caller{}, c.err
	}
	return c, nil
}

// middleware authenticates requests that carry 'Authorization: Bearer
// <token>' with authenticate. Requests without the header pass through
// anonymous: signup, login and introspection need no token, and resolvers
// decide what does.
func middleware(authenticate func(context.Context, string) context.Context, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := withUserAgent(r.Context(), r)
		h := r.Header.Get("Authorization")
		if h == "" {
			next.ServeHTTP(w, r.WithContext(ctx))
			return
		}
		scheme, token, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
			ctx = WithRejectedToken(ctx, fmt.Errorf("%w: the Authorization header must be 'Bearer <token>'", ErrUnauthenticated))
		} else {
			ctx = authenticate(ctx, strings.TrimSpace(token))
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}
