package webhook

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"
)

// MaxURLLength is the longest endpoint URL accepted, in bytes.
const MaxURLLength = 2048

// ErrBadURL reports an endpoint URL that cannot be registered.
var ErrBadURL = errors.New("webhook: bad URL")

// ValidateURL checks an endpoint URL at registration: an absolute https URL
// of at most MaxURLLength bytes, with a host, without user information or
// fragment. With allowLoopback (for tests), plain http is accepted too, but
// only for a loopback host. A host written as an IP address is checked
// against the address policy here; names are checked when dialled.
func ValidateURL(raw string, allowLoopback bool) (*url.URL, error) {
	if len(raw) > MaxURLLength {
		return nil, fmt.Errorf("%w: longer than %d bytes", ErrBadURL, MaxURLLength)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadURL, err)
	}
	if err := checkURLParts(u); err != nil {
		return nil, err
	}
	if err := checkScheme(u, allowLoopback); err != nil {
		return nil, err
	}
	if a, err := netip.ParseAddr(u.Hostname()); err == nil && !allowedAddr(a, allowLoopback) {
		return nil, fmt.Errorf("%w: %s", ErrRefused, a)
	}
	return u, nil
}

// checkURLParts refuses URLs without a host, with user information or with
// a fragment.
func checkURLParts(u *url.URL) error {
	switch {
	case !u.IsAbs() || u.Opaque != "":
		return fmt.Errorf("%w: not an absolute URL", ErrBadURL)
	case u.Hostname() == "":
		return fmt.Errorf("%w: no host", ErrBadURL)
	case u.User != nil:
		return fmt.Errorf("%w: carries user information", ErrBadURL)
	case u.Fragment != "":
		return fmt.Errorf("%w: carries a fragment", ErrBadURL)
	}
	return nil
}

// checkScheme accepts https, and http for a loopback host when allowed.
func checkScheme(u *url.URL, allowLoopback bool) error {
	switch strings.ToLower(u.Scheme) {
	case "https":
		return nil
	case "http":
		if allowLoopback && isLoopbackHost(u.Hostname()) {
			return nil
		}
		return fmt.Errorf("%w: http is allowed only for loopback in tests", ErrBadURL)
	}
	return fmt.Errorf("%w: scheme %q is not https", ErrBadURL, u.Scheme)
}

// isLoopbackHost reports whether host is "localhost" or a loopback address.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}
