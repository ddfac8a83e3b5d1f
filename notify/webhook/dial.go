package webhook

import (
	"context"
	"net"
	"net/netip"
	"time"

	"github.com/killrchat/chatql/internal/netguard"
)

// ErrRefused reports a target that is, or resolves to, an address a Sender
// will not connect to: loopback, private, link-local or otherwise reserved
// (netguard's policy).
var ErrRefused = netguard.ErrRefused

// DialFunc connects to address ("host:port") on network, as
// net.Dialer.DialContext does.
type DialFunc func(ctx context.Context, network, address string) (net.Conn, error)

// allowedAddr reports whether a Sender may connect to a: a public unicast
// address, or a loopback one when allowLoopback is set.
func allowedAddr(a netip.Addr, allowLoopback bool) bool {
	return netguard.PublicOnly(allowLoopback)(a)
}

// newCheckedDialer dials only addresses allowedAddr allows, checked on the
// addresses the name resolves to and again on the one dialled.
func newCheckedDialer(allowLoopback bool, timeout time.Duration) DialFunc {
	d := &netguard.Dialer{Allowed: netguard.PublicOnly(allowLoopback), Timeout: timeout}
	return d.DialContext
}
