package resolvers

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/killrchat/chatql/auth"
	"github.com/killrchat/chatql/broker"
	"github.com/killrchat/chatql/graph/model"
	"github.com/killrchat/chatql/store"
)

// rememberedIDs is how many delivered ids a stream keeps to recognise a
// repeat. Repeats come from a catch-up overlapping the live stream, which
// holds at most the subscriber queue (256 by default) of undelivered events,
// and from live events of several servers arriving slightly out of order.
const rememberedIDs = 1024

// RoomStream is one subscriber's view of a room: the stored messages after
// its cursor, then live events, with no gap and no duplicate. Transports
// open it with OpenRoomEvents and drive it with Run.
type RoomStream struct {
	r     *Resolver
	room  string
	me    store.UserRef
	sub   *broker.Subscription
	after store.MessageID
	// floor bounds what the stream may ever deliver: the resume cursor, or
	// the moment the live subscription started.
	floor store.MessageID

	// recent holds the last rememberedIDs delivered ids, oldest first, as a
	// ring once full (next is where the oldest is); newest is the highest.
	// Live events arrive in id order, so a repeat check is one comparison;
	// only an id older than newest (a catch-up overlapping the live events,
	// or servers' events slightly out of order) is looked for in recent.
	recent []store.MessageID
	next   int
	newest store.MessageID

	replayed bool // the first Pump has replayed after the cursor
	closed   atomic.Bool
}

// openRoomStreams counts the streams of this process whose subscription is
// live: opened, not yet closed.
var openRoomStreams atomic.Int64

// OpenRoomStreams is how many room event streams of this process are
// subscribed now, over every transport and server in it. Once it has
// grown, the new stream receives whatever is posted.
func OpenRoomStreams() int64 { return openRoomStreams.Load() }

// startedRoomStreams counts the streams this process ever subscribed.
var startedRoomStreams atomic.Int64

// StartedRoomStreams is how many room event streams this process has
// subscribed since it started. Unlike OpenRoomStreams, it grows with every
// new stream whatever other streams end meanwhile, so a caller that saw it
// grow knows a stream it opened is live.
func StartedRoomStreams() int64 { return startedRoomStreams.Load() }

// OpenRoomEvents checks that the caller may follow the room, then
// subscribes to its live events before anything is read from the store, so
// that nothing posted in between is missed. after is an optional resume
// cursor. The stream holds a broker subscription until Run returns.
func (r *Resolver) OpenRoomEvents(ctx context.Context, room string, after *string) (*RoomStream, error) {
	me, err := auth.UserFrom(ctx)
	if err != nil {
		return nil, err
	}
	resumeFrom, err := parseCursor(after)
	if err != nil {
		return nil, err
	}
	m, err := r.participant(ctx, room, me)
	if err != nil {
		return nil, err
	}
	if m.Kind == store.PrivateGroup && !resumeFrom.IsZero() {
		// Never replay from before the member's current window.
		windows, err := r.groupWindows(ctx, room, me)
		if err != nil {
			return nil, err
		}
		if start := store.MinMessageID(windows[len(windows)-1].From); resumeFrom.Compare(start) < 0 {
			resumeFrom = start
		}
	}
	floor := resumeFrom
	if floor.IsZero() {
		floor = store.MinMessageID(time.Now())
	}
	sub, err := r.Broker.Subscribe(ctx, broker.RoomTopic(room))
	if err != nil {
		return nil, err
	}
	openRoomStreams.Add(1)
	startedRoomStreams.Add(1)
	return &RoomStream{r: r, room: room, me: me, sub: sub, after: resumeFrom, floor: floor}, nil
}

// Viewer is the subscriber the stream was opened for.
func (s *RoomStream) Viewer() store.UserRef { return s.me }

// Run delivers the stream's events to emit, in order, until the room is
// deleted, the viewer leaves it, ctx ends or emit returns false (the
// subscriber is gone); those end it with nil. Otherwise it returns why the
// stream failed (the subscriber fell behind, the broker closed, the store
// failed); the client resumes with its last cursor. Events are shared with
// other subscribers: read, never modify. Run waits for events on the
// calling goroutine; transports that would rather not park a goroutine per
// subscriber drive the stream with Notify and Pump instead.
func (s *RoomStream) Run(ctx context.Context, emit func(*broker.Event) bool) error {
	for {
		if done, err := s.Pump(ctx, emit); done {
			return err
		}
		s.sub.Wait(ctx)
	}
}

// Notify has ready called whenever Pump has work: an event arrived or the
// subscription ended. ready runs on the delivering goroutine and must only
// schedule a Pump (see broker.Subscription.Notify). The first Pump, which
// replays what came after the cursor, is the caller's to schedule, and so
// is one when the context it passes to Pump ends.
func (s *RoomStream) Notify(ready func()) { s.sub.Notify(ready) }

