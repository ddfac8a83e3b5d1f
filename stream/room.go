package stream

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/killrchat/chatql/broker"
	"github.com/killrchat/chatql/store"
)

// Room is one subscriber's stream of a room's events: those logged after
// its cursor, then the live ones, with no gap and no duplicate. It ends
// after the room's deletion or the viewer's own leave, whether that event
// comes live or from the log. Transports drive it with Run, or with Notify
// and Pump.
type Room struct {
	src    *Source
	room   string
	viewer string // the viewer's login
	sub    *broker.Subscription
	after  store.Cursor
	// floor bounds what the stream may ever deliver: the resume cursor, or
	// the moment the live subscription started.
	floor store.MessageID
	seen  seen
	// at is the place in the broker's sequence of the room's events (if
	// it numbers them: broker.Sequencer) of the last numbered event the
	// stream took (delivered, or passed over as not the viewer's), zero
	// before the first.
	at store.Cursor
	// sees is the viewer's reader's view: an event about a message they may
	// not read (in a private group, one posted outside their membership
	// windows: an edit, a deletion, a hide, a reaction) is not theirs.
	sees func(store.Message) bool
	// leavesOut is the viewer's own choice of live events not to get (a
	// group's read receipts, by one who sends none); nil: none.
	leavesOut func(*store.Event) bool

	replayed bool // the first Pump has replayed after the cursor
	closed   atomic.Bool
	// presence is the subscription to the participants' presence changes
	// (FollowPresence); nil if the subscriber does not follow them.
	presence *broker.Subscription
}

// FollowPresence has the stream deliver the participants' PresenceChanged
// events too, from their own topic. Call it before the first Pump, Run or
// Notify.
func (r *Room) FollowPresence(ctx context.Context) error {
	sub, err := r.src.Broker.Subscribe(ctx, broker.RoomPresenceTopic(r.room))
	if err != nil {
		return err
	}
	r.presence = sub
	return nil
}

// OpenRoom opens viewer's stream of the room's events, which the caller
// checked viewer may follow, and which delivers the events about messages
// that sees (the viewer's reader's view; nil: all) lets them read. It
// subscribes to the live events before anything is read from the log, so
// that nothing logged in between is missed. after is the resume cursor (the
// zero cursor: from now on). The stream holds a broker subscription until
// it ends or is closed.
func (s *Source) OpenRoom(ctx context.Context, room string, viewer store.UserRef, after store.Cursor, sees func(store.Message) bool) (*Room, error) {
	floor := after.ID
	if floor.IsZero() {
		floor = store.MinMessageID(time.Now())
	}
	sub, err := s.subscribe(ctx, broker.RoomTopic(room))
	if err != nil {
		return nil, err
	}
	return &Room{src: s, room: room, viewer: viewer.Login, sub: sub, after: after, floor: floor, sees: sees}, nil
}

// LeaveOut has the stream pass over the events f reports, as it passes
// over those the viewer may not read. Call it before Run.
func (r *Room) LeaveOut(f func(*store.Event) bool) { r.leavesOut = f }

// Viewer is the subscriber the stream was opened for, by login alone: an
// event's encoding reads no more of them (@viewer fields, hidden content),
// and an idle stream holds no more.
func (r *Room) Viewer() store.UserRef { return store.UserRef{Login: r.viewer} }

// Run delivers the stream's events to emit, in order, until the room is
// deleted, the viewer leaves it, ctx ends or emit returns false (the
// subscriber is gone); those end it with nil. Otherwise it returns why the
// stream failed (the subscriber fell behind, the broker closed, the store
// failed); the client resumes with its last cursor. Events are shared with
// other subscribers: read, never modify. Run waits for events on the
// calling goroutine; transports that would rather not park a goroutine per
// subscriber drive the stream with Notify and Pump instead.
func (r *Room) Run(ctx context.Context, emit func(*store.Event) bool) error {
	if r.presence == nil {
		for {
			if done, err := r.Pump(ctx, emit); done {
				return err
			}
			r.sub.Wait(ctx)
		}
	}
	wake := make(chan struct{}, 1)
	r.Notify(func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	})
	for {
		if done, err := r.Pump(ctx, emit); done {
			return err
		}
		select {
		case <-wake:
		case <-ctx.Done():
		}
	}
}

// Notify has ready called whenever Pump has work: an event arrived or the
// subscription ended. ready runs on the delivering goroutine and must only
// schedule a Pump (see broker.Subscription.Notify). The first Pump, which
// replays what came after the cursor, is the caller's to schedule, and so
// is one when the context it passes to Pump ends.
func (r *Room) Notify(ready func()) {
	r.sub.Notify(ready)
	if r.presence != nil {
		r.presence.Notify(ready)
	}
}

