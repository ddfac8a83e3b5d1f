package auth

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/killrchat/chatql/store"
)

var testSecret = []byte("0123456789abcdef0123456789abcdef")

func newTestTokens(t *testing.T) *Tokens {
	t.Helper()
	tokens, err := NewTokens(testSecret, 15*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return tokens
}

// sign signs arbitrary claims with the test secret, as a forger holding
// the secret, or a buggy issuer, would.
func sign(t *testing.T, c jwt.Claims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(testSecret)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// validClaims are the claims of a good token issued now.
func validClaims(now time.Time) jwt.MapClaims {
	return jwt.MapClaims{
		"iss": issuer, "aud": audience, "sub": "alice", "sid": "s1",
		"iat": now.Unix(), "exp": now.Add(time.Minute).Unix(),
	}
}

func TestParseIssued(t *testing.T) {
	tokens := newTestTokens(t)
	token, exp, err := tokens.IssueFor(store.UserRef{Login: "alice", Firstname: "Alice", Lastname: "L"}, "s1")
	if err != nil {
		t.Fatal(err)
	}
	c, err := tokens.Parse(token)
	if err != nil {
		t.Fatalf("Parse(issued) = %v", err)
	}
	want := Claims{User: store.UserRef{Login: "alice", Firstname: "Alice", Lastname: "L"}, Session: "s1"}
	if c.User != want.User || c.Session != want.Session || !c.Expires.Equal(exp) {
		t.Errorf("Parse(issued) = %+v, want %+v expiring %v", c, want, exp)
	}
}

// TestParseRefuses checks each claim rule on tokens signed with the right
// secret: only the claims are wrong.
func TestParseRefuses(t *testing.T) {
	tokens := newTestTokens(t)
	now := time.Now()
	if _, err := tokens.Parse(sign(t, validClaims(now))); err != nil {
		t.Fatalf("the valid claims are refused: %v", err)
	}
	cases := []struct {
		name   string
		change func(c jwt.MapClaims)
	}{
		{"no aud", func(c jwt.MapClaims) { delete(c, "aud") }},
		{"other aud", func(c jwt.MapClaims) { c["aud"] = "billing" }},
		{"other aud list", func(c jwt.MapClaims) { c["aud"] = []string{"billing", "mail"} }},
		{"iat past the leeway", func(c jwt.MapClaims) { c["iat"] = now.Add(IssuedAtLeeway + 5*time.Second).Unix() }},
		{"iat far ahead", func(c jwt.MapClaims) { c["iat"] = now.Add(24 * time.Hour).Unix() }},
		{"no iat", func(c jwt.MapClaims) { delete(c, "iat") }},
		{"string exp", func(c jwt.MapClaims) { c["exp"] = "9999999999" }},
		{"string iat", func(c jwt.MapClaims) { c["iat"] = "1700000000" }},
		{"expired", func(c jwt.MapClaims) { c["exp"] = now.Add(-time.Second).Unix() }},
		{"no exp", func(c jwt.MapClaims) { delete(c, "exp") }},
		{"other issuer", func(c jwt.MapClaims) { c["iss"] = "someone" }},
		{"no subject", func(c jwt.MapClaims) { delete(c, "sub") }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := validClaims(now)
			tc.change(c)
			if got, err := tokens.Parse(sign(t, c)); !errors.Is(err, ErrUnauthenticated) {
				t.Errorf("Parse(%v) = %+v, %v; want ErrUnauthenticated", c, got, err)
			}
		})
	}
}

// TestParseIssuedAtLeeway accepts a token from a clock slightly ahead.
func TestParseIssuedAtLeeway(t *testing.T) {
	tokens := newTestTokens(t)
	now := time.Now()
	c := validClaims(now)
	c["iat"] = now.Add(IssuedAtLeeway - 5*time.Second).Unix()
	if _, err := tokens.Parse(sign(t, c)); err != nil {
		t.Errorf("a token issued %v ahead is refused: %v", IssuedAtLeeway-5*time.Second, err)
	}
}

func TestParseRefusesOtherAlgorithms(t *testing.T) {
	tokens := newTestTokens(t)
	none, err := jwt.NewWithClaims(jwt.SigningMethodNone, validClaims(time.Now())).SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tokens.Parse(none); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("Parse(alg none) = %v, want ErrUnauthenticated", err)
	}
}

// TestParseRemembersVerifiedTokens: a token that passed is answered from
// memory, with the same claims, until it expires; one that failed is not
// remembered, however often it comes; the memory is bounded.
func TestParseRemembersVerifiedTokens(t *testing.T) {
	tokens := newTestTokens(t)
	now := time.Now()
	tokens.now = func() time.Time { return now }
	token, _, err := tokens.IssueFor(store.UserRef{Login: "alice"}, "s1")
	if err != nil {
		t.Fatal(err)
	}
	first, err := tokens.Parse(token)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := tokens.Parse(token); err != nil || again != first {
		t.Fatalf("Parse again = %+v, %v; want %+v", again, err, first)
	}
	if _, ok := tokens.verified[token]; !ok {
		t.Fatal("a verified token was not remembered")
	}
	forged := token[:len(token)-2] + "xx"
	for range 3 {
		if _, err := tokens.Parse(forged); !errors.Is(err, ErrUnauthenticated) {
			t.Fatalf("Parse(forged) = %v, want ErrUnauthenticated", err)
		}
	}
	if len(tokens.verified) != 1 {
		t.Fatalf("%d tokens remembered, want only the verified one", len(tokens.verified))
	}
	now = first.Expires
	if _, err := tokens.Parse(token); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("Parse of a remembered token once it expired = %v, want ErrUnauthenticated", err)
	}

	now = time.Now()
	for i := range maxVerified + 1 {
		tok, _, err := tokens.IssueFor(store.UserRef{Login: fmt.Sprintf("u%d", i)}, "s")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tokens.Parse(tok); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(tokens.verified); n > maxVerified {
		t.Fatalf("%d tokens remembered, want at most %d", n, maxVerified)
	}
}
