package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
)

// A refresh token is `login.session.generation.nonce.mac`: the login
// (base64url), the session id, the rotation it was issued at, 16 random
// bytes, and an HMAC-SHA256 of the rest under a key derived from the JWT
// secret. The store keeps only its SHA-256. The MAC lets the server tell a
// token it issued earlier in a session (reuse: the session is revoked)
// from a made-up one (refused, and no harm done to the session it names).

var b64 = base64.RawURLEncoding

// refreshToken is a parsed, authentic refresh token.
type refreshToken struct {
	login      string
	session    string
	generation int
	raw        string
}

// refreshKey derives the MAC key of refresh tokens from the JWT secret.
func refreshKey(secret []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("chatql refresh tokens"))
	return m.Sum(nil)
}

// newSessionID returns a random session id: 128 bits, base64url.
func newSessionID() string {
	return b64.EncodeToString(randomBytes(16))
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return b
}

// mintRefresh returns a new refresh token of the session at generation.
func mintRefresh(key []byte, login, session string, generation int) string {
	body := strings.Join([]string{b64.EncodeToString([]byte(login)), session, strconv.Itoa(generation), b64.EncodeToString(randomBytes(16))}, ".")
	return body + "." + b64.EncodeToString(mac(key, body))
}

func mac(key []byte, body string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(body))
	return m.Sum(nil)
}

// parseRefresh checks the token's MAC and reads it. Errors wrap
// ErrUnauthenticated.
func parseRefresh(key []byte, token string) (refreshToken, error) {
	invalid := fmt.Errorf("%w: the refresh token is not valid", ErrUnauthenticated)
	body, sig, ok := cutLast(token, ".")
	if !ok {
		return refreshToken{}, invalid
	}
	got, err := b64.DecodeString(sig)
	if err != nil || !hmac.Equal(got, mac(key, body)) {
		return refreshToken{}, invalid
	}
	parts := strings.Split(body, ".")
	if len(parts) != 4 {
		return refreshToken{}, invalid
	}
	login, err := b64.DecodeString(parts[0])
	if err != nil {
		return refreshToken{}, invalid
	}
	gen, err := strconv.Atoi(parts[2])
	if err != nil || gen < 0 {
		return refreshToken{}, invalid
	}
	return refreshToken{login: string(login), session: parts[1], generation: gen, raw: token}, nil
}

func cutLast(s, sep string) (before, after string, ok bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return "", "", false
	}
	return s[:i], s[i+len(sep):], true
}

// hashRefresh is what the store keeps of a refresh token.
func hashRefresh(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}
