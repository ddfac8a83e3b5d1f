package stream

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/killrchat/chatql/broker"
	"github.com/killrchat/chatql/store"
)

// Inbox is one subscriber's stream of their own inbox events: those logged
// after its cursor, then the live ones, with no gap and no duplicate.
type Inbox struct {
	src    *Source
	viewer store.UserRef
	sub    *broker.Subscription
	after  store.MessageID
	floor  store.MessageID
	seen   seen
	reads  Reads
	closed atomic.Bool
	// presence is the subscription to the presence changes of the
	// viewer's direct-conversation peers (FollowPresence); nil if the
	// subscriber does not follow them.
	presence *broker.Subscription
	// forSync: the stream serves a sync (ForSync), which also gets the
	// RoomEntered hints and learns when the replay is over.
	forSync  bool
	caughtUp func()
}

// ForSync has the stream deliver the viewer's RoomEntered hints too, which
// an inbox subscriber never sees, and call caughtUp once the replay after
// the cursor is over (right away without a cursor). Call it before Run.
func (in *Inbox) ForSync(caughtUp func()) {
	in.forSync, in.caughtUp = true, caughtUp
}

// FollowPresence has the stream deliver the viewer's peers' PresenceChanged
// events too, from their own topic. Call it before Run.
func (in *Inbox) FollowPresence(ctx context.Context) error {
	sub, err := in.src.Broker.Subscribe(ctx, broker.UserPresenceTopic(in.viewer.Login))
	if err != nil {
		return err
	}
	in.presence = sub
	return nil
}

// deliver emits ev unless it was delivered before; false means the
// subscriber is gone.
func (in *Inbox) deliver(ev *store.Event, emit func(*store.Event) bool) bool {
	if ev.Kind == store.RoomEntered && !in.forSync {
		return true
	}
	return !in.seen.first(ev.ID, remembering(in.sub.Limit())) || emit(ev)
}

// Reads tells what a viewer reads of a conversation's messages: sees, or
// none (nil) if they may read none of it.
type Reads func(ctx context.Context, conversation string) (sees func(store.Message) bool, err error)

// OpenInbox subscribes to viewer's inbox events, then (in Run) replays
// those logged after the cursor (the zero id: from now on) about messages
// that reads (the viewer's reader's view; nil: all) lets them read.
func (s *Source) OpenInbox(ctx context.Context, viewer store.UserRef, after store.MessageID, reads Reads) (*Inbox, error) {
	floor := after
	if floor.IsZero() {
		floor = store.MinMessageID(time.Now())
	}
	sub, err := s.subscribe(ctx, broker.UserTopic(viewer.Login))
	if err != nil {
		return nil, err
	}
	return &Inbox{src: s, viewer: viewer, sub: sub, after: after, floor: floor, reads: reads}, nil
}

// Run delivers the stream's events to emit, in order, until ctx ends or
// emit returns false (nil), or the stream fails (the subscriber fell
// behind, the broker closed, the store failed). After a gap in the live
// events (a Resync) it catches up from the log. It closes the stream.
func (in *Inbox) Run(ctx context.Context, emit func(*store.Event) bool) error {
	defer in.Close()
	if !in.after.IsZero() {
		if ok, err := in.catchUp(ctx, in.after, emit); !ok {
			return err
		}
	}
	if in.caughtUp != nil {
		in.caughtUp()
	}
	wait := in.sub.Wait
	if in.presence != nil {
		// Two subscriptions: wait for either through Notify.
		wake := make(chan struct{}, 1)
		ready := func() {
			select {
			case wake <- struct{}{}:
			default:
			}
		}
		in.sub.Notify(ready)
		in.presence.Notify(ready)
		wait = func(ctx context.Context) bool {
			select {
			case <-wake:
				return true
			case <-ctx.Done():
				return false
			}
		}
	}
	for {
		if in.presence != nil {
			if ended, err := pumpPresence(in.presence, emit); ended {
				return err
			}
		}
		ev, ended := in.sub.Poll()
		switch {
		case ev == nil && ended:
			return in.sub.Err()
		case ev == nil:
			if !wait(ctx) {
				return nil
			}
		case ev.Kind == broker.Resync:
			if ok, err := in.catchUp(ctx, in.seen.resumeFrom(in.floor), emit); !ok {
				return err
			}
		case !in.deliver(ev, emit):
			return nil
		}
	}
}

// Close releases the stream's subscription; Run does when it returns.
func (in *Inbox) Close() {
	if in.closed.CompareAndSwap(false, true) {
		in.sub.Close()
		if in.presence != nil {
			in.presence.Close()
		}
		in.src.open.Add(-1)
	}
}

// catchUp delivers the logged events after the cursor, oldest first; false
// ends the stream (the subscriber left, or the store failed: its error).
// An event about a message the viewer may no longer read (of a group they
// were banned from since) is not replayed; live, none come after the ban.
func (in *Inbox) catchUp(ctx context.Context, after store.MessageID, emit func(*store.Event) bool) (bool, error) {
	views := map[string]func(store.Message) bool{} // by conversation, read once per catch-up
	for {
		events, err := in.src.Store.InboxEvents(ctx, in.viewer.Login, after, replayPage)
		if err != nil {
			if ctx.Err() != nil {
				return false, nil
			}
			return false, err
		}
		for i := range events {
			ev := &events[i]
			if ev.Message != nil && in.reads != nil {
				sees, known := views[ev.Room]
				if !known {
					if sees, err = in.reads(ctx, ev.Room); err != nil {
						return false, err
					}
					views[ev.Room] = sees
				}
				if sees == nil || !sees(*ev.Message) {
					continue
				}
			}
			if !in.deliver(ev, emit) {
				return false, nil
			}
		}
		if len(events) < replayPage {
			return true, nil
		}
		after = events[len(events)-1].ID
	}
}
