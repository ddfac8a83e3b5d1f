package live

import (
	"bufio"
	"bytes"
	"net"
	"net/http"
)

// Buffer sizes of a websocket connection. net/http hijacks with 4 KiB each
// way, which an idle chat subscriber never uses. A room event of a typical
// chat message is a few hundred bytes: one frame of up to 1 KiB goes out in
// one write syscall, a longer one in two. Clients send little (subscribe,
// ping, complete); the websocket library reads longer messages through the
// small buffer.
const (
	readBufferSize  = 256
	writeBufferSize = 1024
)

// leanHijacker hands the websocket library the hijacked connection with
// small buffers instead of net/http's.
type leanHijacker struct{ http.ResponseWriter }

func (w *leanHijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	// Bytes the client sent right after its handshake may sit in net/http's
	// reader; the connection replays them before reading the socket.
	var pending []byte
	if n := brw.Reader.Buffered(); n > 0 {
		b, _ := brw.Reader.Peek(n)
		pending = bytes.Clone(b)
	}
	rc := &replayConn{Conn: conn, pending: pending}
	return rc, bufio.NewReadWriter(bufio.NewReaderSize(rc, readBufferSize), bufio.NewWriterSize(rc, writeBufferSize)), nil
}

// replayConn reads pending before the socket.
type replayConn struct {
	net.Conn
	pending []byte
}

func (c *replayConn) Read(p []byte) (int, error) {
	if len(c.pending) > 0 {
		n := copy(p, c.pending)
		c.pending = c.pending[n:]
		if len(c.pending) == 0 {
			c.pending = nil
		}
		return n, nil
	}
	return c.Conn.Read(p)
}
