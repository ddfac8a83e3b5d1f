package live

import (
	"encoding/json"

	"github.com/coder/websocket"
)

// protocol names the messages of one GraphQL-over-websocket subprotocol.
// Both carry the same operations; they differ in names and in who keeps
// the connection alive.
type protocol struct {
	name string
	// client to server
	subscribe, stop, terminate string
	// server to client
	next string
	// keepAlive is sent after the ack and then periodically (graphql-ws
	// only; graphql-transport-ws clients ping when they want to).
	keepAlive string
}

// The subprotocols, by the name negotiated in Sec-WebSocket-Protocol.
var (
	// graphqlTransportWS is the current protocol (the graphql-ws library,
	// GraphiQL, Apollo Client's GraphQLWsLink).
	graphqlTransportWS = &protocol{
		name:      "graphql-transport-ws",
		subscribe: "subscribe", stop: "complete",
		next: "next",
	}
	// graphqlWS is the legacy subscriptions-transport-ws protocol, still
	// spoken by older clients; it is also assumed when none is named.
	graphqlWS = &protocol{
		name:      "graphql-ws",
		subscribe: "start", stop: "stop", terminate: "connection_terminate",
		next:      "data",
		keepAlive: "ka",
	}
)

// Message types shared by both protocols.
const (
	msgConnectionInit  = "connection_init"
	msgConnectionAck   = "connection_ack"
	msgConnectionError = "connection_error" // graphql-ws; sent by both before closing on a bad token
	msgPing            = "ping"
	msgPong            = "pong"
	msgError           = "error"
	msgComplete        = "complete"
)

// Close codes (graphql-transport-ws assigns 44xx; 4401 also closes a
// graphql-ws connection whose token is rejected).
const (
	closeBadRequest       websocket.StatusCode = 4400
	closeUnauthorized     websocket.StatusCode = 4401
	closeInitTimeout      websocket.StatusCode = 4408
	closeDuplicateID      websocket.StatusCode = 4409
	closeTooManyInits     websocket.StatusCode = 4429
	closeNormal                                = websocket.StatusNormalClosure
	closeGoingAway                             = websocket.StatusGoingAway
	closeUnsupportedFrame                      = websocket.StatusUnsupportedData
)

// message is one protocol message, either way.
type message struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// framePrefix is the start of every result frame of one operation:
// appending the result and "}" completes it, so a result encoded once can be
// written to any number of operations.
func framePrefix(p *protocol, id string) []byte {
	quoted, _ := json.Marshal(id) // a string always marshals
	b := make([]byte, 0, len(quoted)+len(p.next)+32)
	b = append(b, `{"id":`...)
	b = append(b, quoted...)
	b = append(b, `,"type":"`...)
	b = append(b, p.next...)
	b = append(b, `","payload":`...)
	return b
}
