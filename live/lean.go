package live

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Buffer sizes of a websocket connection. net/http hijacks with 4 KiB each
// way, which an idle chat subscriber never uses. Clients send little
// (subscribe, ping, complete); the websocket library reads longer messages
// through the small buffer. The server's messages do not go through the
// library (socket.writeText frames them); it writes only control frames
// (pong, close), whose payload is at most 125 bytes: the write buffer holds
// such a frame whole, so that the library flushes it in one socket.Write,
// which no message can then cut in two.
const (
	readBufferSize  = 256
	writeBufferSize = 2 + 125
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
	w.socket.reader = bufio.NewReaderSize(w.socket, readBufferSize)
	if sc, ok := conn.(syscall.Conn); ok && canPeek {
		w.socket.raw, _ = sc.SyscallConn()
	}
	w.socket.peekFn = w.socket.peek
	return w.socket, bufio.NewReadWriter(w.socket.reader, bufio.NewWriterSize(w.socket, writeBufferSize)), nil
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

// socket is a websocket's connection. It reads pending before the socket.
// It frames the server's messages itself (writeText), and while a batch is
// open, it gathers them, and whatever the library writes, and writes them in
// one go when the batch closes or reaches its bounds: a connection's queued
// events go out in one syscall instead of one each. Only what is already
// queued is gathered: a lone event is written at once.
type socket struct {
	net.Conn
	pending []byte // read by one goroutine, the connection's reader
	// reader is the websocket library's buffered reader of the socket;
	// raw the connection's file descriptor, and peekFn c.peek, made once,
	// to wait for input (awaitInput); nil where there is none.
	reader *bufio.Reader
	raw    syscall.RawConn
	peekFn func(fd uintptr) bool
	peeked [1]byte
	// maxFrames is how many whole frames a batch gathers before it is
	// written (Config.MaxFramesPerWrite); 1 writes every frame on its own.
	maxFrames int
	// writing is when the syscall under way started (Unix ns), 0 if none:
	// the transport's watchdog aborts a connection whose client stopped
	// reading.
	writing atomic.Int64

	mu       sync.Mutex // orders the writes, gathered or not
	batches  int        // open batches
	frames   int        // whole frames gathered
	gathered *[]byte    // from gatherPool; nil if nothing is gathered
	// closing: the close handshake has begun, so no message may follow.
	closing bool
}

// gatherPool holds the buffers of batches, so that a connection holds none
// between them.
var gatherPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// Write is the websocket library's: its handshake answer, before any
// message, and then only control frames, each whole in one call (see
// writeBufferSize).
func (c *socket) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.batches == 0 {
		return c.send(p)
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

// errClosing refuses a message written after the close handshake began.
var errClosing = errors.New("live: the websocket is closing")

// writeText writes one text message, the parts' bytes, as one unmasked
// final frame (RFC 6455, section 5.2): gathered if a batch is open, until
// the batch holds maxFrames whole frames or maxBatchBytes; else at once, in
// one syscall.
func (c *socket) writeText(parts ...[]byte) error {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return errClosing
	}
	if c.gathered == nil {
		c.gathered = gatherPool.Get().(*[]byte)
	}
	b := appendTextHeader(*c.gathered, n)
	for _, p := range parts {
		b = append(b, p...)
	}
	*c.gathered = b
	c.frames++
	if c.batches > 0 && c.frames < c.maxFrames && len(b) < maxBatchBytes {
		return nil
	}
	return c.flush()
}

// appendTextHeader appends the header of a final, unmasked text frame of n
// bytes: the opcode, then the length in 7 bits, or 126 and 16 bits, or 127
// and 64 bits.
func appendTextHeader(b []byte, n int) []byte {
	const finText = 0x80 | 0x1
	switch {
	case n < 126:
		return append(b, finText, byte(n))
	case n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(b, finText, 126), uint16(n))
	default:
		return binary.BigEndian.AppendUint64(append(b, finText, 127), uint64(n))
	}
}

// endMessages refuses any message after it: the close frame the library
// writes next must be the last frame. Messages gathered before it go out
// before that frame, which is gathered after them.
func (c *socket) endMessages() {
	c.mu.Lock()
	c.closing = true
	c.mu.Unlock()
}

// flush writes what was gathered, in one write; c.mu is held.
func (c *socket) flush() error {
	c.frames = 0
	if c.gathered == nil {
		return nil
	}
	_, err := c.send(*c.gathered)
	*c.gathered = (*c.gathered)[:0]
	if cap(*c.gathered) <= 64<<10 { // a large frame's buffer is not kept
		gatherPool.Put(c.gathered)
	}
	c.gathered = nil
	return err
}

// buffered reports whether bytes the client sent wait in the library's
// buffer or in pending. Only while the library is not reading: its close
// handshake reads on another goroutine (conn.awaitInput orders the two).
func (c *socket) buffered() bool {
	return len(c.pending) > 0 || c.reader.Buffered() > 0
}

// awaitInput returns once the socket has bytes to read, or has ended (an
// error is the library's next read's to report). It lets the reader wait
// without the library's read on its stack.
func (c *socket) awaitInput() {
	if c.raw != nil {
		_ = c.raw.Read(c.peekFn)
	}
}

// send writes p to the connection, timed for the watchdog; c.mu is held.
func (c *socket) send(p []byte) (int, error) {
	c.writing.Store(time.Now().UnixNano())
	n, err := c.Conn.Write(p)
	c.writing.Store(0)
	return n, err
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
