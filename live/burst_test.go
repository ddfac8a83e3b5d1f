package live

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/killrchat/chatql/broker"
	"github.com/killrchat/chatql/store"
)

// A burst of events to one subscriber, queued while the server's write of
// the first is held up, arrives complete and in order, each message in a
// websocket frame of its own (a frame holding two JSON messages would
// break every client), in fewer writes than messages: the queued frames go
// out MaxFramesPerWrite to a write. With one frame a write, as many writes
// as messages. The held write makes the queue deterministic: no timing.
func TestBurstIsCoalescedOneMessageAFrame(t *testing.T) {
	const burst = 65 // the first, held, and 64 queued behind it
	for _, tc := range []struct {
		name       string
		frames     int // Config.MaxFramesPerWrite
		wantWrites int
	}{
		{"16 frames a write", 16, 1 + (burst-1)/16},
		{"one frame a write", 1, burst},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gate := &writeGate{held: make(chan struct{}), release: make(chan struct{})}
			h, _, c, received := gatedHall(t, gate, func(c *Config) { c.MaxFramesPerWrite = tc.frames })
			publish := func(i int) { publishToHall(t, h, fmt.Sprintf("burst %03d", i)) }
			gate.writes.Store(0)
			gate.armed.Store(true)
			publish(0)
			select {
			case <-gate.held: // the server is writing the first event
			case <-time.After(10 * time.Second):
				t.Fatal("the first event was not written")
			}
			for i := 1; i < burst; i++ {
				publish(i)
			}
			close(gate.release)
			for i := range burst {
				ev := c.event(graphqlTransportWS, "s")
				if want := fmt.Sprintf("burst %03d", i); ev.Message == nil || ev.Message.Content != want {
					t.Fatalf("message %d of the burst: got %+v, want content %q", i, ev.Message, want)
				}
			}
			if got := gate.writes.Load(); got != int64(tc.wantWrites) {
				t.Errorf("%d messages took %d writes, want %d", burst, got, tc.wantWrites)
			}

			// On the wire: after the handshake, whole unmasked text frames,
			// each holding exactly one protocol message.
			wire := received()
			end := bytes.Index(wire, []byte("\r\n\r\n"))
			if end < 0 {
				t.Fatal("no handshake response on the wire")
			}
			frames, err := parseFrames(wire[end+4:])
			if err != nil {
				t.Fatal(err)
			}
			next := 0
			for i, f := range frames {
				if !f.fin || f.opcode != byte(websocket.MessageText) {
					t.Fatalf("frame %d: fin %v opcode %d, want a whole text frame", i, f.fin, f.opcode)
				}
				var m message
				if err := json.Unmarshal(f.payload, &m); err != nil {
					t.Fatalf("frame %d does not hold one message: %v: %.200q", i, err, f.payload)
				}
				if m.Type == graphqlTransportWS.next {
					next++
				}
			}
			if next != burst {
				t.Fatalf("%d frames of results on the wire, want %d", next, burst)
			}
		})
	}
}

// With a write delay, an event after a quiet spell is written at once;
// the events that come within the delay of the last write wait for it and
// go out in one write, in order and a frame each. Timers never fire
// early, so the wait is checked from below, and the events are published
// in-process in far less than the delay; the quiet spell's event is
// checked to come before the delay ends, which a write on loopback makes
// by far.
func TestWriteDelayGathersEvents(t *testing.T) {
	const delay = time.Second
	gate := &writeGate{}
	h, _, c, _ := gatedHall(t, gate, func(c *Config) { c.WriteDelay = delay })
	burstAfterWrite(t, h, c, gate, delay, true)
}

// TestWriteDelayWhenBusy: with WriteDelayWhenBusy, a burst right after a
// write goes at once while the busy gate is closed (the cores have room),
// and waits for the delay, to go out in one write, once it is open.
// TestBusyGate checks when the gate opens.
func TestWriteDelayWhenBusy(t *testing.T) {
	const delay = time.Second
	gate := &writeGate{}
	h, _, c, _ := gatedHall(t, gate, func(c *Config) { c.WriteDelay, c.WriteDelayWhenBusy = delay, true })
	burstAfterWrite(t, h, c, gate, delay, false)
	busy := h.live.delayed.busy
	busy.mu.Lock()
	busy.openUntil(time.Now().Add(time.Hour)) // the cores are full
	busy.mu.Unlock()
	burstAfterWrite(t, h, c, gate, delay, true)
}

