package netguard

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

// Dialer connects only to addresses its policy allows. The zero Dialer
// allows public addresses only and resolves names with the system resolver.
// Use its DialContext as an http.Transport's DialContext.
type Dialer struct {
	// Allowed is the address policy; nil means PublicOnly(false).
	Allowed Policy

	// Lookup resolves a host name; nil means the system resolver.
	Lookup func(ctx context.Context, host string) ([]netip.Addr, error)

	// Timeout bounds each connection attempt; zero means no bound other
	// than the context's.
	Timeout time.Duration
}

// DialContext resolves the host of address, refuses the connection if any
// of its addresses is not allowed by the policy, and otherwise connects to
// the checked addresses in turn. The dialer's Control function checks the
// address once more just before connecting. Refusals wrap ErrRefused.
func (d *Dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, portText, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("netguard: bad port %q", portText)
	}
	addrs, err := d.resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	allowed := d.policy()
	for _, a := range addrs {
		if !allowed(a) {
			return nil, fmt.Errorf("%w: host %s has address %s", ErrRefused, host, a)
		}
	}
	return d.dialEach(ctx, network, addrs, uint16(port))
}

// Control is the dialer's last check, made on the very address about to be
// connected to, before any packet is sent. It has the signature of
// net.Dialer's Control field.
func (d *Dialer) Control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: cannot check address %q", ErrRefused, address)
	}
	if !d.policy()(ap.Addr()) {
		return fmt.Errorf("%w: address %s", ErrRefused, ap.Addr())
	}
	return nil
}

// policy returns the Dialer's policy or the default one.
func (d *Dialer) policy() Policy {
	if d.Allowed == nil {
		return PublicOnly(false)
	}
	return d.Allowed
}

// resolve returns the addresses of host, which may be an IP literal, with
// IPv4-mapped IPv6 addresses turned into plain IPv4 ones.
func (d *Dialer) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a.Unmap()}, nil
	}
	lookup := d.Lookup
	if lookup == nil {
		lookup = systemLookup
	}
	addrs, err := lookup(ctx, host)
	if err != nil {
		return nil, err
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("netguard: %s has no addresses", host)
	}
	for i, a := range addrs {
		addrs[i] = a.Unmap()
	}
	return addrs, nil
}

// dialEach connects to the first of addrs that accepts, returning all the
// errors if none does.
func (d *Dialer) dialEach(ctx context.Context, network string, addrs []netip.Addr, port uint16) (net.Conn, error) {
	dialer := &net.Dialer{Timeout: d.Timeout, Control: d.Control}
	var errs []error
	for _, a := range addrs {
		conn, err := dialer.DialContext(ctx, network, netip.AddrPortFrom(a, port).String())
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// systemLookup resolves host with the system resolver.
func systemLookup(ctx context.Context, host string) ([]netip.Addr, error) {
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}
