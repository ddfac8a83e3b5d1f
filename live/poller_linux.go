//go:build linux

package live

import (
	"sync"
	"syscall"
	"time"
)

// poller waits for the clients of idle connections with one epoll instance
// and one goroutine for all of them, so that an idle connection holds no
// goroutine, and no stack: most connections are idle subscribers, whose
// clients send nothing for hours. When a client sends something, the
// connection's reader runs on a fresh goroutine, reads what was sent, and
// hands the connection back (await).
//
// The runtime's own poller keeps every socket in its epoll set too; this one
// only learns of input. A connection is armed once at a time (EPOLLONESHOT),
// so each input is handed to one reader. A connection the poller holds is
// released (wake) when it is closed from elsewhere, so that its reader runs
// the close handshake: nobody reads a socket the poller holds.
//
// There is one for the process, as the runtime has one: it lives as long.
type poller struct {
	epfd int

	mu      sync.Mutex
	next    uint64           // the last id given
	waiting map[uint64]*conn // armed connections, by id
}

// idleConns is the process's poller, made when first needed; nil if it
// cannot be (each connection then keeps a reader goroutine).
var idleConns = sync.OnceValue(func() *poller {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil
	}
	p := &poller{epfd: epfd, waiting: make(map[uint64]*conn)}
	go p.run()
	return p
})

// await hands c to the poller until its client sends something (or its
// connection ends): then c.readLoop runs on a fresh goroutine. False if
// the poller cannot take it (no poller, a connection without a file
// descriptor, closed or released): the caller waits on its own goroutine.
func (p *poller) await(c *conn) bool {
	if p == nil {
		return false
	}
	raw := c.socket.raw()
	if raw == nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if c.released {
		return false
	}
	if c.pollID == 0 {
		p.next++
		c.pollID = p.next
	}
	op := syscall.EPOLL_CTL_MOD
	if !c.polled {
		op = syscall.EPOLL_CTL_ADD
	}
	ev := syscall.EpollEvent{
		Events: syscall.EPOLLIN | syscall.EPOLLRDHUP | syscall.EPOLLONESHOT,
		Fd:     int32(uint32(c.pollID)), Pad: int32(uint32(c.pollID >> 32)),
	}
	var ctlErr error
	if err := raw.Control(func(fd uintptr) {
		ctlErr = syscall.EpollCtl(p.epfd, op, int(fd), &ev)
	}); err != nil || ctlErr != nil {
		return false // closed
	}
	c.polled = true
	p.waiting[c.pollID] = c
	return true
}

// wake releases c for good: if the poller holds it, its reader runs now,
// and the poller takes it no more. For a connection closed from elsewhere,
// whose reader must run the close handshake.
func (p *poller) wake(c *conn) {
	if p == nil {
		return
	}
	p.mu.Lock()
	c.released = true
	held := c.pollID != 0 && p.waiting[c.pollID] == c
	if held {
		delete(p.waiting, c.pollID)
	}
	p.mu.Unlock()
	if held {
		go c.readLoop()
	}
}

// run hands each connection whose client sent something to its reader.
func (p *poller) run() {
	events := make([]syscall.EpollEvent, 256)
	ready := make([]*conn, 0, len(events))
	for {
		n, err := syscall.EpollWait(p.epfd, events, -1)
		if err != nil {
			if err != syscall.EINTR {
				// No other error can happen on a valid set; were one to,
				// waiting a moment keeps this loop from spinning.
				time.Sleep(10 * time.Millisecond)
			}
			continue
		}
		p.mu.Lock()
		for _, ev := range events[:n] {
			id := uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
			if c := p.waiting[id]; c != nil {
				delete(p.waiting, id)
				ready = append(ready, c)
			}
		}
		p.mu.Unlock()
		for i, c := range ready {
			go c.readLoop()
			ready[i] = nil
		}
		ready = ready[:0]
	}
}