// burstAfterWrite publishes an event to c's subscription after a quiet
// spell and checks that it comes at once; then, once its drain is over, a
// burst of events, and checks that the burst waited for the delay and went
// out in one write (held), or came at once (not held).
func burstAfterWrite(t *testing.T, h *harness, c *client, gate *writeGate, delay time.Duration, held bool) {
	t.Helper()
	const burst = 10
	publish := func(content string) { publishToHall(t, h, content) }
	receive := func(want string) time.Time {
		t.Helper()
		ev := c.event(graphqlTransportWS, "s")
		if ev.Message == nil || ev.Message.Content != want {
			t.Fatalf("got %+v, want content %q", ev.Message, want)
		}
		return time.Now()
	}

	// A quiet connection: at once.
	start := time.Now()
	publish("after a quiet spell")
	if took := receive("after a quiet spell").Sub(start); took >= delay {
		t.Errorf("the event after a quiet spell came after %v, the delay is %v", took, delay)
	}
	// Right after a write (its drain over, else the burst would join it).
	waitFor(t, "the drain to end", func() bool {
		h.live.mu.Lock()
		defer h.live.mu.Unlock()
		for _, c := range h.live.conns {
			c.mu.Lock()
			draining := c.draining
			c.mu.Unlock()
			if draining {
				return false
			}
		}
		return true
	})
	gate.writes.Store(0)
	start = time.Now()
	for i := range burst {
		publish(fmt.Sprint("burst ", i))
	}
	waited := receive("burst 0").Sub(start)
	switch {
	case held && waited < delay/2:
		t.Errorf("a burst right after a write came after %v, before the delay of %v was half over", waited, delay)
	case !held && waited >= delay:
		t.Errorf("a burst right after a write, not to be held, came after %v, the delay is %v", waited, delay)
	}
	for i := 1; i < burst; i++ {
		receive(fmt.Sprint("burst ", i))
	}
	if got := gate.writes.Load(); held && got != 1 {
		t.Errorf("the burst of %d events took %d writes, want 1", burst, got)
	}
}

// A subscriber whose write is held up while its room goes on falls
// behind by more than the broker's buffer: it gets every event queued
// before it was cut off (a gap-free prefix, in order, coalesced), then an
// error (the slow-consumer limit holds however writes are gathered), and
// resuming from the last cursor it got delivers the rest exactly once.
func TestSlowSubscriberResumesExactlyOnce(t *testing.T) {
	const posts = broker.DefaultBufferSize + 44
	gate := &writeGate{held: make(chan struct{}), release: make(chan struct{})}
	h, alice, c, _ := gatedHall(t, gate, nil)

	gate.writes.Store(0)
	gate.armed.Store(true)
	h.post(alice, "hall", "m 000")
	select {
	case <-gate.held:
	case <-time.After(10 * time.Second):
		t.Fatal("the first event was not written")
	}
	for i := 1; i < posts; i++ {
		h.post(alice, "hall", fmt.Sprintf("m %03d", i))
	}
	close(gate.release)

	var got []string
	var cursor string
	follow := func(id string) (failed bool) {
		for len(got) < posts {
			m := c.read()
			if m.ID != id {
				t.Fatalf("got %+v, want a message of %s", m, id)
			}
			switch m.Type {
			case graphqlTransportWS.next:
				ev := resultEvent(t, m.Payload)
				if ev.Message == nil {
					t.Fatalf("event %d of %s: %+v, want a message", len(got), id, ev)
				}
				got = append(got, ev.Message.Content)
				cursor = ev.Cursor
			case msgError:
				return true
			default:
				t.Fatalf("got %+v, want %s's results", m, id)
			}
		}
		return false
	}
	if !follow("s") {
		t.Fatalf("the subscriber got all %d events in time: it was not cut off", posts)
	}
	cutAt := len(got)
	if cutAt == 0 {
		t.Fatal("cut off before the first event")
	}
	c.subscribe(graphqlTransportWS, "s2", roomEvents, map[string]any{"r": "hall", "after": cursor})
	if follow("s2") {
		t.Fatalf("the resumed subscription failed after %d events", len(got))
	}
	for i, content := range got {
		if want := fmt.Sprintf("m %03d", i); content != want {
			t.Fatalf("event %d is %q, want %q (cut off after %d)", i, content, want, cutAt)
		}
	}
	t.Logf("cut off after %d events; %d writes while they were queued", cutAt, gate.writes.Load())
}

// resultEvent decodes the roomEvents event of a next payload.
func resultEvent(t *testing.T, payload json.RawMessage) roomEvent {
	t.Helper()
	var r struct {
		Data   struct{ RoomEvents roomEvent }
		Errors []json.RawMessage
	}
	if err := json.Unmarshal(payload, &r); err != nil || len(r.Errors) > 0 {
		t.Fatalf("result %s: %v", payload, err)
	}
	return r.Data.RoomEvents
}

