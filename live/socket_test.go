package live

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
)

// testSocket is a socket over conn whose batches hold maxFrames frames.
func testSocket(conn net.Conn, maxFrames int) *socket {
	return newSocket(conn, nil, &socketLimits{maxFrames: maxFrames, readLimit: 1 << 20, closeTimeout: 5 * time.Second})
}

// Bytes net/http had buffered past the handshake are read before the socket.
func TestSocketReadsPendingFirst(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	c := testSocket(server, 1)
	c.pending = []byte("pipelined ")
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

// countingConn counts the writes that reach it.
type countingConn struct {
	net.Conn
	mu     sync.Mutex
	writes int
	got    []byte
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes++
	c.got = append(c.got, p...)
	return len(p), nil
}

// A batch's frames reach the connection in one write when it closes;
// without a batch, each frame goes straight through.
func TestSocketBatchWritesOnce(t *testing.T) {
	conn := &countingConn{}
	s := testSocket(conn, 100)
	text := func(m string) {
		if err := s.writeText([]byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	text("a")
	s.openBatch()
	for _, m := range []string{"b", "c", "d"} {
		text(m)
	}
	if conn.writes != 1 {
		t.Fatalf("%d writes reached the connection while the batch was open, want 1", conn.writes)
	}
	if err := s.closeBatch(); err != nil {
		t.Fatal(err)
	}
	text("e")
	if want := framed("a", "b", "c", "d", "e"); conn.writes != 3 || string(conn.got) != want {
		t.Fatalf("%d writes of %q, want 3 of %q", conn.writes, conn.got, want)
	}
	s.openBatch()
	if err := s.closeBatch(); err != nil || conn.writes != 3 {
		t.Fatalf("an empty batch wrote (%d writes, %v)", conn.writes, err)
	}
	// Nested batches write when the outer one closes.
	s.openBatch()
	text("f")
	s.openBatch()
	text("g")
	if err := s.closeBatch(); err != nil || conn.writes != 3 {
		t.Fatalf("an inner batch wrote (%d writes, %v)", conn.writes, err)
	}
	if want := framed("a", "b", "c", "d", "e", "f", "g"); s.closeBatch() != nil || conn.writes != 4 || string(conn.got) != want {
		t.Fatalf("%d writes of %q, want 4 of %q", conn.writes, conn.got, want)
	}
}

// Batches of several goroutines, opening and closing as they go, and
// frames outside any, reach the connection in the order they were made.
func TestSocketBatchesKeepWriteOrder(t *testing.T) {
	conn := &countingConn{}
	s := testSocket(conn, defaultBatchFrames)
	var order sync.Mutex // makes "the order they were made" observable
	var made []string
	write := func(b byte) {
		order.Lock()
		defer order.Unlock()
		made = append(made, string(b))
		if err := s.writeText([]byte{b}); err != nil {
			t.Error(err)
		}
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				batched := (g+i)%3 != 0
				if batched {
					s.openBatch()
				}
				for k := range 3 {
					write(byte('a' + (g*3+k)%26))
				}
				if batched {
					if err := s.closeBatch(); err != nil {
						t.Error(err)
					}
				}
			}
		}()
	}
	wg.Wait()
	if string(conn.got) != framed(made...) {
		t.Fatalf("the connection got %d bytes in another order than the %d frames written", len(conn.got), len(made))
	}
	if conn.writes >= len(made) {
		t.Fatalf("%d writes for %d frames: nothing was batched", conn.writes, len(made))
	}
}

// framed is what writeText sends for each of texts.
func framed(texts ...string) string {
	var b []byte
	for _, text := range texts {
		b = append(appendHeader(b, opText, len(text)), text...)
	}
	return string(b)
}

// A batch is written once it gathers maxFrames whole frames or
// maxBatchBytes, so a long run of queued events is not held back whole; the
// rest goes when the batch closes.
func TestSocketBatchBounds(t *testing.T) {
	conn := &countingConn{}
	s := testSocket(conn, 4)
	frame := func(b string) {
		if err := s.writeText([]byte(b[:1]), []byte(b[1:])); err != nil {
			t.Fatal(err)
		}
	}
	frame("a1") // outside a batch: at once
	if conn.writes != 1 || string(conn.got) != framed("a1") {
		t.Fatalf("a lone frame made %d writes of %q, want 1 of %q", conn.writes, conn.got, framed("a1"))
	}
	s.openBatch()
	for _, f := range []string{"b1", "b2", "b3", "b4", "b5", "b6"} {
		frame(f)
	}
	if want := framed("a1", "b1", "b2", "b3", "b4"); conn.writes != 2 || string(conn.got) != want {
		t.Fatalf("after 6 frames in a batch of at most 4: %d writes of %q, want 2 of %q", conn.writes, conn.got, want)
	}
	if want := framed("a1", "b1", "b2", "b3", "b4", "b5", "b6"); s.closeBatch() != nil || conn.writes != 3 || string(conn.got) != want {
		t.Fatalf("closing the batch: %d writes of %q, want 3 of %q", conn.writes, conn.got, want)
	}
	// The byte bound: two frames of half of it fill a batch.
	half := strings.Repeat("x", maxBatchBytes/2)
	s.openBatch()
	frame("c" + half)
	if conn.writes != 3 {
		t.Fatalf("a frame under the byte bound was written (%d writes)", conn.writes)
	}
	frame("d" + half)
	if conn.writes != 4 {
		t.Fatalf("a batch past the byte bound was not written (%d writes)", conn.writes)
	}
	if err := s.closeBatch(); err != nil || conn.writes != 4 {
		t.Fatalf("an emptied batch wrote again (%d writes, %v)", conn.writes, err)
	}
	// One frame a write: every frame goes on its own, batch or not.
	one := &countingConn{}
	s = testSocket(one, 1)
	s.openBatch()
	for range 3 {
		_ = s.writeText([]byte("e"))
	}
	_ = s.closeBatch()
	if one.writes != 3 {
		t.Fatalf("with one frame a write: %d writes of 3 frames", one.writes)
	}
}

// The frames writeText makes are read by a websocket client as the messages
// written, at every length encoding (7, 16 and 64 bits), gathered or not,
// with control frames (a pong, the close) among them; and the close frame
// is the last: what was gathered before goes out before it, and a message
// after it is refused.
func TestTextFramesReadByClient(t *testing.T) {
	sizes := []int{0, 1, 125, 126, 127, 0xffff, 0x10000, 70000}
	texts := make([]string, len(sizes))
	for i, n := range sizes {
		texts[i] = strings.Repeat(string(rune('a'+i)), n)
	}
	afterClose := make(chan error, 1)
	tr := &Transport{cfg: Config{Log: slog.Default()}, limits: socketLimits{maxFrames: 3, readLimit: 1 << 10, closeTimeout: 5 * time.Second}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, _ := tr.upgrade(w, r)
		if s == nil {
			return
		}
		for i, text := range texts[:4] { // one at a time
			if err := s.writeText([]byte(text[:i/2]), []byte(text[i/2:])); err != nil {
				t.Error(err)
			}
		}
		s.openBatch()
		for _, text := range texts[4:] { // gathered, past maxFrames
			if err := s.writeText([]byte(text)); err != nil {
				t.Error(err)
			}
		}
		if err := s.control(opPong, []byte("unsolicited")); err != nil { // a control frame in the batch
			t.Error(err)
		}
		s.openBatch() // a message gathered when the close begins
		if err := s.writeText([]byte("last")); err != nil {
			t.Error(err)
		}
		s.close(closeNormal, "done") // gathered after "last"
		afterClose <- s.writeText([]byte("too late"))
		_ = s.closeBatch()
		_ = s.closeBatch()
		s.awaitClose() // the client's close frame
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	c.SetReadLimit(1 << 20)
	for i, want := range append(texts, "last") {
		typ, got, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("message %d (%d bytes): %v", i, len(want), err)
		}
		if typ != websocket.MessageText || string(got) != want {
			t.Fatalf("message %d: got %v of %d bytes, want text of %d", i, typ, len(got), len(want))
		}
	}
	if _, _, err := c.Read(ctx); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Fatalf("after the messages: %v, want the close frame", err)
	}
	if err := <-afterClose; !errors.Is(err, errClosing) {
		t.Fatalf("a message after the close began: %v, want refused", err)
	}
}

