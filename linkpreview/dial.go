package linkpreview

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"syscall"
	"time"
)

// newTransport returns an HTTP transport that ignores proxy settings and
// dials only through f.dialContext. It sets no timeouts of its own: the
// context of each fetch bounds the whole exchange.
func (f *Fetcher) newTransport() *http.Transport {
	return &http.Transport{
		Proxy:                  nil,
		DialContext:            f.dialContext,
		ForceAttemptHTTP2:      true,
		MaxResponseHeaderBytes: 64 << 10,
		MaxIdleConns:           32,
		IdleConnTimeout:        30 * time.Second,
	}
}

// dialContext resolves the host of address, refuses the connection if any
// of its addresses is not allowed by the policy, and otherwise connects to
// the checked addresses in turn. The dialer's Control function checks the
// address once more just before connecting.
func (f *Fetcher) dialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, portText, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("%w: port %q", ErrBadURL, portText)
	}
	addrs, err := f.resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	for _, a := range addrs {
		if !f.allowed(a) {
			return nil, fmt.Errorf("%w: host %s has address %s", ErrRefused, host, a)
		}
	}
	return f.dialEach(ctx, network, addrs, uint16(port))
}

// resolve returns the addresses of host, which may be an IP literal, with
// IPv4-mapped IPv6 addresses turned into plain IPv4 ones.
func (f *Fetcher) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a.Unmap()}, nil
	}
	addrs, err := f.lookup(ctx, host)
	if err != nil {
		return nil, err
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("linkpreview: %s has no addresses", host)
	}
	for i, a := range addrs {
		addrs[i] = a.Unmap()
	}
	return addrs, nil
}

// dialEach connects to the first of addrs that accepts, returning all the
// errors if none does.
func (f *Fetcher) dialEach(ctx context.Context, network string, addrs []netip.Addr, port uint16) (net.Conn, error) {
	dialer := &net.Dialer{Timeout: f.opts.Timeout, Control: f.control}
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

// control is the dialer's last check, made on the very address about to be
// connected to, before any packet is sent.
func (f *Fetcher) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: cannot check address %q", ErrRefused, address)
	}
	if !f.allowed(ap.Addr()) {
		return fmt.Errorf("%w: address %s", ErrRefused, ap.Addr())
	}
	return nil
}

// checkRedirect refuses redirects past the limit and redirects to URLs the
// Fetcher would not fetch directly; the host of each hop is checked when it
// is dialled.
func (f *Fetcher) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > f.opts.MaxRedirects {
		return fmt.Errorf("%w: more than %d", ErrTooManyRedirects, f.opts.MaxRedirects)
	}
	if len(req.URL.String()) > MaxURLLength {
		return fmt.Errorf("%w: redirect URL longer than %d bytes", ErrBadURL, MaxURLLength)
	}
	return checkURL(req.URL)
}

// lookupNetIP resolves host with the system resolver.
func lookupNetIP(ctx context.Context, host string) ([]netip.Addr, error) {
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}
