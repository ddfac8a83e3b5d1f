package auth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/killrchat/chatql/store"
)

const (
	issuer = "chatql"
	// audience is the aud of every access token: the chat API, and no
	// other service that might share the secret, accepts them.
	audience = "chatql"
	// IssuedAtLeeway is how far in the future a token's iat may lie: the
	// clock skew tolerated between the instance that issued a token and
	// the one verifying it. A token issued later than that is refused.
	IssuedAtLeeway = 30 * time.Second
	// maxVerified caps the tokens whose verification is remembered.
	maxVerified = 10_000
)

// Tokens issues and verifies HS256-signed access tokens. It checks the
// token alone; Sessions adds the check that its session still stands.
type Tokens struct {
	secret []byte
	ttl    time.Duration
	now    func() time.Time

	// verified holds the claims of the tokens that passed Parse, until
	// they expire: a client sends the same token with every request, and
	// checking its signature and decoding it again costs more than the
	// lookup. Only tokens that passed are held, so forged ones cost a
	// check each and hold nothing; the map is emptied when full.
	mu       sync.Mutex
	verified map[string]Claims
}

// NewTokens returns a token issuer signing with secret; tokens expire after ttl.
func NewTokens(secret []byte, ttl time.Duration) (*Tokens, error) {
	if len(secret) < 32 {
		return nil, fmt.Errorf("auth: the JWT secret has %d bytes, at least 32 are needed", len(secret))
	}
	if ttl <= 0 {
		return nil, fmt.Errorf("auth: token lifetime must be positive, got %v", ttl)
	}
	return &Tokens{secret: secret, ttl: ttl, now: time.Now, verified: make(map[string]Claims)}, nil
}

// claims carry the user's names beside the login, as they were when the
// token was issued (a refresh reads them again), so a post can denormalize
// its author without reading the users table; the API shows every user's
// current names whatever a copy holds. And the id of the session the token
// belongs to.
type claims struct {
	jwt.RegisteredClaims
	Firstname string `json:"given_name"`
	Lastname  string `json:"family_name"`
	Session   string `json:"sid,omitempty"`
}

// Claims is what a verified access token says.
type Claims struct {
	User store.UserRef
	// Session is the id of the session the token belongs to.
	Session string
	Expires time.Time
}

// Issue returns a signed token for u tied to no session, and the moment it
// expires. Only Tokens.Verify accepts it (tests of other layers); Sessions
// refuse it.
func (t *Tokens) Issue(u store.UserRef) (string, time.Time, error) {
	return t.IssueFor(u, "")
}

// IssueFor returns a signed access token for u in the session with id
// session, and the moment it expires.
func (t *Tokens) IssueFor(u store.UserRef, session string) (string, time.Time, error) {
	now := t.now()
	exp := now.Add(t.ttl).Truncate(time.Second) // a NumericDate has whole seconds
	c := claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    issuer,
			Audience:  jwt.ClaimStrings{audience},
			Subject:   u.Login,
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(exp),
		},
		Firstname: u.Firstname,
		Lastname:  u.Lastname,
		Session:   session,
	}
	signed, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(t.secret)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("auth: sign token: %w", err)
	}
	return signed, exp, nil
}

// Verify checks the token as Parse does and returns the user it names.
func (t *Tokens) Verify(token string) (store.UserRef, error) {
	c, err := t.Parse(token)
	return c.User, err
}

// Parse checks the token's signature and algorithm, its issuer and
// audience, that its exp and iat are JSON numbers (RFC 7519's NumericDate;
// golang-jwt would take a numeric string), that it has not expired and was
// not issued more than IssuedAtLeeway in the future, and returns its
// claims. Errors wrap ErrUnauthenticated.
func (t *Tokens) Parse(token string) (Claims, error) {
	t.mu.Lock()
	c, ok := t.verified[token]
	t.mu.Unlock()
	if ok && t.now().Before(c.Expires) {
		return c, nil
	}
	c, err := t.parse(token)
	if err == nil {
		t.mu.Lock()
		if len(t.verified) >= maxVerified {
			clear(t.verified)
		}
		t.verified[token] = c
		t.mu.Unlock()
	}
	return c, err
}

// parse is Parse without the memory of verified tokens.
func (t *Tokens) parse(token string) (Claims, error) {
	var c claims
	parsed, err := jwt.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return t.secret, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithIssuer(issuer),
		jwt.WithAudience(audience),
		jwt.WithExpirationRequired(),
		jwt.WithTimeFunc(t.now),
	)
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return Claims{}, fmt.Errorf("%w: the token has expired; refresh it or log in again", ErrUnauthenticated)
	case err != nil:
		return Claims{}, fmt.Errorf("%w: the token is not valid", ErrUnauthenticated)
	case c.Subject == "":
		return Claims{}, fmt.Errorf("%w: the token names no user", ErrUnauthenticated)
	case c.IssuedAt == nil || c.IssuedAt.After(t.now().Add(IssuedAtLeeway)):
		return Claims{}, fmt.Errorf("%w: the token is not valid", ErrUnauthenticated)
	case !numericDates(parsed.Raw, "exp", "iat", "nbf"):
		return Claims{}, fmt.Errorf("%w: the token is not valid", ErrUnauthenticated)
	}
	return Claims{
		User:    store.UserRef{Login: c.Subject, Firstname: c.Firstname, Lastname: c.Lastname},
		Session: c.Session,
		Expires: c.ExpiresAt.Time,
	}, nil
}

// numericDates reports whether each of the named claims of the signed
// token raw is absent or a JSON number, as RFC 7519 requires of dates.
// Only called on a token whose signature checked, so the payload is ours.
func numericDates(raw string, names ...string) bool {
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		return false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return false
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(payload, &fields); err != nil {
		return false
	}
	for _, name := range names {
		if v, ok := fields[name]; ok && (len(v) == 0 || v[0] != '-' && (v[0] < '0' || v[0] > '9')) {
			return false
		}
	}
	return true
}

// Authenticate returns ctx carrying the user the token names, or, if the
// token fails verification, the reason, for UserFrom to report. It checks
// the token alone (see Sessions.Authenticate).
func (t *Tokens) Authenticate(ctx context.Context, token string) context.Context {
	c, err := t.Parse(token)
	if err != nil {
		return WithRejectedToken(ctx, err)
	}
	return withClaims(ctx, c)
}

// Middleware authenticates requests that carry 'Authorization: Bearer
// <token>' with Authenticate. Requests without the header pass through
// anonymous.
func (t *Tokens) Middleware(next http.Handler) http.Handler {
	return middleware(t.Authenticate, next)
}
