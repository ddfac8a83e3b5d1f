package auth

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// FuzzParseAccessToken: whatever a client sends as a token, Parse refuses
// it with ErrUnauthenticated or returns exactly the claims the server
// signed - a changed byte never yields another user, session or expiry.
func FuzzParseAccessToken(f *testing.F) {
	tokens, err := NewTokens(testSecret, 15*time.Minute)
	if err != nil {
		f.Fatal(err)
	}
	// The one valid token has fixed claims: the fuzzing workers run this
	// setup again, and must find the coordinator's seeds valid as they are.
	valid := forgedWith(f, jwt.MapClaims{"iss": issuer, "sub": "alice", "aud": []string{audience},
		"iat": int64(1767225600), "exp": int64(4102444800), // 2026-01-01, 2100-01-01
		"given_name": "Alice", "family_name": "Liddell", "sid": "s1"})
	want, err := tokens.Parse(valid)
	if err != nil {
		f.Fatal(err)
	}
	now := time.Now()
	for _, seed := range []string{
		valid,
		valid + "x",
		strings.Replace(valid, ".", "..", 1),
		valid[:len(valid)-2],
		"eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0." + strings.Split(valid, ".")[1] + ".",
		forgedWith(f, jwt.MapClaims{"iss": issuer, "aud": audience, "sub": "alice", "sid": "s1", "iat": now.Unix(), "exp": "9999999999"}),
		forgedWith(f, jwt.MapClaims{"iss": issuer, "aud": "other", "sub": "alice", "sid": "s1", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}),
		forgedWith(f, jwt.MapClaims{"iss": issuer, "aud": audience, "sub": "alice", "sid": "s1", "iat": now.Add(time.Hour).Unix(), "exp": now.Add(2 * time.Hour).Unix()}),
		"", ".", "..", "a.b.c",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, token string) {
		got, err := tokens.Parse(token)
		if err != nil {
			if !errors.Is(err, ErrUnauthenticated) {
				t.Fatalf("Parse(%q) = %v, not an ErrUnauthenticated", token, err)
			}
			return
		}
		if got.User != want.User || got.Session != want.Session || !got.Expires.Equal(want.Expires) {
			t.Fatalf("Parse(%q) accepted %+v; the only signed token is %+v", token, got, want)
		}
	})
}

// forgedWith signs claims with the test secret.
func forgedWith(f *testing.F, c jwt.Claims) string {
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(testSecret)
	if err != nil {
		f.Fatal(err)
	}
	return s
}

// FuzzParseRefreshToken: a refresh token is accepted only as minted: its
// login, session and generation cannot be changed without the key.
func FuzzParseRefreshToken(f *testing.F) {
	key := refreshKey(testSecret)
	valid := mintRefresh(key, "alice", "s1", 3, "")
	for _, seed := range []string{valid, valid + "=", strings.Replace(valid, ".3.", ".4.", 1), "", ".", "a.b.c.d.e", strings.Repeat(".", 100)} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, token string) {
		rt, err := parseRefresh(key, token)
		if err != nil {
			if !errors.Is(err, ErrUnauthenticated) {
				t.Fatalf("parseRefresh(%q) = %v, not an ErrUnauthenticated", token, err)
			}
			return
		}
		if rt.login != "alice" || rt.session != "s1" || rt.generation != 3 {
			t.Fatalf("parseRefresh(%q) accepted %q/%q/%d; the only minted token is alice/s1/3", token, rt.login, rt.session, rt.generation)
		}
	})
}