// gatedHall is alice subscribed (as "s") to her room "hall" on a harness
// tuned by tune, over the first connection accepted, whose writes go
// through gate; received returns the bytes that connection read.
func gatedHall(t *testing.T, gate *writeGate, tune func(*Config)) (h *harness, alice string, c *client, received func() []byte) {
	t.Helper()
	h = newHarnessOn(t, tune, func(l net.Listener) net.Listener { return gatedListener{Listener: l, gate: gate} })
	alice = h.user("alice")
	h.room("hall", "alice")
	c, received = dialRecording(t, h, alice)
	before := h.open()
	c.subscribe(graphqlTransportWS, "s", roomEvents, map[string]any{"r": "hall"})
	waitFor(t, "the stream", func() bool { return h.open() == before+1 })
	return h, alice, c, received
}

// publishToHall publishes a post of alice's to "hall" through the broker.
func publishToHall(t *testing.T, h *harness, content string) {
	t.Helper()
	ev := store.PostedEvent(store.Message{Room: "hall", ID: store.NewMessageID(), Author: store.UserRef{Login: "alice", Firstname: "alice"}, Content: content})
	if err := h.broker.Publish(context.Background(), broker.RoomTopic("hall"), ev); err != nil {
		t.Fatal(err)
	}
}

// writeGate counts the server's writes; armed, it holds the next one on
// the first connection accepted (the test's websocket; HTTP posts come on
// others) until release is closed, telling held first.
type writeGate struct {
	writes   atomic.Int64
	armed    atomic.Bool
	accepted atomic.Int64
	held     chan struct{}
	release  chan struct{}
}

type gatedListener struct {
	net.Listener
	gate *writeGate
}

func (l gatedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return gatedConn{Conn: c, gate: l.gate, first: l.gate.accepted.Add(1) == 1}, nil
}

type gatedConn struct {
	net.Conn
	gate  *writeGate
	first bool
}

func (c gatedConn) Write(p []byte) (int, error) {
	if !c.first {
		return c.Conn.Write(p)
	}
	c.gate.writes.Add(1)
	if c.gate.armed.CompareAndSwap(true, false) {
		c.gate.held <- struct{}{}
		<-c.gate.release
	}
	return c.Conn.Write(p)
}

// dialRecording connects a graphql-transport-ws client as alice whose
// connection records every byte it reads; received returns them.
func dialRecording(t *testing.T, h *harness, token string) (_ *client, received func() []byte) {
	t.Helper()
	var mu sync.Mutex
	var wire []byte
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return recordingConn{Conn: c, record: func(p []byte) {
			mu.Lock()
			wire = append(wire, p...)
			mu.Unlock()
		}}, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(h.url, "http"), &websocket.DialOptions{
		HTTPClient:   &http.Client{Transport: &http.Transport{DialContext: dial}},
		Subprotocols: []string{graphqlTransportWS.name},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ws.CloseNow() })
	ws.SetReadLimit(1 << 20)
	c := &client{t: t, ws: ws}
	c.send(message{Type: msgConnectionInit, Payload: mustJSON(map[string]any{"token": token})})
	if m := c.read(); m.Type != msgConnectionAck {
		t.Fatalf("got %+v, want connection_ack", m)
	}
	return c, func() []byte {
		mu.Lock()
		defer mu.Unlock()
		return bytes.Clone(wire)
	}
}

type recordingConn struct {
	net.Conn
	record func([]byte)
}

func (c recordingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.record(p[:n])
	return n, err
}

// wireFrame is a websocket frame as the server sent it.
type wireFrame struct {
	fin     bool
	opcode  byte
	payload []byte
}

// parseFrames splits server-to-client bytes into frames (RFC 6455 5.2);
// they must be whole and unmasked.
func parseFrames(b []byte) ([]wireFrame, error) {
	var frames []wireFrame
	for len(b) > 0 {
		if len(b) < 2 {
			return nil, fmt.Errorf("a frame cut short after %d frames", len(frames))
		}
		f := wireFrame{fin: b[0]&0x80 != 0, opcode: b[0] & 0x0f}
		if b[1]&0x80 != 0 {
			return nil, fmt.Errorf("frame %d is masked", len(frames))
		}
		n, head := uint64(b[1]&0x7f), 2
		switch {
		case n == 126 && len(b) >= 4:
			n, head = uint64(binary.BigEndian.Uint16(b[2:])), 4
		case n == 127 && len(b) >= 10:
			n, head = binary.BigEndian.Uint64(b[2:]), 10
		case n >= 126:
			return nil, fmt.Errorf("frame %d's header cut short", len(frames))
		}
		if uint64(len(b)-head) < n {
			return nil, fmt.Errorf("frame %d cut short: %d of %d bytes", len(frames), len(b)-head, n)
		}
		f.payload = b[head : head+int(n)]
		frames = append(frames, f)
		b = b[head+int(n):]
	}
	return frames, nil
}
