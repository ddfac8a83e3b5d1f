package auth

import (
	"container/heap"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// A watcher is one stream following its session (Sessions.OnEnd).
type watcher struct {
	set *watchers
	key sessionKey
	end func(cause error)
	// expires is when the stream's access token expires, in Unix
	// nanoseconds; zero if never (an API key's).
	expires int64
	fired   atomic.Bool // end was called: it is called once

	// Under set.mu: next links the watchers of the same session, and at
	// is the watcher's place among those expiring, -1 if not there.
	next, prev *watcher
	at         int
}

// fire calls the watcher's end with cause, the first time only.
func (w *watcher) fire(cause error) {
	if w.fired.CompareAndSwap(false, true) {
		w.end(cause)
	}
}

// stop gives the watcher's place back.
func (w *watcher) stop() { w.set.remove(w) }

// watchers are the streams following sessions, by session, and those whose
// access token expires, in the order they do: one timer, for the next to
// expire, serves them all.
type watchers struct {
	now func() time.Time

	mu        sync.Mutex
	bySession map[sessionKey]*watcher // the first of each session's
	expiring  expiring
	timer     *time.Timer // set for expiring's first; nil before the first
}

func newWatchers(now func() time.Time) *watchers {
	return &watchers{now: now, bySession: map[sessionKey]*watcher{}}
}

// add watches key's session for end, and, unless expires (Unix
// nanoseconds) is zero, the access token's expiry.
func (ws *watchers) add(key sessionKey, expires int64, end func(cause error)) *watcher {
	w := &watcher{set: ws, key: key, end: end, expires: expires, at: -1}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if first := ws.bySession[key]; first != nil {
		w.next, first.prev = first, w
	}
	ws.bySession[key] = w
	if expires != 0 {
		heap.Push(&ws.expiring, w)
		if w.at == 0 {
			ws.arm()
		}
	}
	return w
}

// remove forgets w, if it is still there.
func (ws *watchers) remove(w *watcher) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	switch {
	case w.prev != nil:
		w.prev.next = w.next
	case ws.bySession[w.key] == w:
		if w.next == nil {
			delete(ws.bySession, w.key)
		} else {
			ws.bySession[w.key] = w.next
		}
	default:
		return // removed before
	}
	if w.next != nil {
		w.next.prev = w.prev
	}
	w.next, w.prev = nil, nil
	if w.at >= 0 {
		heap.Remove(&ws.expiring, w.at)
	}
	// The timer may be set for w: firing, it finds nothing yet expired and
	// sets itself for the next.
}

// arm sets the timer for the first to expire; ws.mu is held.
func (ws *watchers) arm() {
	d := time.Duration(ws.expiring[0].expires - ws.now().UnixNano())
	if ws.timer == nil {
		ws.timer = time.AfterFunc(d, ws.expire)
		return
	}
	ws.timer.Reset(d)
}

// expire ends the streams whose access token has expired.
func (ws *watchers) expire() {
	var expired []*watcher
	ws.mu.Lock()
	now := ws.now().UnixNano()
	for len(ws.expiring) > 0 && ws.expiring[0].expires <= now {
		expired = append(expired, heap.Pop(&ws.expiring).(*watcher))
	}
	if len(ws.expiring) > 0 {
		ws.arm()
	}
	ws.mu.Unlock()
	for _, w := range expired {
		w.fire(errTokenExpired)
	}
}

// matching returns the watchers of the sessions that match.
func (ws *watchers) matching(match func(sessionKey) bool) []*watcher {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	var found []*watcher
	for k, w := range ws.bySession {
		if match(k) {
			for ; w != nil; w = w.next {
				found = append(found, w)
			}
		}
	}
	return found
}

// sessions returns the sessions watched.
func (ws *watchers) sessions() []sessionKey {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return slices.Collect(maps.Keys(ws.bySession))
}

// count is how many sessions are watched.
func (ws *watchers) count() int {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return len(ws.bySession)
}

// expiring is a heap of watchers by when their access token expires.
type expiring []*watcher

func (e expiring) Len() int           { return len(e) }
func (e expiring) Less(i, j int) bool { return e[i].expires < e[j].expires }
func (e expiring) Swap(i, j int) {
	e[i], e[j] = e[j], e[i]
	e[i].at, e[j].at = i, j
}

func (e *expiring) Push(x any) {
	w := x.(*watcher)
	w.at = len(*e)
	*e = append(*e, w)
}

func (e *expiring) Pop() any {
	old := *e
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*e = old[:len(old)-1]
	w.at = -1
	return w
}
