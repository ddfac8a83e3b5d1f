package live

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"
)

// Buffer sizes of a websocket connection. net/http hijacks with 4 KiB each
// way, which an idle chat subscriber never uses. Clients send little
// (subscribe, ping, complete): a connection borrows a read buffer of
// readBufferSize from readers while it reads, and reads longer messages
// through it. The server's frames go straight into the connection's batch
// (writeText, control), which holds no buffer between batches.
const readBufferSize = 256

// readers lends connections their read buffer (see socket.borrowReader).
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, readBufferSize) }}

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

// socketLimits are the bounds of a transport's sockets.
type socketLimits struct {
	// maxFrames is how many whole frames a batch gathers before it is
	// written (Config.MaxFramesPerWrite); 1 writes every frame on its own.
	maxFrames int
	// readLimit caps a client's message (Config.ReadLimit).
	readLimit int64
	// closeTimeout bounds a close handshake the server begins: writing its
	// close frame, and waiting for the client's (Config.CloseTimeout).
	closeTimeout time.Duration
}

// Opcodes (RFC 6455, section 5.2).
const (
	opContinuation = 0x0
	opText         = 0x1
	opBinary       = 0x2
	opClose        = 0x8
	opPing         = 0x9
	opPong         = 0xa
)

// socket is a websocket connection (RFC 6455), after the handshake
// (upgrade). One goroutine, the connection's reader, reads it
// (readMessage); it answers the client's pings and close itself. Any
// goroutine writes: the server frames its messages itself (writeText), and
// while a batch is open, it gathers them, and its control frames, and writes
// them in one go when the batch closes or reaches its bounds: a connection's
// queued events go out in one syscall instead of one each. Only what is
// already queued is gathered: a lone event is written at once.
type socket struct {
	conn wire
	// The reader's: pending are the bytes the client sent that net/http
	// had buffered past the handshake, read before the socket; reader the
	// read buffer, borrowed while there is something to read; peeked where
	// awaitInput peeks at the next byte.
	pending []byte
	reader  *bufio.Reader
	peeked  [1]byte
	// closing (the writer's, under mu): a close frame was sent or
	// answered, so no frame may follow. (Beside peeked, it keeps the
	// socket a size class smaller.)
	closing bool
	limits  *socketLimits
	// writing is when the syscall under way started (Unix ns), 0 if none:
	// the transport's watchdog aborts a connection whose client stopped
	// reading.
	writing atomic.Int64

	mu       sync.Mutex // orders the writes, gathered or not
	batches  int32      // open batches
	frames   int32      // whole frames gathered
	gathered *[]byte    // from gatherPool; nil if nothing is gathered
}

// wire is what a socket uses of its connection: a net.Conn, or the file a
// TCP connection becomes (detached).
type wire interface {
	io.ReadWriteCloser
	SetDeadline(t time.Time) error
	SetReadDeadline(t time.Time) error
}

// newSocket returns the socket of conn, a connection just upgraded, whose
// client sent pending after its handshake.
func newSocket(conn wire, pending []byte, limits *socketLimits) *socket {
	return &socket{conn: conn, pending: pending, limits: limits}
}

// raw returns the connection's file descriptor, to wait for input on
// (awaitInput, the poller); nil where there is none. It is made at each
// call, which is once per client message: a connection holds nothing for
// it while idle.
func (c *socket) raw() syscall.RawConn {
	sc, ok := c.conn.(syscall.Conn)
	if !ok || !canPeek {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return raw
}

// gatherPool holds the buffers of batches, so that a connection holds none
// between them.
var gatherPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// openBatch makes writes gather until closeBatch.
func (c *socket) openBatch() {
	c.mu.Lock()
	c.batches++
	c.mu.Unlock()
}

// closeBatch closes a batch; the last open one writes what was gathered.
func (c *socket) closeBatch() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.batches--; c.batches > 0 {
		return nil
	}
	return c.flush()
}

