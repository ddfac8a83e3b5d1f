package broker

import (
	"bytes"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A sharded pub/sub connection that goes deaf without an error (here: what
// Redis sends on it is lost on the way, while the connection stays open, as
// a half-open connection after a network fault, or one left on a node that
// stopped serving its slot without a word) is found by its probe and
// replaced: its subscribers get a Resync, and the events after it again.
func TestRedisDeafShardedLinkIsRenewed(t *testing.T) {
	target, err := url.Parse(redisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := newDeafeningProxy(t, target.Host)
	through := *target
	through.Host = proxy.addr()
	prefix := testPrefix(t)
	r := newTestRedis(t, through.String(), prefix, WithSharded(true), withSweep(20*time.Millisecond, time.Second), withProbe(200*time.Millisecond))
	publisher := newTestRedis(t, target.String(), prefix, WithSharded(true))
	topic := RoomTopic("deaf")
	sub := subscribe(t, r, topic)

	publish(t, publisher, topic, testEvent("p", 0))
	if _, seq := seqOf(t, recvPast(t, sub, Resync)); seq != 0 {
		t.Fatalf("got event %d, want 0", seq)
	}
	proxy.deafen()
	publish(t, publisher, topic, testEvent("p", 1))
	// Event 1 is lost on the way; the probe finds the link deaf, and the
	// renewed link gives the subscriber a Resync.
	if ev := recv(t, sub, 10*time.Second); ev.Kind != Resync {
		_, seq := seqOf(t, ev)
		t.Fatalf("got event %d, want a Resync", seq)
	}
	if stats := r.Stats(); stats.ProbesLost == 0 || stats.Renewals == 0 {
		t.Fatalf("stats %+v: no probe lost, or no renewal", stats)
	}
	publish(t, publisher, topic, testEvent("p", 2))
	if _, seq := seqOf(t, recvPast(t, sub, Resync)); seq != 2 {
		t.Fatalf("got event %d, want 2", seq)
	}
}

// withProbe shortens the interval of a sharded link's probes.
func withProbe(every time.Duration) RedisOption {
	return func(c *redisConfig) { c.probeEvery = every }
}

// deafeningProxy forwards TCP connections to a Redis server, and can make
// its pub/sub connections deaf: what the server sends on those open now is
// dropped from then on, while the connections stay open and what the client
// sends still reaches the server.
type deafeningProxy struct {
	ln    net.Listener
	to    string
	mu    sync.Mutex
	conns []*proxiedConn
}

type proxiedConn struct {
	pubsub atomic.Bool // the client sent an SSUBSCRIBE on it
	deaf   atomic.Bool
}

func newDeafeningProxy(t *testing.T, to string) *deafeningProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &deafeningProxy{ln: ln, to: to}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		_ = ln.Close()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", to)
			if err != nil {
				_ = client.Close()
				continue
			}
			c := &proxiedConn{}
			p.mu.Lock()
			p.conns = append(p.conns, c)
			p.mu.Unlock()
			closeBoth := func() { _ = client.Close(); _ = server.Close() }
			t.Cleanup(closeBoth)
			wg.Add(2)
			go func() { // client to server
				defer wg.Done()
				defer closeBoth()
				forward(server, client, func(b []byte) bool {
					if bytes.Contains(bytes.ToLower(b), []byte("ssubscribe")) {
						c.pubsub.Store(true)
					}
					return true
				})
			}()
			go func() { // server to client
				defer wg.Done()
				defer closeBoth()
				forward(client, server, func([]byte) bool { return !c.deaf.Load() })
			}()
		}
	}()
	return p
}

// forward copies what from sends to to, each read that pass lets through,
// until either fails.
func forward(to, from net.Conn, pass func([]byte) bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := from.Read(buf)
		if n > 0 && pass(buf[:n]) {
			if _, err := to.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *deafeningProxy) addr() string { return p.ln.Addr().String() }

// deafen makes the pub/sub connections open now deaf.
func (p *deafeningProxy) deafen() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		if c.pubsub.Load() {
			c.deaf.Store(true)
		}
	}
}
