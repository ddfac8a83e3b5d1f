package stream

import (
	"context"
	"errors"
	"fmt"
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
	viewer store.UserRef
	sub    *broker.Subscription
	after  store.MessageID
	// floor bounds what the stream may ever deliver: the resume cursor, or
	// the moment the live subscription started.
	floor store.MessageID
	seen  seen
	// windows are a private group's member's membership windows: an event
	// about a message posted outside them (an edit, a deletion, a hide, a
	// reaction) is not theirs to see. Nil in a public room.
	windows []store.Window

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

// OpenRoom checks that viewer may follow the room (a participant), then
// subscribes to its live events before anything is read from the log, so
// that nothing logged in between is missed. after is the resume cursor (the
// zero id: from now on). A private group's member never replays from
// before their current membership window. The stream holds a broker
// subscription until it ends or is closed.
func (s *Source) OpenRoom(ctx context.Context, room string, viewer store.UserRef, after store.MessageID) (*Room, error) {
	m, err := s.Store.Membership(ctx, room, viewer.Login)
	if err != nil {
		return nil, err
	}
	var windows []store.Window
	if m.Kind == store.PrivateGroup {
		conv, err := s.Store.Conversation(ctx, viewer.Login, room)
		if errors.Is(err, store.ErrNotFound) {
			// Never a member: a group is invisible to who is not in it.
			return nil, fmt.Errorf("room %q: %w", room, store.ErrNotFound)
		}
		if err != nil {
			return nil, err
		}
		windows = conv.Windows
		if w := conv.Windows; len(w) > 0 && !after.IsZero() {
			if start := store.MinMessageID(w[len(w)-1].From); after.Compare(start) < 0 {
				after = start
			}
		}
	}
	if !m.Participant {
		return nil, NotParticipant(room, viewer)
	}
	floor := after
	if floor.IsZero() {
		floor = store.MinMessageID(time.Now())
	}
	sub, err := s.subscribe(ctx, broker.RoomTopic(room))
	if err != nil {
		return nil, err
	}
	return &Room{src: s, room: room, viewer: viewer, sub: sub, after: after, floor: floor, windows: windows}, nil
}

// Viewer is the subscriber the stream was opened for.
func (r *Room) Viewer() store.UserRef { return r.viewer }

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
		if !r.after.IsZero() {
			if ok, err := r.catchUp(ctx, r.after, emit); !ok {
				return true, err
			}
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
			if ok, err := r.catchUp(ctx, r.seen.resumeFrom(r.floor), emit); !ok {
				return true, err
			}
			if ok, err := r.stillFollowing(ctx, emit); !ok {
				return true, err
			}
			continue
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
	return ev.Kind == store.RoomDeleted || store.EndsMembership(ev, r.viewer.Login)
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
	m, err := r.src.Store.Membership(ctx, r.room, r.viewer.Login)
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
	if !r.seen.first(ev.ID) || !r.mayRead(ev.Message) {
		return true
	}
	return emit(ev)
}

// mayRead reports whether the viewer may read m, a message an event
// carries (nil: none): in a private group, one posted in their windows.
func (r *Room) mayRead(m *store.Message) bool {
	return m == nil || r.windows == nil || store.InWindows(r.windows, m.ID.Time())
}
