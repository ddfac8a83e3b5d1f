//go:build !race

package live

import (
	"runtime"
	"testing"
)

// Without the poller (where there is none), an idle connection's reader
// keeps the smallest stack: it waits for the client outside the frame
// reader, and a subscribe, whose parsing grows the stack, hands the wait to
// a fresh goroutine. Measured as the stack memory per connection after one
// garbage collection: the runtime's smallest stack is 2 KiB, and a reader
// that waited deep in a read held 4 KiB. Not under the race detector, whose
// instrumentation makes frames larger: .ci/run runs it on its own.
func TestIdleConnectionsKeepSmallStacks(t *testing.T) {
	h := newHarness(t, nil)
	h.live.poller = nil
	alice := h.user("alice")
	h.room("hall", "alice")
	const conns = 300
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	open := h.open()
	for range conns {
		c := h.connect(graphqlTransportWS.name, alice)
		c.subscribe(graphqlTransportWS, "1", roomEvents, map[string]any{"r": "hall"})
	}
	waitFor(t, "the streams", func() bool { return h.open() == open+conns })
	runtime.GC()
	runtime.ReadMemStats(&after)
	perConn := (int64(after.StackInuse) - int64(before.StackInuse)) / conns
	if perConn >= 3<<10 {
		t.Fatalf("%d bytes of stack per idle connection, want the runtime's smallest (2 KiB)", perConn)
	}
	t.Logf("%d bytes of stack per idle connection", perConn)
}
