package e2e

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/killrchat/chatql/server"
)

// The official npm clients, run by node against the real server: the
// graphql-ws library (graphql-transport-ws) and subscriptions-transport-ws
// (legacy graphql-ws). Each follows a room from a cursor (replay, a live
// message, the room's deletion and the complete that follows), runs a query,
// gets refused subscriptions on its error sink with extensions.code, and is
// refused a bad token: graphql-ws by the 4401 close, without retrying;
// subscriptions-transport-ws by connection_error, then 4401. The replay is
// 40 messages, which the server writes 32 frames to a write (live's
// coalescing): each client must still read every message, in order.
func TestOfficialWebsocketClients(t *testing.T) {
	const replays = 40
	ts := startServer(t, testConfig(t))
	alice, bob := ts.user(t, "alice"), ts.user(t, "bob")
	mustDo(t, alice, createRoom, map[string]any{"n": "closed"}, nil)
	cfg := map[string]any{
		"ws":                 "ws" + strings.TrimPrefix(ts.URL, "http"),
		"http":               ts.URL,
		"member":             alice.Token,
		"outsider":           bob.Token,
		"closedRoom":         "closed",
		"graphqlTransportWS": prepareClientRoom(t, alice, "modern", replays),
		"graphqlWS":          prepareClientRoom(t, alice, "legacy", replays),
	}
	stdout := npmClient{"clients/graphql-ws", "graphql-ws", "the npm websocket client tests"}.run(t, cfg)

	type graphqlErrors = []struct{ Message, Code string }
	type ending struct {
		Timeout   bool
		Completed bool
		Error     *struct {
			GraphqlErrors graphqlErrors
			CloseCode     int
			CloseReason   string
			Other         string
		}
		Results  []json.RawMessage
		Connects int
	}
	var got struct {
		GraphqlTransportWS struct {
			Follow                                     clientFollow
			Query                                      ending
			NotParticipant, NoSuchRoom, AnonymousInbox ending
			BadToken                                   ending
		}
		GraphqlWS struct {
			Follow         clientFollow
			NotParticipant ending
			BadToken       struct {
				Timeout         bool
				ConnectionError *struct{ GraphqlErrors graphqlErrors }
				CloseCode       int
			}
		}
	}
	if err := json.Unmarshal(stdout, &got); err != nil {
		t.Fatalf("node output: %v", err)
	}

	refused := func(protocol, what string, e ending, code string) {
		t.Helper()
		if e.Timeout || e.Completed || len(e.Results) != 0 || e.Error == nil || len(e.Error.GraphqlErrors) == 0 || e.Error.GraphqlErrors[0].Code != code {
			t.Errorf("%s: %s: got %s, want GraphQL errors with %s on the error sink", protocol, what, show(e), code)
		}
	}

	modern := got.GraphqlTransportWS
	modern.Follow.check(t, "graphql-ws", cfg["graphqlTransportWS"].(clientRoom))
	if q := modern.Query; q.Timeout || !q.Completed || len(q.Results) != 1 || string(q.Results[0]) != `{"data":{"me":{"login":"alice"}}}` {
		t.Errorf("graphql-ws: query: got %s, want one result, then complete", show(q))
	}
	refused("graphql-ws", "not a participant", modern.NotParticipant, "FORBIDDEN")
	refused("graphql-ws", "no such room", modern.NoSuchRoom, "NOT_FOUND")
	refused("graphql-ws", "anonymous inboxEvents", modern.AnonymousInbox, "UNAUTHENTICATED")
	if b := modern.BadToken; b.Timeout || b.Error == nil || b.Error.CloseCode != 4401 || b.Error.CloseReason == "" || b.Connects != 1 {
		t.Errorf("graphql-ws: bad token: got %s, want the 4401 close on the error sink after one connection (no retry)", show(b))
	}

	old := got.GraphqlWS
	old.Follow.check(t, "subscriptions-transport-ws", cfg["graphqlWS"].(clientRoom))
	refused("subscriptions-transport-ws", "not a participant", old.NotParticipant, "FORBIDDEN")
	if b := old.BadToken; b.Timeout || b.ConnectionError == nil || len(b.ConnectionError.GraphqlErrors) != 1 ||
		b.ConnectionError.GraphqlErrors[0].Code != "UNAUTHENTICATED" || b.CloseCode != 4401 {
		t.Errorf("subscriptions-transport-ws: bad token: got %s, want connection_error with UNAUTHENTICATED, then 4401", show(b))
	}
}