// errClosing refuses a frame written after the close handshake began.
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
	b := appendHeader(c.gather(), opText, n)
	for _, p := range parts {
		b = append(b, p...)
	}
	return c.keepFrame(b)
}

// control writes a control frame (a pong, a close) like a message, and if
// op is opClose, refuses every frame after it.
func (c *socket) control(op byte, payload []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return errClosing
	}
	c.closing = op == opClose
	return c.keepFrame(append(appendHeader(c.gather(), op, len(payload)), payload...))
}

// gather returns the batch's buffer; c.mu is held.
func (c *socket) gather() []byte {
	if c.gathered == nil {
		c.gathered = gatherPool.Get().(*[]byte)
	}
	return *c.gathered
}

// keepFrame keeps b, the batch's buffer with one more frame in it, and writes it
// unless the open batch may gather more; c.mu is held.
func (c *socket) keepFrame(b []byte) error {
	*c.gathered = b
	c.frames++
	if c.batches > 0 && int(c.frames) < c.limits.maxFrames && len(b) < maxBatchBytes {
		return nil
	}
	return c.flush()
}

// appendHeader appends the header of a final, unmasked frame of op with n
// bytes: the opcode, then the length in 7 bits, or 126 and 16 bits, or 127
// and 64 bits.
func appendHeader(b []byte, op byte, n int) []byte {
	first := 0x80 | op
	switch {
	case n < 126:
		return append(b, first, byte(n))
	case n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(b, first, 126), uint16(n))
	default:
		return binary.BigEndian.AppendUint64(append(b, first, 127), uint64(n))
	}
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

// send writes p to the connection, timed for the watchdog; c.mu is held.
func (c *socket) send(p []byte) (int, error) {
	c.writing.Store(time.Now().UnixNano())
	n, err := c.conn.Write(p)
	c.writing.Store(0)
	return n, err
}

// close begins the close handshake: a close frame with code and reason
// (truncated to 123 bytes), after what was gathered; every frame after it is
// refused. The client's close frame ends the connection, read by the
// reader; the close timeout bounds the wait for it, and the write of the
// frame.
// Once only: a later close, or one after the client's close, does nothing.
func (c *socket) close(code closeCode, reason string) {
	if c.conn.SetDeadline(time.Now().Add(c.limits.closeTimeout)) != nil {
		return // already closed
	}
	var payload [125]byte
	binary.BigEndian.PutUint16(payload[:], uint16(code))
	n := 2 + copy(payload[2:], truncateReason(reason))
	if err := c.control(opClose, payload[:n]); err != nil && !errors.Is(err, errClosing) {
		c.hangUp()
	}
}

// hangUp closes the connection without a close handshake. Safe while a
// write blocks: it makes the write fail.
func (c *socket) hangUp() { _ = c.conn.Close() }

// buffered reports whether bytes the client sent wait to be read: in the
// read buffer, which the reader holds only while it has some, or in pending.
func (c *socket) buffered() bool {
	return len(c.pending) > 0 || c.reader != nil
}

// awaitInput returns once the client has sent something not yet read (at
// once if bytes are buffered), or the socket has ended (an error is the
// next read's to report), without the read's frames on the stack.
func (c *socket) awaitInput() {
	if c.buffered() {
		return
	}
	if raw := c.raw(); raw != nil {
		_ = raw.Read(c.peek)
	}
}

// Read reads pending, then the connection: the read buffer's source.
func (c *socket) Read(p []byte) (int, error) {
	if len(c.pending) > 0 {
		n := copy(p, c.pending)
		c.pending = c.pending[n:]
		if len(c.pending) == 0 {
			c.pending = nil
		}
		return n, nil
	}
	return c.conn.Read(p)
}

// borrowReader makes c.reader a read buffer of the socket.
func (c *socket) borrowReader() *bufio.Reader {
	if c.reader == nil {
		c.reader = readers.Get().(*bufio.Reader)
		c.reader.Reset(c)
	}
	return c.reader
}

