package live

import (
	"testing"
	"time"
)

// TestBusyGate checks the gate's rule alone: it opens after
// busyWindowsToEngage windows in a row in which busyLaggedPercent of at
// least busyMinHandOffs hand-offs waited over busyLag, not for fewer in a
// row, a smaller share, or too few hand-offs; it measures nothing while
// open, closes busyHold after it opened, and opens again the same way.
func TestBusyGate(t *testing.T) {
	var g busyGate
	now := time.Unix(1_000_000, 0)
	window := func(handed, lagged int) {
		t.Helper()
		for i := range handed {
			waited := busyLag / 2
			if i < lagged {
				waited = busyLag + time.Microsecond
			}
			if g.measuring() {
				g.handedOff(waited)
			}
		}
		now = now.Add(busyWindow)
		g.tick(now)
	}
	busy := func(handed int) { window(handed, handed*busyLaggedPercent/100+1) }
	expect := func(open bool, what string) {
		t.Helper()
		if g.on.Load() != open {
			t.Fatalf("%s: the gate is open %v, want %v", what, g.on.Load(), open)
		}
	}

	window(1000, 0)
	expect(false, "a window with no hand-off waiting")
	for range busyWindowsToEngage - 1 {
		busy(1000)
	}
	expect(false, "one busy window short of the count")
	window(1000, 1000*busyLaggedPercent/100-1) // just under the share
	for range busyWindowsToEngage - 1 {
		busy(1000)
	}
	expect(false, "busy windows broken by one under the share")
	for range busyWindowsToEngage {
		busy(busyMinHandOffs - 1)
	}
	expect(false, "busy windows of too few hand-offs")
	for range busyWindowsToEngage {
		busy(busyMinHandOffs)
	}
	expect(true, "enough busy windows in a row")
	opened := now

	for now.Sub(opened) < busyHold-busyWindow {
		window(1000, 0) // not measured: the delay's saving hides the signal
		expect(true, "within the hold, whatever the windows")
	}
	window(1000, 1000)
	expect(false, "the hold over, even in a busy window")
	for range busyWindowsToEngage {
		busy(1000)
	}
	expect(true, "busy again after the hold")
}
