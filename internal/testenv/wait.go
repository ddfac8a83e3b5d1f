package testenv

import (
	"testing"
	"time"
)

// WaitFor polls cond every millisecond until it holds, failing t if it
// does not within the given time.
func WaitFor(t testing.TB, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v", within)
		}
		time.Sleep(time.Millisecond)
	}
}