// returnReader gives the read buffer back if it holds nothing.
func (c *socket) returnReader() {
	if c.reader != nil && c.reader.Buffered() == 0 {
		c.reader.Reset(nil)
		readers.Put(c.reader)
		c.reader = nil
	}
}

// errClosed ends the reading of a socket whose close handshake is done or
// failed, or that ended without one.
var errClosed = errors.New("live: the websocket is closed")

// A frameHeader is the start of a client's frame.
type frameHeader struct {
	fin    bool
	rsv    byte // the reserved bits: no extension is agreed, so none is set
	op     byte
	masked bool
	length uint64
	mask   [4]byte
}

// violation is what breaks the protocol in h, "" if nothing: reading a
// message if inMessage (a fragment of it came).
func (h *frameHeader) violation(inMessage bool) string {
	switch {
	case h.rsv != 0:
		return "reserved bits set, but no extension was agreed"
	case !h.masked:
		return "a client's frame must be masked"
	case h.length >= 1<<63:
		return "frame length with its most significant bit set"
	case h.op >= opClose && h.op <= opPong:
		if !h.fin {
			return "fragmented control frame"
		}
		if h.length > 125 {
			return "control frame longer than 125 bytes"
		}
	case h.op == opContinuation:
		if !inMessage {
			return "continuation frame without a message to continue"
		}
	case h.op == opText || h.op == opBinary:
		if inMessage {
			return "new message before the last one's final frame"
		}
	default:
		return fmt.Sprintf("unknown opcode %#x", h.op)
	}
	return ""
}

// readFrameHeader reads a frame's header: 2 bytes, the extended length, the
// mask.
func readFrameHeader(r *bufio.Reader) (h frameHeader, err error) {
	var b [2]byte
	for i := range b {
		if b[i], err = r.ReadByte(); err != nil {
			return h, err
		}
	}
	h.fin, h.rsv, h.op = b[0]&0x80 != 0, b[0]&0x70, b[0]&0x0f
	h.masked, h.length = b[1]&0x80 != 0, uint64(b[1]&0x7f)
	extended := 0
	switch h.length {
	case 126:
		extended, h.length = 2, 0
	case 127:
		extended, h.length = 8, 0
	}
	for range extended {
		x, err := r.ReadByte()
		if err != nil {
			return h, err
		}
		h.length = h.length<<8 | uint64(x)
	}
	if h.masked {
		for i := range h.mask {
			if h.mask[i], err = r.ReadByte(); err != nil {
				return h, err
			}
		}
	}
	return h, nil
}

// unmask unmasks p, a frame's payload.
func unmask(p []byte, mask [4]byte) {
	for i := range p {
		p[i] ^= mask[i&3]
	}
}

// readMessage reads the client's next message: its bytes, and whether it
// is text (else binary). Between messages' frames it answers pings, and a
// close frame by a close frame. A frame that breaks the protocol, a message
// over the read limit or text that is not UTF-8 begins the close handshake
// with the code that says why. An error means the connection is closed: the
// handshake done (the client's close frame read, or its timeout passed), or
// the connection lost.
func (c *socket) readMessage() ([]byte, bool, error) {
	return c.readFrames(false)
}

// awaitClose reads until the client's close frame, discarding its messages,
// for at most the close timeout, and closes the connection: once the server has
// begun the close handshake.
func (c *socket) awaitClose() {
	_ = c.conn.SetReadDeadline(time.Now().Add(c.limits.closeTimeout))
	_, _, _ = c.readFrames(true)
}

