package chat

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/chatql/broker"
	"github.com/killrchat/chatql/store"
)

// roomOrderService is a Service with an in-process broker, and a
// subscription to room's events.
func roomOrderService(t *testing.T, room string) (*Service, *broker.Subscription) {
	t.Helper()
	b := broker.NewLocal(4096)
	t.Cleanup(func() { b.Close() })
	r := &Service{Broker: b, Log: slog.New(slog.DiscardHandler)}
	return r, subscribeRoom(t, r, room)
}

// subscribeRoom subscribes to room's events on r's broker.
func subscribeRoom(t *testing.T, r *Service, room string) *broker.Subscription {
	t.Helper()
	sub, err := r.Broker.Subscribe(t.Context(), broker.RoomTopic(room))
	if err != nil {
		t.Fatal(err)
	}
	return sub
}

func posted(room string, id store.MessageID) store.Event {
	return store.PostedEvent(store.Message{Room: room, ID: id, Author: store.UserRef{Login: "alice"}, Content: id.String()})
}

// next is the next event of sub, within a few seconds.
func next(t *testing.T, sub *broker.Subscription) store.MessageID {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ev, ok := sub.Next(ctx)
	if !ok {
		t.Fatalf("no event: %v", sub.Err())
	}
	return ev.ID
}

// Two writes of a room that take their ids in the other order than they
// end go out in the order of their ids; a write that ends without an event
// releases those it held.
func TestRoomWritesGoOutInIDOrder(t *testing.T) {
	r, sub := roomOrderService(t, "hall")
	ctx := t.Context()

	first, second := r.beginRoomWrite(ctx, "hall"), r.beginRoomWrite(ctx, "hall")
	small := store.NewMessageID() // taken by the second write
	large := store.NewMessageID() // taken by the first
	handed := make(chan struct{})
	go func() {
		defer close(handed)
		first.publish(posted("hall", large)) // held by the second write, in progress
	}()
	select {
	case <-handed:
		t.Fatal("an event went out while a write that may log a smaller id was in progress")
	case <-time.After(50 * time.Millisecond):
	}
	second.publish(posted("hall", small))
	<-handed
	if a, b := next(t, sub), next(t, sub); a != small || b != large {
		t.Fatalf("events went out as %v then %v; want %v then %v", a, b, small, large)
	}

	// A write that fails (ends with no event) holds nothing afterwards.
	failing, ok := r.beginRoomWrite(ctx, "hall"), r.beginRoomWrite(ctx, "hall")
	id := store.NewMessageID()
	handed = make(chan struct{})
	go func() {
		defer close(handed)
		ok.publish(posted("hall", id))
	}()
	failing.end()
	<-handed
	if got := next(t, sub); got != id {
		t.Fatalf("after a failed write: %v, want %v", got, id)
	}
	if n := len(r.roomLines.lines); n != 0 {
		t.Fatalf("%d lines left with no write in progress", n)
	}
	failing.end() // again: nothing happens
}

// A write in progress for longer than maxRoomWriteHold stops holding the
// line: the events behind it go out without it.
func TestRoomWriteHoldIsBounded(t *testing.T) {
	r, sub := roomOrderService(t, "hall")
	ctx := t.Context()
	stuck := r.beginRoomWrite(ctx, "hall")
	defer stuck.end()
	w := r.beginRoomWrite(ctx, "hall")
	id := store.NewMessageID()
	start := time.Now()
	w.publish(posted("hall", id)) // returns once the event went out
	if waited := time.Since(start); waited < maxRoomWriteHold/2 {
		t.Fatalf("the event went out %v after it was handed over, while an earlier write was in progress for less than %v", waited, maxRoomWriteHold)
	}
	if got := next(t, sub); got != id {
		t.Fatalf("got %v, want %v", got, id)
	}
}

// Many writes at once, each taking its id at some point after its place
// and ending after a random while: their events go out in id order, each
// once, and the rooms' lines are gone at the end.
func TestRoomWritesInOrderUnderLoad(t *testing.T) {
	r, sub := roomOrderService(t, "hall")
	other := subscribeRoom(t, r, "den")
	ctx := t.Context()
	const writers, each = 8, 100
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			for k := range each {
				room := "hall"
				if (i+k)%3 == 0 {
					room = "den"
				}
				w := r.beginRoomWrite(ctx, room)
				time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
				id := store.NewMessageID()
				time.Sleep(time.Duration(rand.IntN(500)) * time.Microsecond)
				if k%10 == 9 {
					w.end() // a failed write
					continue
				}
				w.publish(posted(room, id))
				w.end()
			}
		})
	}
	wg.Wait()
	for name, s := range map[string]*broker.Subscription{"hall": sub, "den": other} {
		var last store.MessageID
		seen := map[store.MessageID]bool{}
		for s.Pending() {
			id := next(t, s)
			if id.Compare(last) <= 0 {
				t.Fatalf("%s: %v went out after %v", name, id, last)
			}
			if seen[id] {
				t.Fatalf("%s: %v went out twice", name, id)
			}
			seen[id], last = true, id
		}
		if len(seen) == 0 {
			t.Fatalf("%s: no event went out", name)
		}
	}
	if n := len(r.roomLines.lines); n != 0 {
		t.Fatalf("%d lines left with no write in progress", n)
	}
}

// An event goes out though the request that wrote it has ended (its client
// went away after the store had the change): nothing else would tell the
// subscribers of it.
func TestPublishOutlivesItsRequest(t *testing.T) {
	r, sub := roomOrderService(t, "hall")
	ctx, cancel := context.WithCancel(t.Context())
	w := r.beginRoomWrite(ctx, "hall")
	id := store.NewMessageID()
	cancel()
	w.publish(posted("hall", id))
	if got := next(t, sub); got != id {
		t.Fatalf("got %v, want %v", got, id)
	}
}
