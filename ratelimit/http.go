package ratelimit

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
)

// ParseTrustedProxies reads the addresses of the proxies whose
// X-Forwarded-For header is believed: IP addresses or CIDR prefixes.
func ParseTrustedProxies(list []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(list))
	for _, s := range list {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil {
				return nil, fmt.Errorf("trusted proxy %q: want an IP address or a CIDR prefix", s)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// Addresses finds the client address of requests, which signups and login
// attempts are counted by.
type Addresses struct {
	trusted []netip.Prefix
}

// NewAddresses finds client addresses from the connection's remote
// address, or, when that is one of the trusted proxies, from the
// X-Forwarded-For header: the nearest address in it that is not a trusted
// proxy.
func NewAddresses(trusted []netip.Prefix) *Addresses {
	return &Addresses{trusted: trusted}
}

// Middleware puts the request's client address in its context, for
// AddressFrom, and lets a refused action set the Retry-After header of a
// plain HTTP request (not of a websocket or an event stream, whose headers
// are gone before any operation runs).
func (a *Addresses) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		client := a.client(r)
		ctx := context.WithValue(r.Context(), addressKey{}, clientAddress{key: addressKeyOf(client), addr: client})
		if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") && !strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
			ctx = context.WithValue(ctx, retryAfterKey{}, &retryAfterHeader{header: w.Header()})
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// client is the address of the request's client, invalid if unknown.
func (a *Addresses) client(r *http.Request) netip.Addr {
	addr := remoteAddr(r.RemoteAddr)
	if !a.isTrusted(addr) {
		return addr
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		hop, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			return addr // the last trusted hop is all that can be believed
		}
		addr = hop.Unmap()
		if !a.isTrusted(addr) {
			return addr
		}
	}
	return addr
}

func (a *Addresses) isTrusted(addr netip.Addr) bool {
	for _, p := range a.trusted {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

func remoteAddr(s string) netip.Addr {
	host, _, err := net.SplitHostPort(s)
	if err != nil {
		host = s
	}
	addr, _ := netip.ParseAddr(host)
	return addr.Unmap()
}

// addressKeyOf is the key a client address is counted by: an IPv4 address,
// or the /64 network of an IPv6 address, since a single host commonly
// holds a whole /64.
func addressKeyOf(addr netip.Addr) string {
	switch {
	case !addr.IsValid():
		return "unknown"
	case addr.Is6():
		p, _ := addr.WithZone("").Prefix(64)
		return p.String()
	}
	return addr.String()
}

type addressKey struct{}

// clientAddress is the client address Middleware puts in a request's
// context: as it is, and as actions are counted by (addressKeyOf).
type clientAddress struct {
	key  string
	addr netip.Addr
}

// AddressFrom returns the client address that Middleware put in ctx, in
// the form actions are counted by, or "unknown".
func AddressFrom(ctx context.Context) string {
	if a, ok := ctx.Value(addressKey{}).(clientAddress); ok {
		return a.key
	}
	return "unknown"
}

// ClientAddressFrom returns the client address that Middleware put in ctx,
// as it is (an IPv6 address whole), or "" if unknown: what a user's list
// of their sessions shows.
func ClientAddressFrom(ctx context.Context) string {
	if a, ok := ctx.Value(addressKey{}).(clientAddress); ok && a.addr.IsValid() {
		return a.addr.String()
	}
	return ""
}

// WithAddressOf returns ctx carrying the client address Middleware put in
// from, or ctx as it is when from has none: a websocket keeps its upgrade
// request's address without the rest of the request.
func WithAddressOf(ctx, from context.Context) context.Context {
	if a := from.Value(addressKey{}); a != nil {
		return context.WithValue(ctx, addressKey{}, a) // as it is: no copy
	}
	return ctx
}

type retryAfterKey struct{}

// retryAfterHeader sets the Retry-After header of a response to the
// longest wait among the refused actions of its request.
type retryAfterHeader struct {
	mu      sync.Mutex
	header  http.Header
	seconds int
}

func noteRetryAfter(ctx context.Context, e *Exceeded) {
	h, ok := ctx.Value(retryAfterKey{}).(*retryAfterHeader)
	if !ok {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := e.RetryAfterSeconds(); s > h.seconds {
		h.seconds = s
		h.header.Set("Retry-After", strconv.Itoa(s))
	}
}
