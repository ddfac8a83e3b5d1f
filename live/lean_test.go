package live

import (
	"io"
	"net"
	"strings"
	"sync"
	"testing"
)

// Bytes net/http had buffered past the handshake are read before the socket.
func TestSocketReadsPendingFirst(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	c := &socket{Conn: server, pending: []byte("pipelined ")}
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

// A batch's writes reach the connection in one write when it closes;
// without a batch, each write goes straight through.
func TestSocketBatchWritesOnce(t *testing.T) {
	conn := &countingConn{}
	s := &socket{Conn: conn}
	_, _ = s.Write([]byte("a"))
	s.openBatch()
	for _, w := range []string{"b", "c", "d"} {
		_, _ = s.Write([]byte(w))
	}
	if conn.writes != 1 {
		t.Fatalf("%d writes reached the connection while the batch was open, want 1", conn.writes)
	}
	if err := s.closeBatch(); err != nil {
		t.Fatal(err)
	}
	_, _ = s.Write([]byte("e"))
	if conn.writes != 3 || string(conn.got) != "abcde" {
		t.Fatalf("%d writes of %q, want 3 of %q", conn.writes, conn.got, "abcde")
	}
	s.openBatch()
	if err := s.closeBatch(); err != nil || conn.writes != 3 {
		t.Fatalf("an empty batch wrote (%d writes, %v)", conn.writes, err)
	}
	// Nested batches write when the outer one closes.
	s.openBatch()
	_, _ = s.Write([]byte("f"))
	s.openBatch()
	_, _ = s.Write([]byte("g"))
	if err := s.closeBatch(); err != nil || conn.writes != 3 {
		t.Fatalf("an inner batch wrote (%d writes, %v)", conn.writes, err)
	}
	if err := s.closeBatch(); err != nil || conn.writes != 4 || string(conn.got) != "abcdefg" {
		t.Fatalf("%d writes of %q, want 4 of %q", conn.writes, conn.got, "abcdefg")
	}
}

// Batches of several goroutines, opening and closing as they go, and
// writes outside any, reach the connection in the order they were made.
func TestSocketBatchesKeepWriteOrder(t *testing.T) {
	conn := &countingConn{}
	s := &socket{Conn: conn}
	var order sync.Mutex // makes "the order they were made" observable
	var made []byte
	write := func(b byte) {
		order.Lock()
		defer order.Unlock()
		made = append(made, b)
		_, _ = s.Write([]byte{b})
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
	if string(conn.got) != string(made) {
		t.Fatalf("the connection got %d bytes in another order than the %d written", len(conn.got), len(made))
	}
	if conn.writes >= len(made) {
		t.Fatalf("%d writes for %d bytes: nothing was batched", conn.writes, len(made))
	}
}

// A batch is written once it gathers maxFrames whole frames or
// maxBatchBytes, so a long run of queued events is not held back whole; the
// rest goes when the batch closes.
func TestSocketBatchBounds(t *testing.T) {
	conn := &countingConn{}
	s := &socket{Conn: conn, maxFrames: 4}
	frame := func(b string) {
		s.openBatch() // conn.write's own batch around a frame
		_, _ = s.Write([]byte(b[:1]))
		_, _ = s.Write([]byte(b[1:])) // the library may write a frame in parts
		if err := s.closeFrame(); err != nil {
			t.Fatal(err)
		}
	}
	frame("a1") // outside a batch: at once
	if conn.writes != 1 {
		t.Fatalf("a lone frame made %d writes, want 1", conn.writes)
	}
	s.openBatch()
	for _, f := range []string{"b1", "b2", "b3", "b4", "b5", "b6"} {
		frame(f)
	}
	if conn.writes != 2 || string(conn.got) != "a1b1b2b3b4" {
		t.Fatalf("after 6 frames in a batch of at most 4: %d writes of %q, want 2 of %q", conn.writes, conn.got, "a1b1b2b3b4")
	}
	if err := s.closeBatch(); err != nil || conn.writes != 3 || string(conn.got) != "a1b1b2b3b4b5b6" {
		t.Fatalf("closing the batch: %d writes of %q (%v), want 3", conn.writes, conn.got, err)
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
	s = &socket{Conn: one, maxFrames: 1}
	s.openBatch()
	for range 3 {
		s.openBatch()
		_, _ = s.Write([]byte("e"))
		_ = s.closeFrame()
	}
	_ = s.closeBatch()
	if one.writes != 3 {
		t.Fatalf("with one frame a write: %d writes of 3 frames", one.writes)
	}
}
