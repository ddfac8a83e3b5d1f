// Package netguard keeps a server's outgoing HTTP requests away from its own
// network: an address policy that accepts only globally routable unicast
// addresses, and a dialer that applies the policy to every address a host
// resolves to and once more to the address it connects to.
package netguard

import (
	"errors"
	"net/netip"
)

// ErrRefused reports a connection refused by the policy: the host is, or
// resolves to, a loopback, private or otherwise non-public address.
var ErrRefused = errors.New("netguard: refused")

// Policy reports whether a connection to an address is allowed.
type Policy func(netip.Addr) bool

// refusedPrefixes lists special-purpose ranges that the netip predicates
// used by IsPublic do not already cover.
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

// IsPublic reports whether a is a globally routable unicast address that a
// server may connect to. IPv4-mapped IPv6 addresses are judged as the IPv4
// address they carry, and addresses with a zone are refused.
func IsPublic(a netip.Addr) bool {
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

// PublicOnly returns the policy that allows public addresses only, plus
// 127.0.0.0/8 and ::1 when allowLoopback is set (for tests against local
// servers).
func PublicOnly(allowLoopback bool) Policy {
	return func(a netip.Addr) bool {
		if allowLoopback && a.Zone() == "" && a.Unmap().IsLoopback() {
			return true
		}
		return IsPublic(a)
	}
}
