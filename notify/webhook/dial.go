package webhook

// TODO: replace this file with the shared dial-time address policy once it
// has moved out of package linkpreview (which exports no dialer today).

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"syscall"
	"time"
)

// ErrRefused reports a target that is, or resolves to, an address a Sender
// will not connect to: loopback, private, link-local or otherwise reserved.
var ErrRefused = errors.New("webhook: refused address")

// DialFunc connects to address ("host:port") on network, as
// net.Dialer.DialContext does.
type DialFunc func(ctx context.Context, network, address string) (net.Conn, error)

// reservedPrefixes are special-purpose ranges not covered by the netip
// predicates that allowedAddr uses.
var reservedPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("2001:db8::/32"),
	netip.MustParsePrefix("2002::/16"),
}

// allowedAddr reports whether a Sender may connect to a: a public unicast
// address, or a loopback one when allowLoopback is set.
func allowedAddr(a netip.Addr, allowLoopback bool) bool {
	a = a.Unmap()
	if !a.IsValid() || a.Zone() != "" {
		return false
	}
	if a.IsLoopback() {
		return allowLoopback
	}
	if !a.IsGlobalUnicast() || a.IsPrivate() || a.IsLinkLocalUnicast() {
		return false
	}
	for _, p := range reservedPrefixes {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// checkedDialer resolves names itself and connects only to allowed
// addresses, checking each once more just before the connect call.
type checkedDialer struct {
	allowLoopback bool
	timeout       time.Duration
}

// newCheckedDialer returns the default DialFunc of a Sender.
func newCheckedDialer(allowLoopback bool, timeout time.Duration) DialFunc {
	d := &checkedDialer{allowLoopback: allowLoopback, timeout: timeout}
	return d.dial
}

// dial refuses the whole host if any of its addresses is refused, so that
// a name cannot mix a public address with a private one.
func (d *checkedDialer) dial(ctx context.Context, network, address string) (net.Conn, error) {
	host, portText, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("webhook: bad port %q", portText)
	}
	addrs, err := resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	for _, a := range addrs {
		if !allowedAddr(a, d.allowLoopback) {
			return nil, fmt.Errorf("%w: %s has address %s", ErrRefused, host, a)
		}
	}
	return d.dialFirst(ctx, network, addrs, uint16(port))
}

// resolve returns the addresses of host, an IP literal or a name.
func resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, nil
	}
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, err
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("webhook: %s has no addresses", host)
	}
	return addrs, nil
}

// dialFirst connects to the first of addrs that accepts.
func (d *checkedDialer) dialFirst(ctx context.Context, network string, addrs []netip.Addr, port uint16) (net.Conn, error) {
	dialer := &net.Dialer{Timeout: d.timeout, Control: d.control}
	var errs []error
	for _, a := range addrs {
		conn, err := dialer.DialContext(ctx, network, netip.AddrPortFrom(a.Unmap(), port).String())
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// control checks the very address about to be connected to.
func (d *checkedDialer) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !allowedAddr(ap.Addr(), d.allowLoopback) {
		return fmt.Errorf("%w: %s", ErrRefused, address)
	}
	return nil
}
