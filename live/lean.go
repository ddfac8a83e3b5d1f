package live

import (
	"bufio"
	"bytes"
	"net"
	"net/http"
	"sync"
)

// Buffer sizes of a websocket connection. net/http hijacks with 4 KiB each
// way, which an idle chat subscriber never uses. Clients send little
// (subscribe, ping, complete); the websocket library reads longer messages
// through the small buffer. Every frame the server sends is written inside
// a batch of the socket, which gathers it whole however the library's
// buffer cuts it up, and writes it in one syscall; so that buffer only
// needs to hold a frame header.
const (
	readBufferSize  = 256
	writeBufferSize = 64
)

// leanHijacker hands the websocket library the hijacked connection with
// small buffers instead of net/http's, and keeps it (socket).
type leanHijacker struct {
	http.ResponseWriter
	maxFrames int // the socket's batch bound (Config.MaxFramesPerWrite)
	socket    *socket
}

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
	w.socket = &socket{Conn: conn, pending: pending, maxFrames: w.maxFrames}
	return w.socket, bufio.NewReadWriter(bufio.NewReaderSize(w.socket, readBufferSize), bufio.NewWriterSize(w.socket, writeBufferSize)), nil
}

// Bounds of a batch: it is written as soon as it gathers this many whole
// frames or bytes, even while more are queued, so that the first of a long
// run of events (a resume's replay, a burst) waits for no more than these,
// a client that stopped reading blocks the writer (and the watchdog and the
// broker's slow-subscriber limit see it) instead of a buffer growing, and
// interleaved batches of a connection's subscriptions cannot hold their
// frames back for long.
const (
	defaultBatchFrames = 32
	maxBatchBytes      = 32 << 10
)

// socket is a websocket's connection. It reads pending before the socket;
// and while a batch is open, it gathers what is written and writes it in
// one go when the batch closes or reaches its bounds: a connection's queued
// events go out in one syscall instead of one each. Only what is already
// queued is gathered: a lone event is written at once.
type socket struct {
	net.Conn
	pending []byte // read by one goroutine, the connection's reader
	// maxFrames is how many whole frames a batch gathers before it is
	// written (Config.MaxFramesPerWrite); 1 writes every frame on its own.
	maxFrames int

	mu       sync.Mutex // orders the writes, gathered or not
	batches  int        // open batches
	frames   int        // whole frames gathered
	gathered *[]byte    // from gatherPool; nil if nothing is gathered
}

// gatherPool holds the buffers of batches, so that a connection holds none
// between them.
var gatherPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

func (c *socket) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.batches == 0 {
		return c.Conn.Write(p)
	}
	if c.gathered == nil {
		c.gathered = gatherPool.Get().(*[]byte)
	}
	*c.gathered = append(*c.gathered, p...)
	return len(p), nil
}

// openBatch makes writes gather until closeBatch.
func (c *socket) openBatch() {
	c.mu.Lock()
	c.batches++
	c.mu.Unlock()
}

// closeBatch closes a batch; the last open one writes what was gathered.
// Writes are in the order they were made: a frame the websocket library
// writes in two parts may straddle a batch's end, and its parts still go out
// one after the other.
func (c *socket) closeBatch() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.batches--; c.batches > 0 {
		return nil
	}
	return c.flush()
}

// closeFrame closes the batch of one frame (conn.write's), which is now
// whole: as closeBatch, and a batch inside which it was written is written
// too once it holds maxFrames whole frames or maxBatchBytes.
func (c *socket) closeFrame() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.batches--
	c.frames++
	if c.batches > 0 && c.frames < c.maxFrames && (c.gathered == nil || len(*c.gathered) < maxBatchBytes) {
		return nil
	}
	return c.flush()
}

// flush writes what was gathered, in one write; c.mu is held.
func (c *socket) flush() error {
	c.frames = 0
	if c.gathered == nil {
		return nil
	}
	_, err := c.Conn.Write(*c.gathered)
	*c.gathered = (*c.gathered)[:0]
	if cap(*c.gathered) <= 64<<10 { // a large frame's buffer is not kept
		gatherPool.Put(c.gathered)
	}
	c.gathered = nil
	return err
}

func (c *socket) Read(p []byte) (int, error) {
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
