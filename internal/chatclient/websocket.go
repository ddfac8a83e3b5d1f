package chatclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/coder/websocket"
)

// The websocket subprotocols the server speaks.
const (
	GraphQLTransportWS = "graphql-transport-ws" // the current protocol
	GraphQLWS          = "graphql-ws"           // the legacy subscriptions-transport-ws protocol
)

// Subscription is a GraphQL subscription on its own websocket, or several
// of the same query (SubscribeEach).
type Subscription struct {
	conn     *websocket.Conn
	protocol string
	ops      int // subscribed with ids "1" to ops
}

// ErrComplete is returned by Next when the server completed the subscription.
var ErrComplete = errors.New("subscription complete")

type wsMessage struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// Subscribe opens a websocket with the given subprotocol, authenticates
// with the client's token in connection_init, and starts the subscription.
// A rejected connection returns an error carrying the close status (see
// websocket.CloseStatus).
func (c *Client) Subscribe(ctx context.Context, protocol, query string, vars map[string]any) (*Subscription, error) {
	return c.SubscribeEach(ctx, protocol, query, vars)
}

// SubscribeEach is Subscribe with the query started once per set of
// variables, all on the one websocket, with ids "1", "2" and so on: a
// client following several rooms on one connection. Next returns the
// results of all of them.
func (c *Client) SubscribeEach(ctx context.Context, protocol, query string, vars ...map[string]any) (*Subscription, error) {
	url := "ws" + strings.TrimPrefix(c.URL, "http")
	conn, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{Subprotocols: []string{protocol}, HTTPClient: c.HTTP})
	if err != nil {
		return nil, err
	}
	conn.SetReadLimit(1 << 20)
	s := &Subscription{conn: conn, protocol: protocol, ops: len(vars)}
	init := map[string]any{}
	if c.Token != "" {
		init["token"] = c.Token
	}
	if err := s.send(ctx, "", "connection_init", init); err != nil {
		conn.CloseNow()
		return nil, err
	}
	for {
		m, err := s.read(ctx)
		if err != nil {
			conn.CloseNow()
			return nil, err
		}
		if m.Type == "connection_ack" {
			break
		}
		if m.Type == "connection_error" {
			// The server closes right after; report the close status.
			if _, err := s.read(ctx); err != nil {
				conn.CloseNow()
				return nil, fmt.Errorf("connection rejected: %s: %w", m.Payload, err)
			}
		}
	}
	start := "subscribe"
	if protocol == GraphQLWS {
		start = "start"
	}
	for i, v := range vars {
		if err := s.send(ctx, strconv.Itoa(i+1), start, Request{Query: query, Variables: v}); err != nil {
			conn.CloseNow()
			return nil, err
		}
	}
	return s, nil
}

// Next returns the next result of the subscription. It returns ErrComplete
// when the server ends it normally, and Errors for a result that has errors
// and no data (the subscription failed).
func (s *Subscription) Next(ctx context.Context) (Response, error) {
	for {
		m, err := s.read(ctx)
		if err != nil {
			return Response{}, err
		}
		switch m.Type {
		case "next", "data":
			var r Response
			if err := json.Unmarshal(m.Payload, &r); err != nil {
				return Response{}, err
			}
			if len(r.Errors) > 0 && (len(r.Data) == 0 || string(r.Data) == "null") {
				return r, r.Errors
			}
			return r, nil
		case "error":
			var errs Errors
			if err := json.Unmarshal(m.Payload, &errs); err != nil {
				var one Error // graphql-ws sends a single error object
				if json.Unmarshal(m.Payload, &one) == nil {
					errs = Errors{one}
				}
			}
			return Response{}, errs
		case "complete":
			return Response{}, ErrComplete
		case "ping":
			if err := s.send(ctx, "", "pong", nil); err != nil {
				return Response{}, err
			}
		}
		// "ka", "pong" and others are keepalives.
	}
}

// Close stops the subscriptions and closes the websocket.
func (s *Subscription) Close() error {
	stop := "complete"
	if s.protocol == GraphQLWS {
		stop = "stop"
	}
	for i := range s.ops {
		_ = s.send(context.Background(), strconv.Itoa(i+1), stop, nil)
	}
	return s.conn.Close(websocket.StatusNormalClosure, "")
}

func (s *Subscription) send(ctx context.Context, id, typ string, payload any) error {
	m := wsMessage{ID: id, Type: typ}
	if payload != nil {
		raw, err := json.Marshal(payload)
		if err != nil {
			return err
		}
		m.Payload = raw
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return s.conn.Write(ctx, websocket.MessageText, raw)
}

func (s *Subscription) read(ctx context.Context) (wsMessage, error) {
	_, raw, err := s.conn.Read(ctx)
	if err != nil {
		return wsMessage{}, err
	}
	var m wsMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return wsMessage{}, fmt.Errorf("undecodable websocket message %.200q: %w", raw, err)
	}
	return m, nil
}
