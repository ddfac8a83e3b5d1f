package linkpreview

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/killrchat/chatql/internal/netguard"
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

// dialContext connects through a netguard.Dialer made of the Fetcher's
// policy and resolver, so that tests replacing them take effect. Refusals
// wrap ErrRefused as well as netguard.ErrRefused.
func (f *Fetcher) dialContext(ctx context.Context, network, address string) (net.Conn, error) {
	conn, err := f.dialer().DialContext(ctx, network, address)
	return conn, asRefused(err)
}

// control is the dialer's last check, made on the very address about to be
// connected to, before any packet is sent.
func (f *Fetcher) control(network, address string, c syscall.RawConn) error {
	return asRefused(f.dialer().Control(network, address, c))
}

// dialer returns the guarded dialer that applies the Fetcher's policy.
func (f *Fetcher) dialer() *netguard.Dialer {
	return &netguard.Dialer{Allowed: f.allowed, Lookup: f.lookup, Timeout: f.opts.Timeout}
}

// asRefused makes a refusal by the address policy wrap ErrRefused too, and
// returns other errors unchanged.
func asRefused(err error) error {
	if errors.Is(err, netguard.ErrRefused) {
		return fmt.Errorf("%w: %w", ErrRefused, err)
	}
	return err
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
