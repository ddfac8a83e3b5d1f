package webpush

import (
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

// validSubscription returns a subscription with a fresh user agent key.
func validSubscription(t *testing.T) Subscription {
	t.Helper()
	key, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return Subscription{
		Endpoint: "https://push.example.net/wpush/v2/abc",
		P256dh:   base64.RawURLEncoding.EncodeToString(key.PublicKey().Bytes()),
		Auth:     base64.RawURLEncoding.EncodeToString([]byte("0123456789abcdef")),
	}
}

func TestValidateAccepts(t *testing.T) {
	sub := validSubscription(t)
	if err := Validate(sub, false); err != nil {
		t.Fatalf("valid subscription: %v", err)
	}
	padded := sub
	padded.P256dh += "="
	padded.Auth += "=="
	if err := Validate(padded, false); err != nil {
		t.Errorf("padded keys: %v", err)
	}
	for _, endpoint := range []string{"http://127.0.0.1:8080/push/x", "http://[::1]:8080/push/x", "http://localhost:8080/push/x", "https://127.0.0.1/push/x"} {
		local := sub
		local.Endpoint = endpoint
		if err := Validate(local, true); err != nil {
			t.Errorf("%s with loopback allowed: %v", endpoint, err)
		}
	}
}

func TestValidateRefuses(t *testing.T) {
	good := validSubscription(t)
	raw, _ := base64.RawURLEncoding.DecodeString(good.P256dh)
	offCurve := append([]byte(nil), raw...)
	offCurve[64] ^= 1
	compressed := append([]byte{2 | raw[64]&1}, raw[1:33]...)
	b64 := base64.RawURLEncoding.EncodeToString
	cases := []struct {
		name, field, value, want string
		allowLoopback            bool
	}{
		{"no endpoint", "endpoint", "", "endpoint: missing", false},
		{"http", "endpoint", "http://push.example.net/x", `endpoint: scheme "http" is not https`, false},
		{"http on loopback without the option", "endpoint", "http://127.0.0.1:8080/x", "is not https", false},
		{"http elsewhere with the option", "endpoint", "http://push.example.net/x", "is not https", true},
		{"ftp", "endpoint", "ftp://push.example.net/x", "is not https", true},
		{"relative", "endpoint", "/push/x", "endpoint: has no host", false},
		{"user info", "endpoint", "https://user:pw@push.example.net/x", "user information", false},
		{"too long", "endpoint", "https://push.example.net/" + strings.Repeat("a", MaxEndpointLength), "more than 2048", false},
		{"loopback address", "endpoint", "https://127.0.0.1/x", "not a public address", false},
		{"private address", "endpoint", "https://10.0.0.1/x", "not a public address", true},
		{"link-local address", "endpoint", "https://169.254.169.254/x", "not a public address", true},
		{"no p256dh", "p256dh", "", "p256dh: missing", false},
		{"p256dh not base64url", "p256dh", "BCVx*r7N", "p256dh: not base64url", false},
		{"p256dh standard base64", "p256dh", strings.ReplaceAll(b64(raw), "-", "+") + "+/", "p256dh: not base64url", false},
		{"p256dh compressed", "p256dh", b64(compressed), "p256dh: 33 bytes", false},
		{"p256dh short", "p256dh", b64(raw[:64]), "p256dh: 64 bytes", false},
		{"p256dh off the curve", "p256dh", b64(offCurve), "not on the P-256 curve", false},
		{"no auth", "auth", "", "auth: missing", false},
		{"short auth", "auth", b64(make([]byte, 15)), "auth: 15 bytes, want 16", false},
		{"long auth", "auth", b64(make([]byte, 32)), "auth: 32 bytes, want 16", false},
		{"auth not base64url", "auth", "!!!!", "auth: not base64url", false},
	}
	for _, c := range cases {
		sub := good
		switch c.field {
		case "endpoint":
			sub.Endpoint = c.value
		case "p256dh":
			sub.P256dh = c.value
		case "auth":
			sub.Auth = c.value
		}
		err := Validate(sub, c.allowLoopback)
		if !errors.Is(err, ErrInvalidSubscription) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want ErrInvalidSubscription naming %q", c.name, err, c.want)
		}
	}
}
