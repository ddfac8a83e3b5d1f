package live

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// socketPair returns a socket on a loopback TCP connection, detached as
// the transport does, with limits, and the raw client end.
func socketPair(t *testing.T, limits socketLimits) (*socket, net.Conn) {
	t.Helper()
	server, client := tcpPair(t)
	s := newSocket(detached(server), nil, &limits)
	t.Cleanup(func() { s.conn.Close() })
	_ = client.SetDeadline(time.Now().Add(10 * time.Second))
	return s, client
}

// tcpPair returns both ends of a loopback TCP connection, closed when the
// test ends.
func tcpPair(t *testing.T) (server, client net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return server, client
}

// clientFrame is a frame as a client sends it: masked, unless unmasked.
func clientFrame(fin bool, op byte, payload []byte) []byte {
	first := op
	if fin {
		first |= 0x80
	}
	b := appendHeader(nil, 0, len(payload)) // the length's encoding
	b[0] = first
	b[1] |= 0x80 // masked
	mask := [4]byte{0x37, 0xfa, 0x21, 0x3d}
	b = append(b, mask[:]...)
	start := len(b)
	b = append(b, payload...)
	unmask(b[start:], mask) // masking is the same XOR
	return b
}

// closePayload is a close frame's payload: code and reason.
func closePayload(code uint16, reason string) []byte {
	return append(binary.BigEndian.AppendUint16(nil, code), reason...)
}

// serverFrame reads one frame the server sent: its first byte (final bit
// and opcode) and payload. The server's frames are never masked.
func serverFrame(t *testing.T, r *bufio.Reader) (first byte, payload []byte) {
	t.Helper()
	var h [2]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		t.Fatalf("reading a frame from the server: %v", err)
	}
	if h[1]&0x80 != 0 {
		t.Fatal("the server masked a frame")
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126, 127:
		ext := make([]byte, map[uint64]int{126: 2, 127: 8}[n])
		if _, err := io.ReadFull(r, ext); err != nil {
			t.Fatal(err)
		}
		n = 0
		for _, x := range ext {
			n = n<<8 | uint64(x)
		}
	}
	payload = make([]byte, n)
	if _, err := io.ReadFull(r, payload); err != nil {
		t.Fatal(err)
	}
	return h[0], payload
}

var testLimits = socketLimits{maxFrames: defaultBatchFrames, readLimit: 1 << 20, closeTimeout: 5 * time.Second}

// A client's messages are read whole, from one frame or several, with
// control frames between the fragments; pings are answered with their
// payload; the bytes the client sent with its handshake come first; and a
// client's close frame is echoed, after which the connection closes.
func TestClientMessagesRead(t *testing.T) {
	s, client := socketPair(t, testLimits)
	s.pending = clientFrame(true, opText, []byte("with the handshake"))
	large := bytes.Repeat([]byte("é"), 35000) // 70,000 bytes: a 64-bit length
	var sent []byte
	for _, f := range [][]byte{
		clientFrame(true, opText, []byte("hello")),
		clientFrame(true, opPing, []byte("p1")),
		clientFrame(false, opText, []byte("frag")),
		clientFrame(true, opPing, []byte("p2")),
		clientFrame(false, opContinuation, []byte("men")),
		clientFrame(true, opPong, []byte("unsolicited")),
		clientFrame(true, opContinuation, []byte("ted")),
		clientFrame(true, opBinary, []byte{0, 1, 2}),
		clientFrame(true, opText, nil),
		clientFrame(true, opText, large),
		clientFrame(true, opClose, closePayload(4000, "bye")),
	} {
		sent = append(sent, f...)
	}
	go func() { _, _ = client.Write(sent) }()
	for i, want := range []struct {
		data string
		text bool
	}{{"with the handshake", true}, {"hello", true}, {"fragmented", true}, {"\x00\x01\x02", false}, {"", true}, {string(large), true}} {
		data, text, err := s.readMessage()
		if err != nil || string(data) != want.data || text != want.text {
			t.Fatalf("message %d: got %d bytes %.20q (text %v), %v; want %.20q (text %v)", i, len(data), data, text, err, want.data, want.text)
		}
	}
	if _, _, err := s.readMessage(); !errors.Is(err, errClosed) {
		t.Fatalf("after the client's close: %v, want errClosed", err)
	}
	r := bufio.NewReader(client)
	for _, want := range []struct {
		first   byte
		payload string
	}{{0x80 | opPong, "p1"}, {0x80 | opPong, "p2"}, {0x80 | opClose, string(closePayload(4000, ""))}} {
		if first, payload := serverFrame(t, r); first != want.first || string(payload) != want.payload {
			t.Fatalf("got frame %#x %q, want %#x %q", first, payload, want.first, want.payload)
		}
	}
	if _, err := r.ReadByte(); err != io.EOF {
		t.Fatalf("after the close frames: %v, want the connection closed", err)
	}
}

