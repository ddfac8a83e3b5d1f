package live

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// busyGate switches the write delay (Config.WriteDelayWhenBusy) on while
// deliveries wait for a CPU, and off otherwise: a server with cores to
// spare writes every event at once, and one whose cores are full spends
// them on events rather than on write(2) calls (half of a delivery's CPU),
// carrying more with the same cores. It is the adaptive interrupt
// moderation of network cards, for websocket writes.
//
// The signal is how long a connection handed to the drainers waited for
// one to run it (drainers.drain to conn.drain): on cores with room a
// parked drainer runs within microseconds, while a post's whole fan-out is
// written within a millisecond or two. When, in busyWindowsToEngage
// windows of busyWindow in a row, at least busyLaggedPercent of the
// hand-offs waited over busyLag, the cores are full and the gate opens
// for busyHold. The delay's own saving then hides the signal (the cores
// have room again), so the gate closes after busyHold and measures again:
// a server still saturated opens it again within half a second.
//
// At 550 posts/s over 1,000 subscribers on two cores (BENCHMARKS.md)
// windows over the share come one at a time, when a collection or a
// compaction takes a core for a moment; saturated, every window is over
// it.
type busyGate struct {
	on atomic.Bool
	// handed counts the hand-offs of this window, lagged those that
	// waited over busyLag. Neither is counted while the gate is open.
	handed, lagged atomic.Uint64

	mu          sync.Mutex
	busyWindows int       // windows in a row over the share, while closed
	until       time.Time // while open, when it closes
}

const (
	busyWindow          = 100 * time.Millisecond
	busyLag             = 2 * time.Millisecond
	busyLaggedPercent   = 15
	busyMinHandOffs     = 100 // a window with fewer tells nothing
	busyWindowsToEngage = 5
	busyHold            = 5 * time.Second
)

// DefaultWriteDelay is the write delay of a server that does not set one:
// spaced writes of 20 ms while its cores are full (Config.WriteDelayWhenBusy).
const DefaultWriteDelay = 20 * time.Millisecond

// measuring reports whether hand-offs are measured now (the gate is
// closed): the caller then reads the clock for handedOff.
func (g *busyGate) measuring() bool { return !g.on.Load() }

// handedOff counts a hand-off that waited waited for its drainer.
func (g *busyGate) handedOff(waited time.Duration) {
	g.handed.Add(1)
	if waited > busyLag {
		g.lagged.Add(1)
	}
}

// tick ends a window at now: it opens the gate after busyWindowsToEngage
// busy windows in a row, and closes it busyHold after it opened.
func (g *busyGate) tick(now time.Time) {
	handed, lagged := g.handed.Swap(0), g.lagged.Swap(0)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.on.Load() {
		if !now.Before(g.until) {
			g.on.Store(false)
		}
		return
	}
	if handed >= busyMinHandOffs && lagged*100 >= handed*busyLaggedPercent {
		g.busyWindows++
	} else {
		g.busyWindows = 0
	}
	if g.busyWindows >= busyWindowsToEngage {
		g.openUntil(now.Add(busyHold))
	}
}

// openUntil opens the gate until then. The caller holds g.mu.
func (g *busyGate) openUntil(then time.Time) {
	g.busyWindows, g.until = 0, then
	g.handed.Store(0)
	g.lagged.Store(0)
	g.on.Store(true)
}

// watch ends a window every busyWindow until ctx ends.
func (g *busyGate) watch(ctx context.Context) {
	tick := time.NewTicker(busyWindow)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			g.tick(now)
		}
	}
}
