package httpapi

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
)

// An event stream writes the events queued behind the one it took, in
// order, up to its bounds, for one flush; it waits for none that is not
// queued.
func TestEventStreamWritesWhatIsQueued(t *testing.T) {
	events := make(chan []byte, 2*maxEventsPerFlush)
	var want strings.Builder
	for i := range 2 * maxEventsPerFlush {
		e := fmt.Sprintf("event: next\ndata: %d\n\n", i)
		events <- []byte(e)
		if i < maxEventsPerFlush {
			want.WriteString(e)
		}
	}
	w := httptest.NewRecorder()
	if !writeQueued(w, <-events, events) {
		t.Fatal("the write failed")
	}
	if got := w.Body.String(); got != want.String() {
		t.Fatalf("wrote %q, want the first %d events %q", got, maxEventsPerFlush, want.String())
	}
	if len(events) != maxEventsPerFlush {
		t.Fatalf("%d events left queued, want %d", len(events), maxEventsPerFlush)
	}
	for len(events) > 0 { // the rest, then nothing more: no wait
		if !writeQueued(w, <-events, events) {
			t.Fatal("the write failed")
		}
	}
	// The byte bound: one event past it is written alone.
	big := []byte(strings.Repeat("x", maxBytesPerFlush))
	events <- []byte("next")
	w = httptest.NewRecorder()
	if !writeQueued(w, big, events) || w.Body.Len() != len(big) || len(events) != 1 {
		t.Fatalf("past the byte bound: wrote %d bytes, %d left queued", w.Body.Len(), len(events))
	}
}
