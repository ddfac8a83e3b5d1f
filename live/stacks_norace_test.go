//go:build !race

package live

import (
	"runtime"
	"testing"
)

// An idle connection's reader keeps the smallest stack: it waits for the
// client outside the websocket library's read, and a subscribe, whose
// parsing grows the stack, hands the wait to a fresh goroutine. Measured as
// the stack memory per connection after one garbage collection: the
// runtime's smallest stack is 2 KiB, and a reader that waited deep in the
// library held 4 KiB. Not under the race detector, whose instrumentation
// makes frames larger: .ci/run runs it on its own.
func TestIdleConnectionsKeepSmallStacks(t *testing.T) {
	h := newHarness(t, nil)
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