// A frame's length takes the fewest bytes that hold it (RFC 6455, 5.2).
func TestTextHeaderLengths(t *testing.T) {
	for _, c := range []struct {
		n    int
		want []byte
	}{
		{0, []byte{0x81, 0}},
		{125, []byte{0x81, 125}},
		{126, []byte{0x81, 126, 0, 126}},
		{0xffff, []byte{0x81, 126, 0xff, 0xff}},
		{0x10000, []byte{0x81, 127, 0, 0, 0, 0, 0, 1, 0, 0}},
	} {
		if got := appendHeader(nil, opText, c.n); string(got) != string(c.want) {
			t.Errorf("header of %d bytes: % x, want % x", c.n, got, c.want)
		}
	}
}

// holdingConn holds what is written to it while hold is set, and writes it
// all in one write when released.
type holdingConn struct {
	net.Conn
	mu   sync.Mutex
	hold bool
	held []byte
}

func (c *holdingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.hold {
		c.held = append(c.held, p...)
		return len(p), nil
	}
	return c.Conn.Write(p)
}

func (c *holdingConn) release() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hold = false
	_, err := c.Conn.Write(c.held)
	return err
}

// Messages that arrive together, read into the library's buffer at once,
// are each handled without waiting for more from the client: the reader
// waits on the socket only when nothing is buffered.
func TestMessagesArrivingTogether(t *testing.T) {
	h := newHarness(t, nil)
	alice := h.user("alice")
	var held *holdingConn
	transport := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		held = &holdingConn{Conn: conn}
		return held, nil
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(h.url, "http"), &websocket.DialOptions{
		Subprotocols: []string{graphqlTransportWS.name}, HTTPClient: &http.Client{Transport: transport},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	c := &client{t: t, ws: ws}
	held.mu.Lock()
	held.hold = true
	held.mu.Unlock()
	c.send(message{Type: msgConnectionInit, Payload: mustJSON(map[string]any{"token": alice})})
	for _, id := range []string{"1", "2", "3"} {
		c.send(message{Type: msgPing, Payload: mustJSON(map[string]any{"n": id})})
	}
	if err := held.release(); err != nil {
		t.Fatal(err)
	}
	if m := c.read(); m.Type != msgConnectionAck {
		t.Fatalf("got %+v, want connection_ack", m)
	}
	for _, id := range []string{"1", "2", "3"} {
		if m := c.read(); m.Type != msgPong || !strings.Contains(string(m.Payload), id) {
			t.Fatalf("got %+v %s, want pong %s", m, m.Payload, id)
		}
	}
}

// A long close reason is cut to fit a control frame between characters, so
// that it stays UTF-8.
func TestTruncateReason(t *testing.T) {
	for _, s := range []string{strings.Repeat("é", 100), strings.Repeat("a", 119) + strings.Repeat("€", 20), "short"} {
		got := truncateReason(s)
		if len(got) > 123 || !utf8.ValidString(got) || !strings.HasPrefix(s, strings.TrimSuffix(got, "...")) {
			t.Errorf("truncateReason(%d bytes) = %q (%d bytes)", len(s), got, len(got))
		}
	}
}

// TestDetachedKeepsTheSocket: a TCP connection detached into a file still
// carries both ways, honours deadlines, and ends the socket when the file
// is closed; closing the connection it came from did not.
func TestDetachedKeepsTheSocket(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("a socket becomes a file on Linux only (detach_linux.go)")
	}
	accepted, client := tcpPair(t)
	w := detached(accepted)
	if _, ok := w.(*os.File); !ok {
		t.Fatalf("a TCP connection was not detached: %T", w)
	}
	if _, err := accepted.Write([]byte("x")); err == nil {
		t.Error("the connection it came from still writes")
	}
	if _, err := w.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 4)
	if _, err := io.ReadFull(client, got); err != nil || string(got) != "ping" {
		t.Fatalf("client read %q, %v", got, err)
	}
	if _, err := client.Write([]byte("pong")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(w, got); err != nil || string(got) != "pong" {
		t.Fatalf("server read %q, %v", got, err)
	}
	if err := w.SetReadDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Read(got); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a read past its deadline returned %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if n, err := client.Read(got); err != io.EOF {
		t.Fatalf("after the file closed the client read %d bytes, %v; want EOF", n, err)
	}
	pipe, other := net.Pipe()
	defer other.Close()
	if detached(pipe) != pipe {
		t.Error("a connection without a descriptor was not kept as it is")
	}
}
