package live

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The answering key of RFC 6455's example handshake (section 1.3).
func TestAcceptKey(t *testing.T) {
	if got := acceptKey("dGhlIHNhbXBsZSBub25jZQ=="); got != "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" {
		t.Fatalf("got %q", got)
	}
}

// A handshake is refused, with a status and a reason, when it is not one
// (RFC 6455, 4.2.1) or comes from a page of an origin that may not connect;
// accepted with the subprotocol the server prefers among those offered.
func TestHandshake(t *testing.T) {
	origins := Origins{Hosts: []string{"app.example.com", "*.chat.example", "https://secure.example"}}
	good := func(r *http.Request) {
		r.Header.Set("Connection", "keep-alive, Upgrade")
		r.Header.Set("Upgrade", "WebSocket")
		r.Header.Set("Sec-WebSocket-Version", "13")
		r.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	}
	for _, c := range []struct {
		name     string
		origins  Origins
		change   func(r *http.Request)
		status   int
		protocol string // answered in Sec-WebSocket-Protocol
	}{
		{"no subprotocol", origins, func(*http.Request) {}, http.StatusSwitchingProtocols, ""},
		{"both offered", origins, func(r *http.Request) {
			r.Header.Set("Sec-WebSocket-Protocol", "graphql-ws, graphql-transport-ws")
		}, http.StatusSwitchingProtocols, "graphql-transport-ws"},
		{"legacy offered", origins, func(r *http.Request) {
			r.Header.Add("Sec-WebSocket-Protocol", "mqtt")
			r.Header.Add("Sec-WebSocket-Protocol", "graphql-ws")
		}, http.StatusSwitchingProtocols, "graphql-ws"},
		{"another offered", origins, func(r *http.Request) { r.Header.Set("Sec-WebSocket-Protocol", "mqtt") }, http.StatusSwitchingProtocols, ""},
		{"POST", origins, func(r *http.Request) { r.Method = http.MethodPost }, http.StatusMethodNotAllowed, ""},
		{"no Upgrade", origins, func(r *http.Request) { r.Header.Del("Upgrade") }, http.StatusUpgradeRequired, ""},
		{"no Connection: Upgrade", origins, func(r *http.Request) { r.Header.Set("Connection", "keep-alive") }, http.StatusUpgradeRequired, ""},
		{"version 8", origins, func(r *http.Request) { r.Header.Set("Sec-WebSocket-Version", "8") }, http.StatusBadRequest, ""},
		{"no key", origins, func(r *http.Request) { r.Header.Del("Sec-WebSocket-Key") }, http.StatusBadRequest, ""},
		{"two keys", origins, func(r *http.Request) { r.Header.Add("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==") }, http.StatusBadRequest, ""},
		{"short key", origins, func(r *http.Request) { r.Header.Set("Sec-WebSocket-Key", "c2hvcnQ=") }, http.StatusBadRequest, ""},
		{"same host", origins, func(r *http.Request) { r.Header.Set("Origin", "http://"+r.Host) }, http.StatusSwitchingProtocols, ""},
		{"allowed host", origins, func(r *http.Request) { r.Header.Set("Origin", "https://APP.example.com") }, http.StatusSwitchingProtocols, ""},
		{"allowed pattern", origins, func(r *http.Request) { r.Header.Set("Origin", "http://eu.chat.example") }, http.StatusSwitchingProtocols, ""},
		{"allowed scheme and host", origins, func(r *http.Request) { r.Header.Set("Origin", "https://secure.example") }, http.StatusSwitchingProtocols, ""},
		{"allowed host, other scheme", origins, func(r *http.Request) { r.Header.Set("Origin", "http://secure.example") }, http.StatusForbidden, ""},
		{"other origin", origins, func(r *http.Request) { r.Header.Set("Origin", "https://evil.example") }, http.StatusForbidden, ""},
		{"origin not a URL", origins, func(r *http.Request) { r.Header.Set("Origin", "null") }, http.StatusForbidden, ""},
		{"any origin", Origins{Any: true}, func(r *http.Request) { r.Header.Set("Origin", "https://evil.example") }, http.StatusSwitchingProtocols, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := &Transport{cfg: Config{Origins: c.origins, Log: slog.Default()}, limits: testLimits}
			accepted := make(chan *protocol, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				s, p := tr.upgrade(w, r)
				if s != nil {
					s.hangUp()
				}
				accepted <- p
			}))
			defer srv.Close()
			r, err := http.NewRequest(http.MethodGet, srv.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			good(r)
			c.change(r)
			res, err := http.DefaultTransport.RoundTrip(r)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			p := <-accepted
			if res.StatusCode != c.status {
				t.Fatalf("status %d, want %d", res.StatusCode, c.status)
			}
			if c.status != http.StatusSwitchingProtocols {
				if p != nil {
					t.Fatal("refused, but upgraded")
				}
				return
			}
			if got := res.Header.Get("Sec-WebSocket-Protocol"); got != c.protocol {
				t.Fatalf("subprotocol %q, want %q", got, c.protocol)
			}
			want := graphqlWS
			if c.protocol == graphqlTransportWS.name {
				want = graphqlTransportWS
			}
			if p != want {
				t.Fatalf("speaks %s, want %s", p.name, want.name)
			}
			if got := res.Header.Get("Sec-WebSocket-Accept"); got != "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" || !strings.EqualFold(res.Header.Get("Upgrade"), "websocket") {
				t.Fatalf("answer headers %v", res.Header)
			}
		})
	}
}
