package files

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalidKey: a key is not a few path segments of [a-z0-9-]. Both
// backends refuse such keys before touching the store, so a key can never
// name a path outside it.
var ErrInvalidKey = errors.New("invalid object key")

// MaxKeyLen bounds the length of a key in bytes.
const MaxKeyLen = 512

// CheckKey returns nil if key is one or more non-empty segments of
// [a-z0-9-] joined by "/", at most MaxKeyLen bytes long; otherwise an error
// wrapping ErrInvalidKey.
func CheckKey(key string) error {
	if key == "" || len(key) > MaxKeyLen {
		return fmt.Errorf("%w: length %d", ErrInvalidKey, len(key))
	}
	for _, seg := range strings.Split(key, "/") {
		if !validSegment(seg) {
			return fmt.Errorf("%w: %q", ErrInvalidKey, key)
		}
	}
	return nil
}

// validSegment reports whether seg is a non-empty run of [a-z0-9-].
func validSegment(seg string) bool {
	if seg == "" {
		return false
	}
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}