// Pump delivers what is ready, as Run does, without waiting for more: the
// replay after the cursor on the first call, then the events queued. done
// reports that the stream has ended, with Run's error; it has then
// released its subscription. One Pump at a time per stream.
func (r *Room) Pump(ctx context.Context, emit func(*store.Event) bool) (done bool, err error) {
	defer func() {
		if done {
			r.Close()
		}
	}()
	if !r.replayed {
		r.replayed = true
		if ok, err := r.resume(ctx, emit); !ok {
			return true, err
		}
	}
	for ctx.Err() == nil {
		if r.presence != nil {
			if ended, err := pumpPresence(r.presence, emit); ended {
				return true, err
			}
		}
		ev, ended := r.sub.Poll()
		if ev == nil {
			if ended {
				return true, r.sub.Err()
			}
			return false, nil
		}
		if ev.Kind == broker.Resync {
			if ok, err := r.catchUpAfterGap(ctx, emit); !ok {
				return true, err
			}
			if ok, err := r.stillFollowing(ctx, emit); !ok {
				return true, err
			}
			continue
		}
		if ev.Seq != 0 {
			if taken, ok, err := r.takePlace(ctx, ev, emit); !ok {
				return true, err
			} else if !taken {
				continue
			}
		}
		if !r.deliver(ev, emit) || r.ends(ev) {
			return true, nil
		}
	}
	return true, nil
}

// pumpPresence delivers the presence changes queued on sub (a Resync there
// asks for nothing: presence is not replayed). ended reports that the
// stream must end: sub did (with its error), or the subscriber is gone
// (nil).
func pumpPresence(sub *broker.Subscription, emit func(*store.Event) bool) (ended bool, err error) {
	for {
		ev, done := sub.Poll()
		switch {
		case ev == nil:
			return done, sub.Err()
		case ev.Kind == store.PresenceChanged && !emit(ev):
			return true, nil
		}
	}
}

// Ready reports whether Pump has work from the subscriptions: a queued
// event, or an end.
func (r *Room) Ready() bool {
	return r.sub.Pending() || r.presence != nil && r.presence.Pending()
}

// Close releases the stream's subscription; Pump and Run do when the
// stream ends. It is safe to call more than once.
func (r *Room) Close() {
	if !r.closed.CompareAndSwap(false, true) {
		return
	}
	r.sub.Close()
	if r.presence != nil {
		r.presence.Close()
	}
	r.src.open.Add(-1)
}

// ends reports whether ev is the last event the subscriber may see.
func (r *Room) ends(ev *store.Event) bool {
	return ev.Kind == store.RoomDeleted || store.EndsMembership(ev, r.viewer)
}

// resume delivers what followed the resume cursor, if there is one: by the
// room's sequence when the cursor has a place in it that the broker still
// holds, exactly; by the log's ids after the cursor's otherwise (the
// sequence was lost with Redis's data, or the cursor is older than what it
// keeps), which is exact for the events of one instance, but may miss an
// event of another instance that reached subscribers just after the
// cursor's with a smaller id. It reports false when the stream must end, as catchUp does.
func (r *Room) resume(ctx context.Context, emit func(*store.Event) bool) (bool, error) {
	if r.after.ID.IsZero() {
		return true, nil
	}
	r.at = r.after
	if known, ok, err := r.catchUpSequence(ctx, emit); known || !ok {
		return ok, err
	}
	r.at = store.Cursor{}
	return r.catchUp(ctx, r.after.ID, emit)
}

// takePlace follows a live event numbered in the room's sequence: taken is
// false for one the stream took already (a catch-up read it); a number
// beyond the next means events were lost on their way, and the stream
// catches up on them first. A number not beyond the last, of an event the
// stream never delivered, begins a new sequence (Redis lost the room's, or
// let it expire). ok is false when the stream must end, as catchUp
// reports.
func (r *Room) takePlace(ctx context.Context, ev *store.Event, emit func(*store.Event) bool) (taken, ok bool, err error) {
	switch {
	case r.at.Seq == 0:
	case ev.Seq <= r.at.Seq:
		if r.seen.delivered(ev.ID) {
			return false, true, nil
		}
	case ev.Seq > r.at.Seq+1:
		if ok, err := r.catchUpAfterGap(ctx, emit); !ok {
			return false, false, err
		}
		if r.seen.delivered(ev.ID) {
			return false, true, nil
		}
	}
	r.at = store.Cursor{ID: ev.ID, Seq: ev.Seq}
	return true, true, nil
}

// catchUpAfterGap delivers what the stream may have missed while the
// broker lost events: by the room's sequence when it still holds the last
// place the stream took, by the log's ids after the oldest event it
// remembers delivering otherwise. It reports false when the stream must
// end, as catchUp does.
func (r *Room) catchUpAfterGap(ctx context.Context, emit func(*store.Event) bool) (bool, error) {
	if known, ok, err := r.catchUpSequence(ctx, emit); known || !ok {
		return ok, err
	}
	r.at = store.Cursor{}
	return r.catchUp(ctx, r.seen.resumeFrom(r.floor), emit)
}

