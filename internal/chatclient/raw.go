package chatclient

import (
	"bytes"
	"context"
	"io"
)

// ReadRaw reads the subscription's next websocket message into buf, reusing
// its capacity (and growing it when a message does not fit), and returns
// the message undecoded: the protocol envelope with its payload, e.g.
// {"id":"1","type":"next","payload":{"data":...}}. It is for callers that
// read many events and decode only what they need, like the load tool; the
// returned slice is valid until the next call with the same buf.
//
// Unlike Next, ReadRaw does not answer pings: call Pong when a message's
// type is "ping". A context without a deadline or cancellation
// (context.Background) makes the read cheapest; close the subscription to
// end a blocked read.
func (s *Subscription) ReadRaw(ctx context.Context, buf []byte) ([]byte, error) {
	_, r, err := s.conn.Reader(ctx)
	if err != nil {
		return buf[:0], err
	}
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// Pong answers a graphql-transport-ws "ping" read with ReadRaw.
func (s *Subscription) Pong(ctx context.Context) error {
	return s.send(ctx, "", "pong", nil)
}

// CloseNow closes the websocket at once, without telling the server to
// stop the subscription first or waiting for the close handshake.
func (s *Subscription) CloseNow() error { return s.conn.CloseNow() }

// RawType returns the "type" of a raw protocol message as ReadRaw returns
// it, without decoding the message: "next", "error", "complete", "ping",
// and so on; empty if it has none.
func RawType(msg []byte) string {
	// The envelope's own "type" comes after the payload in the server's
	// encoding; search from the end so that a payload field named "type"
	// cannot be taken for it.
	i := bytes.LastIndex(msg, []byte(`"type":"`))
	if i < 0 {
		return ""
	}
	rest := msg[i+len(`"type":"`):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return ""
	}
	for _, known := range rawTypes {
		if string(rest[:j]) == known {
			return known // no allocation for the types of the protocols
		}
	}
	return string(rest[:j])
}

var rawTypes = [...]string{"next", "data", "error", "complete", "ping", "pong", "ka", "connection_ack", "connection_error"}
