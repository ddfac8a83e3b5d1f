package webpush

import (
	"crypto/ecdh"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPublicKeyIsApplicationServerKey(t *testing.T) {
	key, err := GenerateVAPIDKey()
	if err != nil {
		t.Fatal(err)
	}
	text := key.PublicKey()
	if strings.ContainsAny(text, "+/=") {
		t.Fatalf("public key %q is not unpadded base64url", text)
	}
	raw, err := base64.RawURLEncoding.DecodeString(text)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) != 65 || raw[0] != 4 {
		t.Fatalf("public key is %d bytes starting %#x, want 65 starting 0x04", len(raw), raw[0])
	}
	if _, err := ecdh.P256().NewPublicKey(raw); err != nil {
		t.Fatalf("public key is not on P-256: %v", err)
	}
}

func TestKeyRoundTrips(t *testing.T) {
	key, _ := GenerateVAPIDKey()
	pemBytes, err := key.MarshalPEM()
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"PEM":               string(pemBytes),
		"base64url":         key.PrivateKeyBase64(),
		"padded base64url":  key.PrivateKeyBase64() + "=",
		"base64url with LF": key.PrivateKeyBase64() + "\n",
	} {
		parsed, err := ParseVAPIDKey(text)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if parsed.PublicKey() != key.PublicKey() || !parsed.private.Equal(key.private) {
			t.Errorf("%s: parsed a different key", name)
		}
	}
}

func TestParseVAPIDKeyRefusesBadKeys(t *testing.T) {
	key, _ := GenerateVAPIDKey()
	short := base64.RawURLEncoding.EncodeToString(make([]byte, 31))
	zero := base64.RawURLEncoding.EncodeToString(make([]byte, 32))
	for name, text := range map[string]string{
		"empty":           "",
		"not base64":      "not a key!",
		"31 bytes":        short,
		"zero scalar":     zero,
		"public key":      key.PublicKey(),
		"PEM certificate": "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
		"broken PEM":      "-----BEGIN PRIVATE KEY-----\n",
	} {
		if _, err := ParseVAPIDKey(text); !errors.Is(err, ErrBadKey) {
			t.Errorf("%s: err = %v, want ErrBadKey", name, err)
		}
	}
}

func TestLoadOrCreateVAPIDKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data", "vapid.pem")
	created, err := LoadOrCreateVAPIDKey(path)
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if mode := info.Mode().Perm(); mode != 0o600 {
		t.Errorf("key file mode = %v, want 0600", mode)
	}
	loaded, err := LoadOrCreateVAPIDKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.PublicKey() != created.PublicKey() {
		t.Fatal("the second load made a new key")
	}
	if err := os.WriteFile(path, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateVAPIDKey(path); !errors.Is(err, ErrBadKey) {
		t.Fatalf("loading a garbage file: err = %v, want ErrBadKey", err)
	}
}
