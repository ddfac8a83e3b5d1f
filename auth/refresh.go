package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/killrchat/chatql/store"
)

// A refresh token is `login.session.generation.nonce.mac`: the login
// (base64url), the session id, the rotation it was issued at, a 16-byte
// nonce, and an HMAC-SHA256 of the rest under a key derived from the JWT
// secret. The store keeps only its SHA-256. The MAC lets the server tell a
// token it issued earlier in a session (reuse: the session is revoked,
// but within RefreshGrace of its rotation, see Sessions.Refresh) from a
// made-up one (refused, and no harm done to the session it names).
//
// The nonce is derived, not random: an HMAC of the rest and of the
// clientRefreshId of the refresh that made the token (see RefreshGrace).
// So the server can issue the session's current token again to the client
// that made it and lost the answer, which proves it by sending the same
// clientRefreshId, with nothing more stored. It stays unguessable without
// the key, as the MAC is.

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

// mintRefresh returns the refresh token of the session at generation,
// made by the refresh that clientRefreshID names ("" for a sign-in or a
// refresh that named none).
func mintRefresh(key []byte, login, session string, generation int, clientRefreshID string) string {
	body := strings.Join([]string{b64.EncodeToString([]byte(login)), session, strconv.Itoa(generation)}, ".")
	nonce := mac(key, "nonce."+body+"."+clientRefreshID)[:16]
	body += "." + b64.EncodeToString(nonce)
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

// MinClientRefreshIDLength and MaxClientRefreshIDLength bound a
// clientRefreshId: long enough to be a secret of the client's, as a random
// UUID is.
const (
	MinClientRefreshIDLength = 16
	MaxClientRefreshIDLength = 128
)

var clientRefreshID = regexp.MustCompile(`^[A-Za-z0-9._:-]+$`)

// validateClientRefreshID checks a client's name for a refresh; "" (none)
// is valid.
func validateClientRefreshID(id string) error {
	if id != "" && (len(id) < MinClientRefreshIDLength || len(id) > MaxClientRefreshIDLength || !clientRefreshID.MatchString(id)) {
		return store.InvalidField("clientRefreshId", "invalid clientRefreshId: it must be %d to %d letters, digits, '.', '_', ':' or '-'", MinClientRefreshIDLength, MaxClientRefreshIDLength)
	}
	return nil
}