// catchUpSequence delivers the events that followed r.at in the room's
// sequence, in that order, read from the log. known is false when there is
// no sequence to read (the broker keeps none, there is no r.at, the
// sequence no longer holds it, or reading it failed) and nothing was
// delivered; ok is false when the stream must end, as catchUp reports.
func (r *Room) catchUpSequence(ctx context.Context, emit func(*store.Event) bool) (known, ok bool, err error) {
	sequence, _ := r.src.Broker.(broker.Sequencer)
	if sequence == nil || r.at.ID.IsZero() {
		return false, true, nil
	}
	for {
		places, held, err := sequence.SequenceAfter(ctx, r.room, r.at, replayPage)
		if err != nil || !held {
			// Reading the log by id is the way that remains; an error
			// here is the broker's, and the log may yet answer.
			return known, true, nil
		}
		known = true
		if len(places) == 0 {
			return true, true, nil
		}
		logged, err := r.loggedEvents(ctx, places)
		if err != nil {
			if ctx.Err() != nil {
				return true, false, nil
			}
			return true, false, err
		}
		for _, p := range places {
			r.at = p
			ev, found := logged[p.ID]
			if !found {
				continue // not in the log (the room's deletion) or not logged yet
			}
			ev.Seq = p.Seq
			if !r.deliver(&ev, emit) || r.ends(&ev) {
				return true, false, nil
			}
		}
		if len(places) < replayPage {
			return true, true, nil
		}
	}
}

// loggedEvents reads the events at places from the room's log, by id. Their
// ids are close together (an instance's clock and its write time apart),
// so one read from the smallest usually finds them all.
func (r *Room) loggedEvents(ctx context.Context, places []store.Cursor) (map[store.MessageID]store.Event, error) {
	first, last := places[0].ID, places[0].ID
	for _, p := range places[1:] {
		if p.ID.Compare(first) < 0 {
			first = p.ID
		}
		if p.ID.Compare(last) > 0 {
			last = p.ID
		}
	}
	wanted := make(map[store.MessageID]bool, len(places))
	for _, p := range places {
		wanted[p.ID] = true
	}
	logged := make(map[store.MessageID]store.Event, len(places))
	after := store.MinMessageID(first.Time().Add(-time.Microsecond))
	for {
		events, err := r.src.Store.RoomEvents(ctx, r.room, after, replayPage)
		if err != nil {
			return nil, err
		}
		for _, ev := range events {
			if wanted[ev.ID] {
				logged[ev.ID] = ev
			}
		}
		if len(logged) == len(wanted) || len(events) < replayPage || events[len(events)-1].ID.Compare(last) >= 0 {
			return logged, nil
		}
		after = events[len(events)-1].ID
	}
}

// catchUp delivers the logged events after the cursor, oldest first. It
// reports false when the stream must end: the viewer's leave was among
// them, the subscriber left, or the store failed (with its error).
func (r *Room) catchUp(ctx context.Context, after store.MessageID, emit func(*store.Event) bool) (bool, error) {
	for {
		events, err := r.src.Store.RoomEvents(ctx, r.room, after, replayPage)
		if err != nil {
			if ctx.Err() != nil {
				return false, nil
			}
			return false, err
		}
		for i := range events {
			if !r.deliver(&events[i], emit) || r.ends(&events[i]) {
				return false, nil
			}
		}
		if len(events) < replayPage {
			return true, nil
		}
		after = events[len(events)-1].ID
	}
}

// stillFollowing checks, after a catch-up that followed a gap in the live
// events, that the room still exists and the viewer still takes part: a
// deleted room's log went with it, so its deletion is learnt here, and
// delivered as a ROOM_DELETED without a cursor. It reports false when the
// stream must end.
func (r *Room) stillFollowing(ctx context.Context, emit func(*store.Event) bool) (bool, error) {
	m, err := r.src.Store.Membership(ctx, r.room, r.viewer)
	switch {
	case errors.Is(err, store.ErrNotFound):
		emit(&store.Event{Kind: store.RoomDeleted, Room: r.room})
		return false, nil
	case err != nil:
		if ctx.Err() != nil {
			return false, nil
		}
		return false, err
	case !m.Participant:
		return false, nil
	}
	return true, nil
}

// deliver emits ev unless it was already delivered, or is about a message
// the viewer may not read; false means the subscriber is gone.
func (r *Room) deliver(ev *store.Event, emit func(*store.Event) bool) bool {
	if !r.seen.first(ev.ID, remembering(r.sub.Limit())) || !r.mayRead(ev.Message) || r.leavesOut != nil && r.leavesOut(ev) {
		return true
	}
	return emit(ev)
}

// mayRead reports whether the viewer may read m, a message an event
// carries (nil: none).
func (r *Room) mayRead(m *store.Message) bool {
	return m == nil || r.sees == nil || r.sees(*m)
}
