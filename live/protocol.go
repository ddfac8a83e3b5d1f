package live

import (
	"bytes"
	"encoding/json"
)

// protocol names the messages of one GraphQL-over-websocket subprotocol.
// Both carry the same operations; they differ in names and in who keeps
// the connection alive.
type protocol struct {
	name string
	// index is the protocol's place in Transport.counts.
	index int
	// client to server
	subscribe, stop, terminate string
	// server to client
	next string
	// keepAlive is sent after the ack and then periodically (graphql-ws
	// only; graphql-transport-ws clients ping when they want to).
	keepAlive string
	// connectionError precedes the close of a rejected connection_init
	// (graphql-ws only: graphql-transport-ws has no such message, the
	// close code says it all).
	connectionError string
	// strict checks every message's shape as graphql-transport-ws
	// specifies, and closes with 4400 on any deviation (see malformed).
	strict bool
}

// The subprotocols, by the name negotiated in Sec-WebSocket-Protocol.
var (
	// graphqlTransportWS is the current protocol (the graphql-ws library,
	// GraphiQL, Apollo Client's GraphQLWsLink).
	graphqlTransportWS = &protocol{
		name:      "graphql-transport-ws",
		index:     0,
		subscribe: "subscribe", stop: "complete",
		next:   "next",
		strict: true,
	}
	// graphqlWS is the legacy subscriptions-transport-ws protocol, still
	// spoken by older clients; it is also assumed when none is named.
	graphqlWS = &protocol{
		name:      "graphql-ws",
		index:     1,
		subscribe: "start", stop: "stop", terminate: "connection_terminate",
		next:            "data",
		keepAlive:       "ka",
		connectionError: "connection_error",
	}
)

// protocols are the subprotocols by index.
var protocols = [...]*protocol{graphqlTransportWS, graphqlWS}

// Message types shared by both protocols.
const (
	msgConnectionInit = "connection_init"
	msgConnectionAck  = "connection_ack"
	msgPing           = "ping"
	msgPong           = "pong"
	msgError          = "error"
	msgComplete       = "complete"
)

// Close codes: those of graphql-transport-ws (the graphql-ws library's
// CloseCode), used for graphql-ws connections too.
//
// A rejected connection_init closes with 4401, not the 4403 the
// specification recommends: the graphql-ws client gives up at once on 4401
// and reports it to the app, whereas it retries 4403 (five times, with
// backoff) before it does; a bad token does not get better by retrying.
const (
	closeBadRequest   closeCode = 4400
	closeUnauthorized closeCode = 4401
	closeInitTimeout  closeCode = 4408
	closeDuplicateID  closeCode = 4409
	closeTooManyInits closeCode = 4429
	closeInternal     closeCode = 4500
)

// A closeCode is the status of a websocket's close frame. Those of RFC 6455
// (section 7.4.1) the server sends:
type closeCode uint16

const (
	closeNormal         closeCode = 1000
	closeGoingAway      closeCode = 1001
	closeProtocolError  closeCode = 1002 // a frame broke the protocol
	closeInvalidPayload closeCode = 1007 // text that is not UTF-8
	closeMessageTooBig  closeCode = 1009 // over Config.ReadLimit
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

// malformed says what makes m break the rules of p, or "" if nothing does.
// Every protocol needs an id to start an operation; graphql-transport-ws
// also fixes the shape of every payload (as the graphql-ws library's
// validateMessage checks it).
func (p *protocol) malformed(m message) string {
	switch m.Type {
	case p.subscribe:
		if m.ID == "" {
			return m.Type + " needs an id"
		}
		if p.strict {
			return malformedOperation(m.Payload)
		}
	case p.stop:
		if p.strict && m.ID == "" {
			return m.Type + " needs an id"
		}
	case msgConnectionInit, msgPing, msgPong:
		if p.strict && !objectOrNull(m.Payload) {
			return m.Type + " payload must be an object"
		}
	}
	return ""
}

// malformedOperation checks a subscribe payload: an object with a string
// query, and optional variables, operationName and extensions of the right
// kinds.
func malformedOperation(payload json.RawMessage) string {
	var op struct {
		Query         *string
		OperationName *string
		Variables     json.RawMessage
		Extensions    json.RawMessage
	}
	if !isObject(payload) || json.Unmarshal(payload, &op) != nil {
		return "subscribe payload must be an object with a string query, and optional string operationName and object variables and extensions"
	}
	switch {
	case op.Query == nil:
		return "subscribe payload needs a query string"
	case !objectOrNull(op.Variables):
		return "subscribe variables must be an object"
	case !objectOrNull(op.Extensions):
		return "subscribe extensions must be an object"
	}
	return ""
}

// objectOrNull reports whether raw is absent, null or a JSON object.
func objectOrNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null" || isObject(raw)
}

// isObject reports whether raw is a JSON object (its validity is left to
// the decoder).
func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}