// A client that breaks the protocol gets a close frame with the code that
// says why (RFC 6455, 7.4.1), and the connection closes after its close
// frame; nothing it sent after the fault is read as a message.
func TestClientFaultsClose(t *testing.T) {
	limits := testLimits
	limits.readLimit = 100
	limits.closeTimeout = 200 * time.Millisecond // a frame of 2^63 bytes is skipped until then
	unmasked := []byte{0x80 | opText, 2, 'h', 'i'}
	reserved := clientFrame(true, opText, []byte("hi"))
	reserved[0] |= 0x40
	for _, c := range []struct {
		name   string
		frames [][]byte
		code   closeCode
	}{
		{"unmasked", [][]byte{unmasked}, closeProtocolError},
		{"reserved bit", [][]byte{reserved}, closeProtocolError},
		{"unknown data opcode", [][]byte{clientFrame(true, 0x3, []byte("x"))}, closeProtocolError},
		{"length's top bit set", [][]byte{{0x80 | opText, 0x80 | 127, 0x80, 0, 0, 0, 0, 0, 0, 1, 1, 2, 3, 4}}, closeProtocolError},
		{"unknown control opcode", [][]byte{clientFrame(true, 0xb, nil)}, closeProtocolError},
		{"fragmented ping", [][]byte{clientFrame(false, opPing, nil)}, closeProtocolError},
		{"long ping", [][]byte{clientFrame(true, opPing, make([]byte, 126))}, closeProtocolError},
		{"continuation first", [][]byte{clientFrame(true, opContinuation, []byte("x"))}, closeProtocolError},
		{"message in a message", [][]byte{clientFrame(false, opText, []byte("a")), clientFrame(true, opText, []byte("b"))}, closeProtocolError},
		{"over the limit", [][]byte{clientFrame(true, opText, make([]byte, 101))}, closeMessageTooBig},
		{"over the limit in fragments", [][]byte{clientFrame(false, opText, make([]byte, 60)), clientFrame(true, opContinuation, make([]byte, 41))}, closeMessageTooBig},
		{"text not UTF-8", [][]byte{clientFrame(false, opText, []byte{'a', 0xe2}), clientFrame(true, opContinuation, []byte{0x28, 0xa1})}, closeInvalidPayload},
		{"close of one byte", [][]byte{clientFrame(true, opClose, []byte{3})}, closeProtocolError},
		{"close code not to be sent", [][]byte{clientFrame(true, opClose, closePayload(1005, ""))}, closeProtocolError},
		{"close code out of range", [][]byte{clientFrame(true, opClose, closePayload(999, ""))}, closeProtocolError},
		{"close reason not UTF-8", [][]byte{clientFrame(true, opClose, closePayload(1000, "\xff"))}, closeInvalidPayload},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, client := socketPair(t, limits)
			after := clientFrame(true, opText, []byte("after the fault"))
			go func() { _, _ = client.Write(append(bytes.Join(c.frames, nil), after...)) }()
			read := make(chan error, 1)
			go func() {
				data, _, err := s.readMessage()
				if err == nil {
					err = errors.New("read " + string(data))
				}
				read <- err
			}()
			r := bufio.NewReader(client)
			first, payload := serverFrame(t, r)
			if first != 0x80|opClose || len(payload) < 2 || closeCode(binary.BigEndian.Uint16(payload)) != c.code {
				t.Fatalf("got frame %#x %q, want a close with %d", first, payload, c.code)
			}
			_, _ = client.Write(clientFrame(true, opClose, payload[:2]))
			if err := <-read; !errors.Is(err, errClosed) {
				t.Fatalf("the read: %v, want errClosed", err)
			}
			if rest, err := io.ReadAll(r); len(rest) != 0 {
				t.Fatalf("after the close frame: %q, %v", rest, err)
			}
		})
	}
}

