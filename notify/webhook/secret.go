package webhook

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// SecretPrefix starts the text form of every secret.
const SecretPrefix = "whsec_"

// Key sizes accepted by ParseSecret, in bytes, as the specification asks.
const (
	MinSecretBytes = 24
	MaxSecretBytes = 64
)

// newSecretBytes is the size of the keys that NewSecret generates.
const newSecretBytes = 32

// ErrBadSecret reports a secret that is not "whsec_" followed by the base64
// of a key of 24 to 64 bytes.
var ErrBadSecret = errors.New("webhook: bad secret")

// Secret is the key that signs the messages sent to one endpoint.
type Secret struct {
	key []byte
}

// NewSecret returns a secret with a random key of 32 bytes.
func NewSecret() (Secret, error) {
	key := make([]byte, newSecretBytes)
	if _, err := rand.Read(key); err != nil {
		return Secret{}, fmt.Errorf("webhook: generating a secret: %w", err)
	}
	return Secret{key: key}, nil
}

// ParseSecret reads the text form of a secret, "whsec_" followed by the
// standard base64 encoding of the key.
func ParseSecret(s string) (Secret, error) {
	encoded, ok := strings.CutPrefix(s, SecretPrefix)
	if !ok {
		return Secret{}, fmt.Errorf("%w: missing %q prefix", ErrBadSecret, SecretPrefix)
	}
	key, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return Secret{}, fmt.Errorf("%w: %v", ErrBadSecret, err)
	}
	if len(key) < MinSecretBytes || len(key) > MaxSecretBytes {
		return Secret{}, fmt.Errorf("%w: key of %d bytes, want %d to %d",
			ErrBadSecret, len(key), MinSecretBytes, MaxSecretBytes)
	}
	return Secret{key: key}, nil
}

// Encode returns the text form of the secret, to store or to show once to
// the endpoint's owner.
func (s Secret) Encode() string {
	return SecretPrefix + base64.StdEncoding.EncodeToString(s.key)
}

// String hides the key, so that a secret printed by mistake leaks nothing.
func (s Secret) String() string {
	return SecretPrefix + "<redacted>"
}

// IsZero reports whether the secret has no key.
func (s Secret) IsZero() bool {
	return len(s.key) == 0
}
