package chat

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/killrchat/chatql/broker"
	"github.com/killrchat/chatql/store"
)

// A room's events leave this instance in the order of their ids, which is
// the order of the room's log that roomEvents replays after a cursor. Ids
// are timeuuids taken before the write, and writes end in any order: when
// events went out as their writes ended, a fifth of the events of eight
// users posting to one room came after a greater id. A subscriber resuming
// after the greater cursor then missed the smaller event, and one whose
// last event was the smaller got the greater twice.
//
// So a write that logs a room event first takes its place in the room's
// line (beginRoomWrite), before its id exists: no id it takes is below its
// floor. Its event goes out (roomWrite.publish) once no write that took
// its place earlier, and may yet log a smaller id, is in progress; publish
// waits until then, so that the mutation answers once its event has gone
// (and AwaitPublished's Flush covers it). A write in progress for longer
// than maxRoomWriteHold no longer holds the line: a stuck store write
// delays the room's other events by that much at most, and its own event
// may then go out of order.
//
// This orders each instance's events. Events of two instances reach a
// subscriber in the order Redis gets them, which may differ from their ids
// by the time from an id to its publish (and the instances' clocks): Redis
// numbers them in that order (broker/sequence.go), and a stream resumes by
// those numbers. Without them (one instance, in-process broker) a stream
// that has just replayed the log can get, live, an event whose write was
// in progress while it read: once, after a greater id.
const maxRoomWriteHold = 500 * time.Millisecond

// roomLines are the rooms' lines of writes in progress on this instance.
type roomLines struct {
	mu    sync.Mutex
	lines map[string]*roomLine
}

// roomLine is a room's writes in progress, in the order they took their
// places, and the events handed over that wait for earlier writes.
type roomLine struct {
	refs int // writes that took a place and have not ended; under roomLines.mu

	mu      sync.Mutex
	writes  []*roomWrite // in progress, by floor
	waiting []*roomWrite // handed over, by their event's id
	timer   *time.Timer  // a release due when the first write stops holding
}

// roomWrite is one write's place in its room's line.
type roomWrite struct {
	s     *Service
	ctx   context.Context
	room  string
	line  *roomLine
	floor store.MessageID // no id the write takes is smaller
	since time.Time

	ev      store.Event   // handed over (publish)
	sent    bool          // ev went out; under line.mu
	gone    chan struct{} // when publish waits: closed once ev went out
	placed  bool          // in line.writes; under line.mu
	counted bool          // in line.refs; under roomLines.mu
}

// inLine makes a change of room's that logs an event, as every change of a
// room, group or direct conversation is made: it takes the change's place
// in the room's line before the change takes its id, stores it with
// change, and publishes the event it logged (publishEvent) once the
// earlier changes' have gone. The zero event (nothing logged) is not
// published.
func (s *Service) inLine(ctx context.Context, room string, change func() (store.Event, error)) (store.Event, error) {
	w := s.beginRoomWrite(ctx, room)
	defer w.end()
	ev, err := change()
	if err != nil {
		return store.Event{}, err
	}
	w.publish(ev)
	return ev, nil
}

// beginRoomWrite takes a place in room's line for a write about to log an
// event there; end it (defer w.end()) whatever happens.
func (s *Service) beginRoomWrite(ctx context.Context, room string) *roomWrite {
	ls := &s.roomLines
	ls.mu.Lock()
	if ls.lines == nil {
		ls.lines = make(map[string]*roomLine)
	}
	l := ls.lines[room]
	if l == nil {
		l = &roomLine{}
		ls.lines[room] = l
	}
	l.refs++
	ls.mu.Unlock()

	w := &roomWrite{s: s, ctx: ctx, room: room, line: l, counted: true, placed: true}
	l.mu.Lock()
	// Taken under the line's lock, so that the line is in floor order; to
	// the microsecond below, as ids are (store.NewMessageID).
	w.since = s.now()
	w.floor = store.MinMessageID(w.since.Truncate(time.Microsecond))
	l.writes = append(l.writes, w)
	l.mu.Unlock()
	return w
}

// publish hands over the write's event and waits until it has gone out:
// to the room's subscribers once no earlier write holds the line, or at
// once to both inboxes for a direct conversation's (whose events are not
// in a room's line). The zero event (nothing logged) only leaves the line.
func (w *roomWrite) publish(ev store.Event) {
	if ev.ID.IsZero() || store.IsDirectConversation(ev.Room) {
		w.end()
		w.s.publishEvent(w.ctx, ev)
		return
	}
	l := w.line
	l.mu.Lock()
	if !w.placed {
		// Out of the line already (handed over before): it goes as it is.
		l.mu.Unlock()
		w.s.publishEvent(w.ctx, ev)
		return
	}
	w.ev = ev
	i, _ := slices.BinarySearchFunc(l.waiting, ev.ID, func(x *roomWrite, id store.MessageID) int { return x.ev.ID.Compare(id) })
	l.waiting = slices.Insert(l.waiting, i, w)
	w.leaveLocked()
	w.s.releaseLocked(l)
	if !w.sent {
		w.gone = make(chan struct{})
		l.mu.Unlock()
		<-w.gone
	} else {
		l.mu.Unlock()
	}
	w.end()
}

// end leaves the line, for a write that failed or logged nothing (and
// after publish, which left it already). It may be called more than once.
func (w *roomWrite) end() {
	l := w.line
	l.mu.Lock()
	if w.placed {
		w.leaveLocked()
		w.s.releaseLocked(l)
	}
	l.mu.Unlock()

	ls := &w.s.roomLines
	ls.mu.Lock()
	if w.counted {
		w.counted = false
		if l.refs--; l.refs == 0 {
			// Nothing waits: waiting events wait for writes that count.
			delete(ls.lines, w.room)
		}
	}
	ls.mu.Unlock()
}

// leaveLocked takes w out of the writes in progress.
func (w *roomWrite) leaveLocked() {
	l := w.line
	if i := slices.Index(l.writes, w); i >= 0 {
		l.writes = slices.Delete(l.writes, i, i+1)
	}
	w.placed = false
}

// releaseLocked publishes, in id order, the waiting events no write in
// progress holds back: one holds back the events from its floor on, until
// it ends or has been in progress for maxRoomWriteHold. When events are
// left waiting, a release is due when the first write stops holding.
func (s *Service) releaseLocked(l *roomLine) {
	now := s.now()
	var hold *roomWrite
	for _, w := range l.writes {
		if now.Sub(w.since) < maxRoomWriteHold {
			hold = w
			break
		}
	}
	n := 0
	for _, w := range l.waiting {
		if hold != nil && w.ev.ID.Compare(hold.floor) >= 0 {
			break
		}
		s.publishTo(w.ctx, broker.RoomTopic(w.ev.Room), w.ev)
		w.sent = true
		if w.gone != nil {
			close(w.gone)
		}
		n++
	}
	l.waiting = slices.Delete(l.waiting, 0, n)
	if len(l.waiting) > 0 && l.timer == nil {
		l.timer = time.AfterFunc(hold.since.Add(maxRoomWriteHold).Sub(now), func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.timer = nil
			s.releaseLocked(l)
		})
	}
}
