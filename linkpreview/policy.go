package linkpreview

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/killrchat/chatql/internal/netguard"
)

// addrPolicy reports whether the Fetcher may connect to an address.
type addrPolicy = netguard.Policy

// checkURL returns an error unless u is an absolute http or https URL with
// a host and without user information.
func checkURL(u *url.URL) error {
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
	default:
		return fmt.Errorf("%w: scheme %q is not http or https", ErrRefused, u.Scheme)
	}
	if u.User != nil {
		return fmt.Errorf("%w: URL carries user information", ErrBadURL)
	}
	if u.Hostname() == "" {
		return fmt.Errorf("%w: URL has no host", ErrBadURL)
	}
	return nil
}