// CHAT_MAX_UNAUTHENTICATED_WEBSOCKETS caps the websockets without a user:
// over it, the server refuses upgrades with a coded 503.
func TestUnauthenticatedWebsocketCap(t *testing.T) {
	cfg, err := server.ParseConfig(nil, func(k string) string {
		return map[string]string{"CHAT_MAX_UNAUTHENTICATED_WEBSOCKETS": "1"}[k]
	})
	if err != nil || cfg.MaxUnauthenticatedWebsockets != 1 {
		t.Fatalf("got %d, %v; want 1", cfg.MaxUnauthenticatedWebsockets, err)
	}
	if _, err := server.ParseConfig([]string{"-max-unauthenticated-websockets", "0"}, func(string) string { return "" }); err == nil {
		t.Fatal("a cap of 0 was accepted")
	}
	cfg = testConfig(t)
	cfg.MaxUnauthenticatedWebsockets = 1
	ts := startServer(t, cfg)
	url := "ws" + strings.TrimPrefix(ts.URL, "http")
	dial := func() (*websocket.Conn, *http.Response, error) {
		return websocket.Dial(testContext(t), url, &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	}
	first, _, err := dial()
	if err != nil {
		t.Fatal(err)
	}
	defer first.CloseNow()
	_, resp, err := dial()
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("second unauthenticated websocket: got %v %+v, want 503", err, resp)
	}
	var body struct {
		Errors []struct{ Extensions struct{ Code string } }
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || len(body.Errors) != 1 || body.Errors[0].Extensions.Code != "TOO_MANY_CONNECTIONS" {
		t.Fatalf("refusal body: %+v (%v), want one TOO_MANY_CONNECTIONS error", body, err)
	}
}

// Frames that break the websocket protocol, sent raw to the real server,
// each get a close frame with the code that says why (RFC 6455, 7.4.1),
// and the server serves the next client as before.
func TestMalformedWebsocketFrames(t *testing.T) {
	cfg := testConfig(t)
	cfg.MaxBodyBytes = 4 << 10
	ts := startServer(t, cfg)
	alice := ts.user(t, "alice")
	masked := func(first byte, payload []byte) []byte {
		b := []byte{first, 0x80 | 126, byte(len(payload) >> 8), byte(len(payload)), 1, 2, 3, 4}
		for i, x := range payload {
			b = append(b, x^byte(i%4+1))
		}
		return b
	}
	for _, c := range []struct {
		name  string
		frame []byte
		code  uint16
	}{
		{"unmasked", []byte{0x81, 2, '{', '}'}, 1002},
		{"unknown opcode", masked(0x83, []byte("{}")), 1002},
		{"fragmented ping", masked(0x09, nil), 1002},
		{"over the read limit", masked(0x81, make([]byte, 5<<10)), 1009},
		{"text not UTF-8", masked(0x81, []byte("{\"type\":\"\xff\"}")), 1007},
	} {
		t.Run(c.name, func(t *testing.T) {
			u, err := url.Parse(ts.URL)
			if err != nil {
				t.Fatal(err)
			}
			conn, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			handshake := "GET " + u.Path + " HTTP/1.1\r\nHost: " + u.Host + "\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n" +
				"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: graphql-transport-ws\r\n\r\n"
			if _, err := conn.Write(append([]byte(handshake), c.frame...)); err != nil {
				t.Fatal(err)
			}
			r := bufio.NewReader(conn)
			resp, err := http.ReadResponse(r, nil)
			if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
				t.Fatalf("handshake: %v %v", resp, err)
			}
			var h [4]byte
			if _, err := io.ReadFull(r, h[:]); err != nil {
				t.Fatalf("no close frame: %v", err)
			}
			if h[0] != 0x88 || h[1] < 2 || uint16(h[2])<<8|uint16(h[3]) != c.code {
				t.Fatalf("got frame % x, want a close with %d", h, c.code)
			}
		})
	}
	var me struct{ Me struct{ Login string } }
	mustDo(t, alice, `{ me { login } }`, nil, &me)
	if me.Me.Login != "alice" {
		t.Fatalf("after the faults: %+v", me)
	}
}
