package webpush

import (
	"crypto/ecdh"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"

	"github.com/killrchat/chatql/internal/netguard"
)

// MaxEndpointLength is the longest subscription endpoint accepted, in bytes.
const MaxEndpointLength = 2048

// ErrInvalidSubscription reports a subscription that cannot be pushed to;
// the error's text names the field and what is wrong with it.
var ErrInvalidSubscription = errors.New("webpush: invalid subscription")

// Subscription is what a browser's PushSubscription gives the server: the
// push service's endpoint URL and, from getKey, the user agent's P-256
// public key and 16-byte authentication secret, both base64url.
type Subscription struct {
	Endpoint string
	P256dh   string
	Auth     string
}

// Validate returns an error wrapping ErrInvalidSubscription unless sub can
// be pushed to: an https endpoint of at most MaxEndpointLength bytes, with
// a host and no user information, whose host is not an IP address outside
// the public address space; a p256dh that is an uncompressed point on
// P-256; an auth of 16 bytes. With allowLoopback (tests only), endpoints
// may also be http and on a loopback address. Host names are checked
// against the address policy when the Sender connects.
func Validate(sub Subscription, allowLoopback bool) error {
	if err := validateEndpoint(sub.Endpoint, allowLoopback); err != nil {
		return err
	}
	if _, err := decodeUserAgentKey(sub.P256dh); err != nil {
		return err
	}
	_, err := decodeAuthSecret(sub.Auth)
	return err
}

// invalid returns an error wrapping ErrInvalidSubscription for field.
func invalid(field, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrInvalidSubscription, field, fmt.Sprintf(format, args...))
}

// validateEndpoint checks the endpoint URL as Validate describes.
func validateEndpoint(endpoint string, allowLoopback bool) error {
	if endpoint == "" {
		return invalid("endpoint", "missing")
	}
	if len(endpoint) > MaxEndpointLength {
		return invalid("endpoint", "%d bytes long, more than %d", len(endpoint), MaxEndpointLength)
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return invalid("endpoint", "not a URL: %v", err)
	}
	if u.User != nil {
		return invalid("endpoint", "carries user information")
	}
	if u.Hostname() == "" {
		return invalid("endpoint", "has no host")
	}
	loopback := isLoopbackHost(u.Hostname())
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && allowLoopback && loopback:
	default:
		return invalid("endpoint", "scheme %q is not https", u.Scheme)
	}
	return checkHostAddress(u.Hostname(), allowLoopback)
}

// checkHostAddress refuses a host that is an IP address the address policy
// does not allow; names are left to the dialer.
func checkHostAddress(host string, allowLoopback bool) error {
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return nil
	}
	if !netguard.PublicOnly(allowLoopback)(addr) {
		return invalid("endpoint", "host %s is not a public address (%v)", host, netguard.ErrRefused)
	}
	return nil
}

// isLoopbackHost reports whether host is "localhost" or a loopback address.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	addr, err := netip.ParseAddr(host)
	return err == nil && addr.Unmap().IsLoopback()
}

// decodeUserAgentKey decodes p256dh into the user agent's public key.
func decodeUserAgentKey(p256dh string) (*ecdh.PublicKey, error) {
	if p256dh == "" {
		return nil, invalid("p256dh", "missing")
	}
	raw, err := decodeBase64URL(p256dh)
	if err != nil {
		return nil, invalid("p256dh", "not base64url: %v", err)
	}
	if len(raw) != 65 || raw[0] != 4 {
		return nil, invalid("p256dh", "%d bytes, not a 65-byte uncompressed P-256 point", len(raw))
	}
	key, err := ecdh.P256().NewPublicKey(raw)
	if err != nil {
		return nil, invalid("p256dh", "point is not on the P-256 curve")
	}
	return key, nil
}

// decodeAuthSecret decodes auth into the 16-byte authentication secret.
func decodeAuthSecret(auth string) ([]byte, error) {
	if auth == "" {
		return nil, invalid("auth", "missing")
	}
	raw, err := decodeBase64URL(auth)
	if err != nil {
		return nil, invalid("auth", "not base64url: %v", err)
	}
	if len(raw) != 16 {
		return nil, invalid("auth", "%d bytes, want 16", len(raw))
	}
	return raw, nil
}
