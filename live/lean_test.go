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
