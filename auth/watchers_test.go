package auth

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestWatchersExpireInOrder: one timer serves every watcher whose token
// expires. Each fires once its time comes, earliest first, whatever the
// order they came in; one added ahead of the rest sets the timer sooner;
// one stopped never fires; one expired stays watched until stopped.
func TestWatchersExpireInOrder(t *testing.T) {
	ws := newWatchers(time.Now)
	fired := make(chan string, 8)
	watch := func(name string, in time.Duration) *watcher {
		var expires int64
		if in != 0 {
			expires = time.Now().Add(in).UnixNano()
		}
		return ws.add(sessionKey{"ada", name}, expires, func(cause error) {
			if cause != errTokenExpired {
				t.Errorf("%s ended with %v", name, cause)
			}
			fired <- name
		})
	}
	watch("late", time.Hour)
	watch("never", 0) // an API key's
	watch("third", 150*time.Millisecond)
	stopped := watch("stopped", 100*time.Millisecond)
	watch("first", 50*time.Millisecond) // ahead of the timer set for an hour
	watch("second", 100*time.Millisecond)
	stopped.stop()
	stopped.stop() // again: nothing

	for _, want := range []string{"first", "second", "third"} {
		select {
		case got := <-fired:
			if got != want {
				t.Fatalf("fired %s, want %s", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s never fired", want)
		}
	}
	if n := ws.count(); n != 5 {
		t.Errorf("watching %d sessions, want the 5 not stopped (expired ones stay until stopped)", n)
	}
	if n := len(ws.expiring); n != 1 || ws.expiring[0].key.id != "late" {
		t.Errorf("%d left to expire, want the late one", n)
	}
}

// TestWatchersKeepTheirPlaces: watchers of one session and of many, added
// and removed in any order, leave the set consistent: each session lists
// exactly its watchers, and the expiring ones come out earliest first.
func TestWatchersKeepTheirPlaces(t *testing.T) {
	ws := newWatchers(time.Now)
	r := rand.New(rand.NewPCG(1, 2))
	base := time.Now().Add(time.Hour)
	live := map[*watcher]bool{}
	var all []*watcher
	for i := range 500 {
		key := sessionKey{"ada", string(rune('a' + r.IntN(5)))}
		w := ws.add(key, base.Add(time.Duration(r.IntN(1000))*time.Second).UnixNano(), func(error) {})
		all = append(all, w)
		live[w] = true
		if i%3 == 0 {
			gone := all[r.IntN(len(all))]
			gone.stop()
			delete(live, gone)
		}
	}
	listed := 0
	for _, w := range ws.matching(func(sessionKey) bool { return true }) {
		if !live[w] {
			t.Fatalf("a stopped watcher of %v is listed", w.key)
		}
		listed++
	}
	if listed != len(live) {
		t.Fatalf("listed %d watchers, want %d", listed, len(live))
	}
	for i, w := range ws.expiring {
		if w.at != i {
			t.Fatalf("watcher at %d thinks it is at %d", i, w.at)
		}
	}
	var last int64
	for ws.expiring.Len() > 0 {
		w := ws.expiring[0]
		ws.remove(w)
		if w.expires < last {
			t.Fatalf("expiring out of order: %v after %v", w.expires, last)
		}
		last = w.expires
		delete(live, w)
	}
	if len(live) != 0 || ws.count() != 0 {
		t.Fatalf("%d watchers left out of the heap, %d sessions still watched", len(live), ws.count())
	}
	ws.timer.Stop()
}
