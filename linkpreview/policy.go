package linkpreview

import (
	"fmt"
	"net/netip"
	"net/url"
	"strings"
)

// addrPolicy reports whether the Fetcher may connect to an address.
type addrPolicy func(netip.Addr) bool

// refusedPrefixes lists special-purpose ranges that the netip predicates
// used by isPublic do not already cover.
var refusedPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // shared address space (CGNAT)
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation (TEST-NET-1)
	netip.MustParsePrefix("192.88.99.0/24"),  // 6to4 relay anycast
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // documentation (TEST-NET-2)
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation (TEST-NET-3)
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, and broadcast
	netip.MustParsePrefix("::/96"),           // IPv4-compatible (deprecated)
	netip.MustParsePrefix("64:ff9b::/96"),    // NAT64, may embed any IPv4
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use NAT64
	netip.MustParsePrefix("100::/64"),        // discard
	netip.MustParsePrefix("2001::/23"),       // IETF protocol assignments, Teredo
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("2002::/16"),       // 6to4, embeds any IPv4
	netip.MustParsePrefix("fec0::/10"),       // site-local (deprecated)
}

// isPublic reports whether a is a globally routable unicast address that a
// server may fetch from. IPv4-mapped IPv6 addresses are judged as the IPv4
// address they carry, and addresses with a zone are refused.
func isPublic(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsValid() || a.Zone() != "" || !a.IsGlobalUnicast() {
		return false
	}
	if a.IsPrivate() || a.IsLoopback() || a.IsLinkLocalUnicast() {
		return false
	}
	for _, p := range refusedPrefixes {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// defaultPolicy returns the policy of a Fetcher: public addresses only, plus
// 127.0.0.0/8 and ::1 when allowLoopback is set.
func defaultPolicy(allowLoopback bool) addrPolicy {
	return func(a netip.Addr) bool {
		if allowLoopback && a.Zone() == "" && a.Unmap().IsLoopback() {
			return true
		}
		return isPublic(a)
	}
}

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