// A close the server begins refuses messages after its close frame, reads
// no message after it, and ends once the client answers, or once the close
// timeout passes if it does not.
func TestServerCloseHandshake(t *testing.T) {
	limits := testLimits
	limits.closeTimeout = 50 * time.Millisecond
	for _, answers := range []bool{true, false} {
		s, client := socketPair(t, limits)
		s.close(closeGoingAway, "shutting down")
		if err := s.writeText([]byte("late")); !errors.Is(err, errClosing) {
			t.Fatalf("a message after the close frame: %v, want refused", err)
		}
		r := bufio.NewReader(client)
		if first, payload := serverFrame(t, r); first != 0x80|opClose || string(payload) != string(closePayload(1001, "shutting down")) {
			t.Fatalf("got frame %#x %q, want the close", first, payload)
		}
		_, _ = client.Write(clientFrame(true, opText, []byte("crossed the close")))
		if answers {
			_, _ = client.Write(clientFrame(true, opClose, closePayload(1001, "")))
		}
		s.awaitClose()
		if rest, err := io.ReadAll(r); len(rest) != 0 || err != nil {
			t.Fatalf("answered %v: after the close frame: %q, %v; want the connection closed", answers, rest, err)
		}
	}
}

// The read buffer is borrowed only while there is something to read: an
// idle connection holds none, a connection whose client sent two messages
// at once keeps it between them.
func TestReadBufferBorrowed(t *testing.T) {
	s, client := socketPair(t, testLimits)
	if _, err := client.Write(append(clientFrame(true, opText, []byte("one")), clientFrame(true, opText, []byte("two"))...)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"one", "two"} {
		s.awaitInput() // at once when buffered
		data, _, err := s.readMessage()
		if err != nil || string(data) != want {
			t.Fatalf("got %q, %v; want %q", data, err, want)
		}
		if idle := want == "two"; s.buffered() == idle {
			t.Fatalf("after %q: buffered %v", want, s.buffered())
		}
	}
	if s.reader != nil {
		t.Fatal("an idle socket holds a read buffer")
	}
}

// A message's buffer grows with the bytes that arrive, not with the length
// its header announces: a client that announces a megabyte and sends ten
// bytes costs a piece of the buffer, not a megabyte.
func TestPayloadGrowsAsItArrives(t *testing.T) {
	msg, err := readPayload(io.LimitReader(bytes.NewReader(make([]byte, 1<<20)), 10), nil, 1<<20)
	if err == nil || cap(msg) > 2*payloadPiece {
		t.Fatalf("got %v and a buffer of %d bytes, want an error and at most %d", err, cap(msg), 2*payloadPiece)
	}
	long := bytes.Repeat([]byte("0123456789"), 7000)
	msg, err = readPayload(bytes.NewReader(long), []byte("head:"), len(long))
	if err != nil || string(msg) != "head:"+string(long) {
		t.Fatalf("got %d bytes, %v; want the head and the %d bytes read", len(msg), err, len(long))
	}
}

// FuzzClientFrames: whatever bytes a client sends, the reader returns only
// messages within the read limit, answers or closes, and ends once the
// client has gone; it never panics or hangs.
func FuzzClientFrames(f *testing.F) {
	f.Add(clientFrame(true, opText, []byte(`{"type":"ping"}`)))
	f.Add(append(clientFrame(false, opText, []byte("frag")), clientFrame(true, opContinuation, []byte("ment"))...))
	f.Add(append(clientFrame(true, opPing, []byte("p")), clientFrame(true, opClose, closePayload(1000, "bye"))...))
	f.Add(clientFrame(true, opText, make([]byte, 100)))
	f.Add([]byte{0x81, 2, '{', '}'})
	f.Add([]byte{0x81, 0xff, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4})
	f.Add(clientFrame(true, opText, []byte{0xff, 0xfe}))
	f.Fuzz(func(t *testing.T, in []byte) {
		const limit = 64
		client, server := net.Pipe()
		defer client.Close()
		s := newSocket(server, nil, &socketLimits{maxFrames: 1, readLimit: limit, closeTimeout: 50 * time.Millisecond})
		go func() { _, _ = io.Copy(io.Discard, client) }() // the server's frames
		go func() { _, _ = client.Write(in); _ = client.Close() }()
		for {
			msg, _, err := s.readMessage()
			if err != nil {
				return
			}
			if len(msg) > limit {
				t.Fatalf("a message of %d bytes passed a limit of %d", len(msg), limit)
			}
		}
	})
}
