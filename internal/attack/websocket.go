package attack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/coder/websocket"
)

// closeUnauthorized is graphql-transport-ws's close code for a connection
// whose credentials the server refuses.
const closeUnauthorized = 4401

// protocolMessages are the message types graphql-transport-ws lets a server
// send; anything else makes the official client fail with a protocol error
// instead of the close code an app handles.
var protocolMessages = map[string]bool{"connection_ack": true, "ping": true, "pong": true, "next": true, "error": true, "complete": true}

func websocketBadToken(ctx context.Context, t *Target) error {
	return t.websocketRefuses(ctx, "forged.jwt.token")
}

// websocketRefuses opens a graphql-transport-ws connection with token and
// checks that the server closes it with 4401, sending nothing the
// protocol does not have first.
func (t *Target) websocketRefuses(ctx context.Context, token string) error {
	conn, err := t.openSocket(ctx, token)
	if err != nil {
		return err
	}
	defer conn.CloseNow()
	return expectClose(ctx, conn, closeUnauthorized, 10*time.Second)
}

// openSocket dials /query with graphql-transport-ws and sends
// connection_init with token.
func (t *Target) openSocket(ctx context.Context, token string) (*websocket.Conn, error) {
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(t.Base, "http")+"/query",
		&websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		return nil, err
	}
	init, _ := json.Marshal(map[string]any{"type": "connection_init", "payload": map[string]any{"token": token}})
	if err := conn.Write(ctx, websocket.MessageText, init); err != nil {
		conn.CloseNow()
		return nil, err
	}
	return conn, nil
}

// expectClose reads until the server closes the socket, which it must do
// with code within wait; messages before it must be of the protocol.
func expectClose(ctx context.Context, conn *websocket.Conn, code websocket.StatusCode, wait time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for {
		_, msg, err := conn.Read(ctx)
		if err != nil {
			if got := websocket.CloseStatus(err); got != code {
				return fmt.Errorf("the socket ended with %v (close code %d), want close code %d", err, got, code)
			}
			return nil
		}
		var m struct{ Type string }
		if json.Unmarshal(msg, &m) != nil || !protocolMessages[m.Type] {
			return fmt.Errorf("the server sent %.200s, which graphql-transport-ws does not have", msg)
		}
		if m.Type == "ping" {
			_ = conn.Write(ctx, websocket.MessageText, []byte(`{"type":"pong"}`))
		}
	}
}

// logoutEndsStream subscribes to a room, logs out on another connection
// and checks that the subscription's socket is closed with 4401.
func logoutEndsStream(ctx context.Context, t *Target) error {
	if t.SessionCheck == 0 {
		return ErrSkipped
	}
	acc, room, err := t.accountWithRoom(ctx)
	if err != nil {
		return err
	}
	conn, err := t.openSocket(ctx, acc.Token)
	if err != nil {
		return err
	}
	defer conn.CloseNow()
	if _, msg, err := conn.Read(ctx); err != nil || !strings.Contains(string(msg), "connection_ack") {
		return fmt.Errorf("connection_init with a valid token: %v %.200s", err, msg)
	}
	sub, _ := json.Marshal(map[string]any{"id": "1", "type": "subscribe", "payload": map[string]any{
		"query": `subscription($r: String!) { roomEvents(room: $r) { kind } }`, "variables": map[string]any{"r": room}}})
	if err := conn.Write(ctx, websocket.MessageText, sub); err != nil {
		return err
	}
	a, err := t.query(ctx, acc.Token, `mutation { logout }`, nil)
	if err != nil {
		return err
	}
	if len(a.Errors) > 0 {
		return fmt.Errorf("logout: %s (%s)", a.Errors[0].Message, a.Errors[0].code())
	}
	err = expectClose(ctx, conn, closeUnauthorized, t.SessionCheck+5*time.Second)
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("the subscription outlived its session by %v", t.SessionCheck+5*time.Second)
	}
	return err
}
