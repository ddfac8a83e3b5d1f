package files

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckKey(t *testing.T) {
	good := []string{"a", "a/b", "att/2026-11/0f3c-9a", strings.Repeat("a", MaxKeyLen)}
	for _, k := range good {
		if err := CheckKey(k); err != nil {
			t.Errorf("CheckKey(%q) = %v, want nil", k, err)
		}
	}
	bad := []string{"", "/", "a/", "/a", "a//b", "..", "a/../b", ".", "A", "a.b", "a b",
		"a\\b", "a%2fb", "ä", "a\x00", strings.Repeat("a", MaxKeyLen+1)}
	for _, k := range bad {
		if err := CheckKey(k); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("CheckKey(%q) = %v, want ErrInvalidKey", k, err)
		}
	}
}
