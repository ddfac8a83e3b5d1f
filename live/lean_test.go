package live

import (
	"io"
	"net"
	"strings"
	"testing"
)

// Bytes net/http had buffered past the handshake are read before the socket.
func TestReplayConnReadsPendingFirst(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	c := &replayConn{Conn: server, pending: []byte("pipelined ")}
	go func() { _, _ = client.Write([]byte("then the socket")); client.Close() }()
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "pipelined then the socket" {
		t.Fatalf("got %q, %v", got, err)
	}
}

// Frames larger than the connection's buffers arrive whole, both ways.
func TestLargeFramesCrossSmallBuffers(t *testing.T) {
	h := newHarness(t, nil)
	alice := h.user("alice")
	h.room("hall", "alice")
	c := h.connect(graphqlTransportWS.name, alice)
	before := h.open()
	// A subscribe message longer than the read buffer.
	padded := roomEvents + strings.Repeat(" ", 4*readBufferSize)
	c.subscribe(graphqlTransportWS, "1", padded, map[string]any{"r": "hall"})
	waitFor(t, "the stream", func() bool { return h.open() == before+1 })
	long := strings.Repeat("é", 4000) // 8,000 bytes: several times the write buffer
	id := h.post(alice, "hall", long)
	if ev := c.event(graphqlTransportWS, "1"); ev.Message == nil || ev.Message.ID != id || ev.Message.Content != long {
		t.Fatalf("got a different message back (%d bytes of content)", len(ev.Message.Content))
	}
}
