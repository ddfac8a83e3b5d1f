package live

import (
	"context"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/killrchat/chatql/broker"
	"github.com/killrchat/chatql/store"
)

// BenchmarkDelivery delivers room events to websocket subscribers over
// loopback and counts the server's write calls on the sockets: with one
// frame a write (MaxFramesPerWrite 1, the baseline) and with the queued
// frames of a connection coalesced (the default). A lone event is written
// at once either way (the loop waits for every subscriber to receive it
// before the next); a burst published at once queues behind the first, and
// so do the events of a connection's several rooms. Events are published
// straight to the broker, so the figures are the delivery path's alone
// (the clients' reads included). Metrics: writes/delivery (the server's
// write calls on the sockets), allocs/delivery (the whole process's heap
// allocations: the server's and the clients', which read each message with
// none of their own but the library's frame reader) and ns/delivery.
//
//	go test -run '^$' -bench BenchmarkDelivery -count 5 ./live/
func BenchmarkDelivery(b *testing.B) {
	cases := []struct {
		name                string
		conns, rooms, burst int // rooms: subscriptions per connection, one room each
	}{
		{"lone events", 50, 1, 1},
		{"bursts of 16", 50, 1, 16},
		{"4 rooms a connection, bursts of 4", 50, 4, 4},
	}
	modes := []struct {
		name   string
		frames int
	}{{"one frame a write", 1}, {"coalesced", 0}}
	for _, c := range cases {
		for _, m := range modes { // interleaved: each case runs both modes in turn
			b.Run(fmt.Sprintf("%s/%s", c.name, m.name), func(b *testing.B) {
				benchmarkDelivery(b, c.conns, c.rooms, c.burst, m.frames)
			})
		}
	}
}

func benchmarkDelivery(b *testing.B, conns, rooms, burst, frames int) {
	var writes atomic.Int64
	h := newHarnessOn(b, func(c *Config) { c.MaxFramesPerWrite = frames }, func(l net.Listener) net.Listener {
		return writeCountingListener{Listener: l, writes: &writes}
	})
	alice := h.user("alice")
	names := make([]string, rooms)
	for i := range names {
		names[i] = fmt.Sprintf("room-%d", i)
		h.room(names[i], "alice")
	}
	var received, target atomic.Int64
	done := make(chan struct{}, 1)
	var readers sync.WaitGroup
	var clients []*client
	defer func() {
		for _, c := range clients {
			_ = c.ws.CloseNow() // ends its reader
		}
		readers.Wait()
	}()
	before := h.open()
	for range conns {
		c := h.connect(graphqlTransportWS.name, alice)
		clients = append(clients, c)
		for i, room := range names {
			c.subscribe(graphqlTransportWS, fmt.Sprint(i), roomEvents, map[string]any{"r": room})
		}
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				// No deadline, so the library sets none up per read; the
				// message is discarded without a buffer of its own.
				_, r, err := c.ws.Reader(context.Background())
				if err == nil {
					_, err = io.Copy(io.Discard, r)
				}
				if err != nil {
					return
				}
				if received.Add(1) == target.Load() {
					done <- struct{}{}
				}
			}
		}()
	}
	waitFor(b, "the subscriptions", func() bool { return h.open() == before+int64(conns*rooms) })
	author := store.UserRef{Login: "alice", Firstname: "alice"}
	perRound := int64(conns * rooms * burst)
	publish := func() {
		target.Add(perRound)
		for range burst {
			for _, room := range names {
				ev := store.PostedEvent(store.Message{Room: room, ID: store.NewMessageID(), Author: author, Content: "hello, this is a message of a typical length"})
				if err := h.broker.Publish(context.Background(), broker.RoomTopic(room), ev); err != nil {
					b.Fatal(err)
				}
			}
		}
		<-done
	}
	publish() // warm: the encoders hold a result, the pools a buffer
	writes.Store(0)
	var mem runtime.MemStats
	runtime.ReadMemStats(&mem)
	mallocs := mem.Mallocs
	b.ResetTimer()
	rounds := 0
	for b.Loop() {
		publish()
		rounds++
	}
	b.StopTimer()
	runtime.ReadMemStats(&mem)
	deliveries := float64(int64(rounds) * perRound)
	b.ReportMetric(float64(writes.Load())/deliveries, "writes/delivery")
	b.ReportMetric(float64(mem.Mallocs-mallocs)/deliveries, "allocs/delivery")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/deliveries, "ns/delivery")
}

// writeCountingListener counts the write calls on the connections it
// accepts: the server's write(2)s.
type writeCountingListener struct {
	net.Listener
	writes *atomic.Int64
}

func (l writeCountingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return writeCountingConn{Conn: c, writes: l.writes}, nil
}

type writeCountingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c writeCountingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}