// Pump delivers what is ready, as Run does, without waiting for more: the
// replay after the cursor on the first call, then the events queued. done
// reports that the stream has ended, with Run's error; it has then
// released its subscription. One Pump at a time per stream.
func (s *RoomStream) Pump(ctx context.Context, emit func(*broker.Event) bool) (done bool, err error) {
	defer func() {
		if done {
			s.Close()
		}
	}()
	if !s.replayed {
		s.replayed = true
		if !s.after.IsZero() {
			if ok, err := s.catchUp(ctx, s.after, emit); !ok {
				return true, err
			}
		}
	}
	for ctx.Err() == nil {
		ev, ended := s.sub.Poll()
		if ev == nil {
			if ended {
				return true, s.sub.Err()
			}
			return false, nil
		}
		if ev.Kind == broker.Resync {
			if ok, err := s.catchUp(ctx, s.resyncFrom(), emit); !ok {
				return true, err
			}
			continue
		}
		if !s.deliver(ev, emit) || s.ends(ev) {
			return true, nil
		}
	}
	return true, nil
}

// Ready reports whether Pump has work from the subscription: a queued
// event, or its end.
func (s *RoomStream) Ready() bool { return s.sub.Pending() }

// Close releases the stream's subscription; Pump and Run do when the
// stream ends. It is safe to call more than once.
func (s *RoomStream) Close() {
	if !s.closed.CompareAndSwap(false, true) {
		return
	}
	s.sub.Close()
	openRoomStreams.Add(-1)
}

// ends reports whether ev is the last event the subscriber may see.
func (s *RoomStream) ends(ev *broker.Event) bool {
	return ev.Kind == store.RoomDeleted || ev.Kind == store.ParticipantLeft && ev.User.Login == s.me.Login
}

// resyncFrom is where a catch-up starts after the broker may have lost
// events: the oldest id the stream still remembers (everything after it that
// it does not remember is new to the subscriber), or the stream's floor.
func (s *RoomStream) resyncFrom() store.MessageID {
	if len(s.recent) == 0 {
		return s.floor
	}
	oldest := s.recent[s.next%len(s.recent)]
	if oldest.Compare(s.floor) < 0 {
		return s.floor
	}
	return oldest
}

// catchUp delivers the stored messages after the cursor, oldest first. It
// reports false when the stream must end, with the store's error if any.
func (s *RoomStream) catchUp(ctx context.Context, after store.MessageID, emit func(*broker.Event) bool) (bool, error) {
	for {
		msgs, err := s.r.Store.MessagesAfter(ctx, s.room, after, replayPageSize)
		if err != nil {
			if ctx.Err() != nil {
				return false, nil
			}
			return false, err
		}
		for i := range msgs {
			ev := &broker.Event{Kind: store.MessagePosted, Room: s.room, Message: &msgs[i], User: msgs[i].Author}
			if !s.deliver(ev, emit) {
				return false, nil
			}
		}
		if len(msgs) < replayPageSize {
			return true, nil
		}
		after = msgs[len(msgs)-1].ID
	}
}

// deliver emits ev unless it was already delivered; false means the
// subscriber is gone. A MESSAGE_HIDDEN event is about a message delivered
// before: it is not a repeat of it.
func (s *RoomStream) deliver(ev *broker.Event, emit func(*broker.Event) bool) bool {
	if m := ev.Message; m != nil && ev.Kind != store.MessageHidden {
		if s.delivered(m.ID) {
			return true
		}
		s.remember(m.ID)
	}
	return emit(ev)
}

// delivered reports whether id is among the remembered delivered ids.
func (s *RoomStream) delivered(id store.MessageID) bool {
	if len(s.recent) == 0 || id.Compare(s.newest) > 0 {
		return false
	}
	for _, r := range s.recent {
		if r == id {
			return true
		}
	}
	return false
}

// remember records a delivered id, forgetting the oldest once
// rememberedIDs are kept: constant time, bounded memory.
func (s *RoomStream) remember(id store.MessageID) {
	if len(s.recent) == 0 || id.Compare(s.newest) > 0 {
		s.newest = id
	}
	if len(s.recent) < rememberedIDs {
		s.recent = append(s.recent, id)
		return
	}
	s.recent[s.next] = id
	s.next = (s.next + 1) % rememberedIDs
}

// RoomEventOf shapes a broker event as the API's RoomEvent.
func RoomEventOf(ev *broker.Event) *model.RoomEvent {
	out := &model.RoomEvent{Kind: model.RoomEventKind(ev.Kind), Room: ev.Room, Message: ev.Message, User: &ev.User}
	if ev.Message != nil {
		cursor := ev.Message.ID.String()
		out.Cursor = &cursor
	}
	return out
}

// channel runs the stream for gqlgen's subscription transports, which read
// events from a channel; why it failed goes to the transport (endStream).
// The stream runs in watched (from watchSession, derived from ctx), so it
// ends when the subscriber's session does.
func (s *RoomStream) channel(ctx, watched context.Context) <-chan *model.RoomEvent {
	out := make(chan *model.RoomEvent)
	go func() {
		defer close(out)
		err := s.Run(watched, func(ev *broker.Event) bool {
			select {
			case out <- RoomEventOf(ev):
				return true
			case <-watched.Done():
				return false
			}
		})
		s.r.endStream(ctx, whyEnded(ctx, watched, err))
	}()
	return out
}
