package live

import (
	"bytes"
	"crypto/sha1"
	"encoding/base64"
	"net/http"
	"net/url"
	"path"
	"strings"
)

// Origins decides which web pages may open a websocket. A browser sends
// the page's origin in the handshake, and, unlike a fetch, a websocket is
// not held to CORS: a page from any site could open one to the API with
// the credentials the browser keeps. A client that sends no Origin (not a
// browser), or one from a page of the same host, may always connect.
type Origins struct {
	// Any lets pages from any origin connect.
	Any bool
	// Hosts lists the other origins' hosts that may connect, as path.Match
	// patterns ("app.example.com", "*.example.com", "localhost:*"); a
	// pattern with "://" matches scheme and host ("https://app.example.com").
	Hosts []string
}

// refuses returns why o refuses a handshake, "" if it does not.
func (o Origins) refuses(r *http.Request) string {
	origin := r.Header.Get("Origin")
	if o.Any || origin == "" {
		return ""
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return "the Origin header is not a URL with a host"
	}
	if strings.EqualFold(u.Host, r.Host) {
		return ""
	}
	for _, pattern := range o.Hosts {
		target := u.Host
		if strings.Contains(pattern, "://") {
			target = u.Scheme + "://" + u.Host
		}
		if ok, _ := path.Match(strings.ToLower(pattern), strings.ToLower(target)); ok {
			return ""
		}
	}
	return "pages from " + u.Host + " may not open a websocket to " + r.Host
}

// handshakeProblem returns why r is not a websocket handshake this server
// accepts (RFC 6455, section 4.2.1), and the status to answer it with.
func handshakeProblem(r *http.Request) (status int, problem string) {
	switch {
	case r.Method != http.MethodGet:
		return http.StatusMethodNotAllowed, "a websocket handshake is a GET request"
	case !r.ProtoAtLeast(1, 1):
		return http.StatusUpgradeRequired, "a websocket handshake needs HTTP/1.1"
	case !hasToken(r.Header, "Connection", "upgrade") || !hasToken(r.Header, "Upgrade", "websocket"):
		return http.StatusUpgradeRequired, `a websocket handshake has "Connection: Upgrade" and "Upgrade: websocket"`
	case r.Header.Get("Sec-WebSocket-Version") != "13":
		return http.StatusBadRequest, "only version 13 of the websocket protocol is served (Sec-WebSocket-Version)"
	}
	keys := r.Header.Values("Sec-WebSocket-Key")
	if len(keys) != 1 {
		return http.StatusBadRequest, "a websocket handshake has one Sec-WebSocket-Key"
	}
	if nonce, err := base64.StdEncoding.DecodeString(strings.TrimSpace(keys[0])); err != nil || len(nonce) != 16 {
		return http.StatusBadRequest, "Sec-WebSocket-Key must be 16 bytes in base64"
	}
	return 0, ""
}

// hasToken reports whether a comma-separated list of header key holds
// token, in any case.
func hasToken(h http.Header, key, token string) bool {
	for _, v := range h.Values(key) {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// subprotocol returns the subprotocol of the handshake: the first of
// protocols the client offers, as it spells it, and nil with "" if it
// offers none of them (graphql-ws, the legacy one, is then spoken: its
// clients of old sent none).
func subprotocol(r *http.Request) (*protocol, string) {
	for _, p := range protocols {
		for _, v := range r.Header.Values("Sec-WebSocket-Protocol") {
			for offered := range strings.SplitSeq(v, ",") {
				if offered = strings.TrimSpace(offered); strings.EqualFold(offered, p.name) {
					return p, offered
				}
			}
		}
	}
	return nil, ""
}

// acceptKey is the Sec-WebSocket-Accept answering key: the hash that tells
// the client a websocket server read its handshake.
func acceptKey(key string) string {
	h := sha1.Sum([]byte(strings.TrimSpace(key) + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	return base64.StdEncoding.EncodeToString(h[:])
}

// upgrade answers a websocket handshake and returns the socket with the
// subprotocol it speaks; or answers why not, and returns nil.
func (t *Transport) upgrade(w http.ResponseWriter, r *http.Request) (*socket, *protocol) {
	status, problem := handshakeProblem(r)
	if problem == "" {
		if problem = t.cfg.Origins.refuses(r); problem != "" {
			status = http.StatusForbidden
		}
	}
	if problem != "" {
		if status == http.StatusUpgradeRequired {
			w.Header().Set("Upgrade", "websocket")
		}
		w.Header().Set("Sec-WebSocket-Version", "13")
		http.Error(w, problem, status)
		return nil, nil
	}
	p, offered := subprotocol(r)
	h := w.Header()
	h.Set("Upgrade", "websocket")
	h.Set("Connection", "Upgrade")
	h.Set("Sec-WebSocket-Accept", acceptKey(r.Header.Get("Sec-WebSocket-Key")))
	if p == nil {
		p = graphqlWS
	} else {
		h.Set("Sec-WebSocket-Protocol", offered)
	}
	w.WriteHeader(http.StatusSwitchingProtocols)
	conn, brw, err := http.NewResponseController(w).Hijack() // sends the answer
	if err != nil {
		t.cfg.Log.Warn("live: cannot take over the connection of a websocket handshake", "err", err)
		return nil, nil
	}
	// Bytes the client sent right after its handshake may sit in net/http's
	// reader; the socket reads them first.
	var pending []byte
	if n := brw.Reader.Buffered(); n > 0 {
		b, _ := brw.Reader.Peek(n)
		pending = bytes.Clone(b)
	}
	return newSocket(detached(conn), pending, &t.limits), p
}