// readFrames reads frames until a whole message (see readMessage), or, if
// discarding, until the connection closes.
func (c *socket) readFrames(discarding bool) (msg []byte, text bool, err error) {
	limit := c.limits.readLimit
	r := c.borrowReader()
	defer c.returnReader()
	inMessage := false
	for {
		h, err := readFrameHeader(r)
		if err != nil {
			c.hangUp()
			return nil, false, errClosed
		}
		if discarding {
			if err := c.skip(r, h.length); err != nil || h.op == opClose {
				c.hangUp()
				return nil, false, errClosed
			}
			continue
		}
		if problem := h.violation(inMessage); problem != "" {
			c.close(closeProtocolError, problem)
			if c.skip(r, h.length) != nil {
				c.hangUp()
				return nil, false, errClosed
			}
			discarding = true
			continue
		}
		if h.op >= opClose {
			if done := c.controlFrame(r, h); done {
				return nil, false, errClosed
			}
			continue
		}
		if h.length > uint64(limit-int64(len(msg))) {
			c.close(closeMessageTooBig, fmt.Sprintf("message longer than %d bytes", limit))
			if c.skip(r, h.length) != nil {
				c.hangUp()
				return nil, false, errClosed
			}
			discarding = true
			continue
		}
		if !inMessage {
			inMessage, text = true, h.op == opText
		}
		start := len(msg)
		if msg, err = readPayload(r, msg, int(h.length)); err != nil {
			c.hangUp()
			return nil, false, errClosed
		}
		unmask(msg[start:], h.mask)
		if !h.fin {
			continue
		}
		if text && !utf8.Valid(msg) {
			c.close(closeInvalidPayload, "text message is not valid UTF-8")
			msg, discarding = nil, true
			continue
		}
		if msg == nil {
			msg = []byte{}
		}
		return msg, text, nil
	}
}

// payloadPiece is the most a frame's payload grows its message by before
// its bytes arrive.
const payloadPiece = 16 << 10

// readPayload appends n bytes of r to msg. It grows msg as the bytes
// arrive, a piece at a time, so that a header announcing a long message
// costs no memory before the message comes: a thousand clients each
// announcing a megabyte and sending nothing more hold no gigabyte.
func readPayload(r io.Reader, msg []byte, n int) ([]byte, error) {
	for n > 0 {
		piece := min(n, payloadPiece)
		start := len(msg)
		msg = slices.Grow(msg, piece)[:start+piece]
		if _, err := io.ReadFull(r, msg[start:]); err != nil {
			return msg, err
		}
		n -= piece
	}
	return msg, nil
}

// controlFrame acts on a control frame of h: it answers a ping, and a
// close frame by one (unless the server's went first) before it closes the
// connection (done).
func (c *socket) controlFrame(r *bufio.Reader, h frameHeader) (done bool) {
	var payload [125]byte
	p := payload[:h.length]
	for i := range p {
		b, err := r.ReadByte()
		if err != nil {
			c.hangUp()
			return true
		}
		p[i] = b ^ h.mask[i&3]
	}
	switch h.op {
	case opPing:
		_ = c.control(opPong, p)
	case opClose:
		if code, fail, problem := closeStatus(p); problem == "" {
			_ = c.control(opClose, code) // the client's code, echoed
		} else {
			c.close(fail, problem)
		}
		c.hangUp()
		return true
	}
	return false
}

// closeStatus checks the payload of a client's close frame, and returns its
// code, to echo (RFC 6455, 5.5.1), none if it has none; or the problem with
// it, and the code to fail with.
func closeStatus(p []byte) (code []byte, fail closeCode, problem string) {
	switch {
	case len(p) == 0:
		return nil, 0, ""
	case len(p) == 1:
		return nil, closeProtocolError, "close frame with a one-byte payload"
	case !utf8.Valid(p[2:]):
		return nil, closeInvalidPayload, "close reason is not valid UTF-8"
	}
	switch n := binary.BigEndian.Uint16(p); {
	case n >= 1000 && n <= 1003, n >= 1007 && n <= 1014, n >= 3000 && n <= 4999:
		return p[:2], 0, ""
	default:
		return nil, closeProtocolError, fmt.Sprintf("close code %d may not be sent", n)
	}
}

// skip discards n bytes of the connection.
func (c *socket) skip(r *bufio.Reader, n uint64) error {
	for n > 0 {
		k := int(min(n, 1<<30))
		if _, err := r.Discard(k); err != nil {
			return err
		}
		n -= uint64(k)
	}
	return nil
}
