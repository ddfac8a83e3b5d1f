// Package auth turns credentials into identities: slow password hashes for
// storage, signed JWTs for sessions, and the verified caller carried in a
// request's context. Permission checks read the caller from the context,
// never from an argument.
package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/crypto/bcrypt"

	"github.com/killrchat/chatql/store"
)

// ErrUnauthenticated means the request carries no valid token, or the
// credentials do not match. Its wrapped message says which.
var ErrUnauthenticated = errors.New("unauthenticated")

const issuer = "chatql"

// Tokens issues and verifies HS256-signed session tokens.
type Tokens struct {
	secret []byte
	ttl    time.Duration
	now    func() time.Time
}

// NewTokens returns a token issuer signing with secret; tokens expire after ttl.
func NewTokens(secret []byte, ttl time.Duration) (*Tokens, error) {
	if len(secret) < 32 {
		return nil, fmt.Errorf("auth: the JWT secret has %d bytes, at least 32 are needed", len(secret))
	}
	if ttl <= 0 {
		return nil, fmt.Errorf("auth: token lifetime must be positive, got %v", ttl)
	}
	return &Tokens{secret: secret, ttl: ttl, now: time.Now}, nil
}

// claims carry the user's immutable names beside the login, so a post can
// denormalize its author without reading the users table.
type claims struct {
	jwt.RegisteredClaims
	Firstname string `json:"given_name"`
	Lastname  string `json:"family_name"`
}

// Issue returns a signed token for u and the moment it expires.
func (t *Tokens) Issue(u store.UserRef) (string, time.Time, error) {
	now := t.now()
	exp := now.Add(t.ttl)
	c := claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    issuer,
			Subject:   u.Login,
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(exp),
		},
		Firstname: u.Firstname,
		Lastname:  u.Lastname,
	}
	signed, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(t.secret)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("auth: sign token: %w", err)
	}
	return signed, exp, nil
}

// Verify checks the token's signature, algorithm, issuer and expiry, and
// returns the user it names. Errors wrap ErrUnauthenticated.
func (t *Tokens) Verify(token string) (store.UserRef, error) {
	var c claims
	_, err := jwt.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return t.secret, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithIssuer(issuer),
		jwt.WithExpirationRequired(),
		jwt.WithTimeFunc(t.now),
	)
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return store.UserRef{}, fmt.Errorf("%w: the token has expired, log in again", ErrUnauthenticated)
	case err != nil:
		return store.UserRef{}, fmt.Errorf("%w: the token is not valid", ErrUnauthenticated)
	case c.Subject == "":
		return store.UserRef{}, fmt.Errorf("%w: the token names no user", ErrUnauthenticated)
	}
	return store.UserRef{Login: c.Subject, Firstname: c.Firstname, Lastname: c.Lastname}, nil
}

// Passwords hashes and checks passwords with bcrypt.
type Passwords struct {
	cost  int
	dummy []byte // a hash to check against when the login is unknown
}

// NewPasswords returns a hasher of the given bcrypt cost (bcrypt.DefaultCost
// in production; tests may use bcrypt.MinCost).
func NewPasswords(cost int) (*Passwords, error) {
	dummy, err := bcrypt.GenerateFromPassword([]byte("no such user, no such password"), cost)
	if err != nil {
		return nil, fmt.Errorf("auth: bcrypt cost %d: %w", cost, err)
	}
	return &Passwords{cost: cost, dummy: dummy}, nil
}

// Hash returns the slow hash to store for password.
func (p *Passwords) Hash(password string) ([]byte, error) {
	h, err := bcrypt.GenerateFromPassword([]byte(password), p.cost)
	if err != nil {
		return nil, fmt.Errorf("auth: hash password: %w", err)
	}
	return h, nil
}

// Check returns nil if password matches hash. A nil hash (unknown login) is
// checked against a dummy hash, so both failures take the same time and the
// response does not reveal which logins exist.
func (p *Passwords) Check(hash []byte, password string) error {
	if hash == nil {
		hash = p.dummy
		_ = bcrypt.CompareHashAndPassword(hash, []byte(password))
		return fmt.Errorf("%w: wrong login or password", ErrUnauthenticated)
	}
	if bcrypt.CompareHashAndPassword(hash, []byte(password)) != nil {
		return fmt.Errorf("%w: wrong login or password", ErrUnauthenticated)
	}
	return nil
}

type callerKey struct{}

type caller struct {
	user store.UserRef
	err  error // why a presented token was rejected
}

// WithUser returns a context carrying the verified user u.
func WithUser(ctx context.Context, u store.UserRef) context.Context {
	return context.WithValue(ctx, callerKey{}, caller{user: u})
}

// WithRejectedToken records that the request presented a token that failed
// verification, so that operations needing a user can say why.
func WithRejectedToken(ctx context.Context, err error) context.Context {
	return context.WithValue(ctx, callerKey{}, caller{err: err})
}

// UserFrom returns the verified user of the request, or an error wrapping
// ErrUnauthenticated that says what is missing.
func UserFrom(ctx context.Context) (store.UserRef, error) {
	c, ok := ctx.Value(callerKey{}).(caller)
	switch {
	case !ok:
		return store.UserRef{}, fmt.Errorf("%w: log in and send the token as 'Authorization: Bearer <token>'", ErrUnauthenticated)
	case c.err != nil:
		return store.UserRef{}, c.err
	}
	return c.user, nil
}

// Authenticate returns ctx carrying the user the token names, or, if the
// token fails verification, the reason, for UserFrom to report.
func (t *Tokens) Authenticate(ctx context.Context, token string) context.Context {
	u, err := t.Verify(token)
	if err != nil {
		return WithRejectedToken(ctx, err)
	}
	return WithUser(ctx, u)
}

// Middleware authenticates requests that carry 'Authorization: Bearer <token>'.
// Requests without the header pass through anonymous: signup, login and
// introspection need no token, and resolvers decide what does.
func (t *Tokens) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := r.Header.Get("Authorization")
		if h == "" {
			next.ServeHTTP(w, r)
			return
		}
		scheme, token, ok := strings.Cut(h, " ")
		ctx := r.Context()
		if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
			ctx = WithRejectedToken(ctx, fmt.Errorf("%w: the Authorization header must be 'Bearer <token>'", ErrUnauthenticated))
		} else {
			ctx = t.Authenticate(ctx, strings.TrimSpace(token))
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}
