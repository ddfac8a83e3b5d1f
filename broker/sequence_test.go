package broker

import (
	"errors"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

// loggedEvent is a room event with an id, as the log holds it.
func loggedEvent(room, author string, i int) Event {
	ev := testEvent(author, i)
	ev.Room, ev.Message.Room = room, room
	ev.ID = ev.Message.ID
	return ev
}

// A room's logged events published by two instances are numbered in the
// order every subscriber gets them; an event without an id (nothing logs
// it) has no number. The sequence tells what followed a place, and refuses
// a place it does not hold: another event there, one to come, one fallen
// out of what it keeps, or one of a sequence ended by a lost event (whose
// Resync comes first, then a sequence from 1 again).
func TestRedisSequencesRoomEvents(t *testing.T) {
	url := redisURL(t)
	for _, mode := range []struct {
		name string
		opts []RedisOption
	}{{"broadcast", nil}, {"sharded", []RedisOption{WithSharded(true)}}} {
		t.Run(mode.name, func(t *testing.T) {
			ctx := t.Context()
			prefix := testPrefix(t)
			a, b := newTestRedis(t, url, prefix, mode.opts...), newTestRedis(t, url, prefix, mode.opts...)
			topic := RoomTopic("seq")
			sub := subscribe(t, b, topic)
			const n = 40
			for i := range n {
				publish(t, []*Redis{a, b}[i%2], topic, loggedEvent("seq", "p", i))
				if i == n/2 {
					publish(t, a, topic, Event{Kind: store.TypingStarted, Room: "seq", User: store.UserRef{Login: "p"}})
				}
			}
			var got []store.Cursor
			for len(got) < n {
				ev := recv(t, sub, 5*time.Second)
				if ev.ID.IsZero() {
					if ev.Seq != 0 {
						t.Fatalf("an event without an id came numbered %d", ev.Seq)
					}
					continue
				}
				got = append(got, store.Cursor{ID: ev.ID, Seq: ev.Seq})
			}
			for i, c := range got {
				if c.Seq != uint64(i+1) {
					t.Fatalf("event %d arrived at %d, want %d", i, c.Seq, i+1)
				}
			}

			next, ok, err := a.SequenceAfter(ctx, "seq", got[9], 100)
			if err != nil || !ok || len(next) != n-10 {
				t.Fatalf("after the 10th: %d places, held %v, err %v; want %d", len(next), ok, err, n-10)
			}
			for i, c := range next {
				if c != got[10+i] {
					t.Fatalf("place %d after the 10th is %+v, want %+v", i, c, got[10+i])
				}
			}
			if next, ok, err := a.SequenceAfter(ctx, "seq", got[9], 5); err != nil || !ok || len(next) != 5 || next[4] != got[14] {
				t.Fatalf("five after the 10th: %+v, held %v, err %v", next, ok, err)
			}
			// A message's cursor from a page of history is looked up by id.
			if next, ok, err := a.SequenceAfter(ctx, "seq", store.Cursor{ID: got[9].ID}, 100); err != nil || !ok || len(next) != n-10 || next[0] != got[10] {
				t.Fatalf("after the 10th's id: %d places, held %v, err %v", len(next), ok, err)
			}
			if next, ok, err := b.SequenceAfter(ctx, "seq", got[n-1], 100); err != nil || !ok || len(next) != 0 {
				t.Fatalf("after the last: %+v, held %v, err %v; want nothing, held", next, ok, err)
			}
			for name, at := range map[string]store.Cursor{
				"another event":      {ID: got[4].ID, Seq: got[3].Seq},
				"an id without one":  {ID: store.NewMessageID()},
				"a place to come":    {ID: got[3].ID, Seq: n + 5},
				"another room's too": {ID: store.NewMessageID(), Seq: 1},
			} {
				if next, ok, err := a.SequenceAfter(ctx, "seq", at, 100); err != nil || ok {
					t.Errorf("%s: %d places, held %v, err %v; want it not held", name, len(next), ok, err)
				}
			}

			// A node that forgot the scripts (restarted, failed over, or
			// flushed) runs them in full, once: the next event comes
			// numbered, once.
			if err := adminClient(t, url).ScriptFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			for i := range 2 {
				publish(t, a, topic, loggedEvent("seq", "p", n+i))
				if ev := recv(t, sub, 5*time.Second); ev.Seq != uint64(n+1+i) {
					t.Fatalf("after the scripts were flushed: an event at %d, want %d", ev.Seq, n+1+i)
				}
			}

			// Past what is kept, the oldest places are no longer held.
			sub.Close()
			for i := range sequenceKept + 40 {
				publish(t, a, topic, loggedEvent("seq", "q", i))
			}
			if err := a.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			if _, ok, err := a.SequenceAfter(ctx, "seq", got[0], 10); err != nil || ok {
				t.Fatalf("the first place after %d more events: held %v, err %v; want it fallen out", sequenceKept+40, ok, err)
			}

			// A lost event ends the sequence: its Resync, then a new one.
			sub = subscribe(t, b, topic)
			a.dropped(topic, errors.New("lost for the test"))
			if ev := recv(t, sub, 5*time.Second); ev.Kind != Resync {
				t.Fatalf("first event after a lost one is %+v, want a Resync", ev)
			}
			publish(t, b, topic, loggedEvent("seq", "p", 0))
			if ev := recv(t, sub, 5*time.Second); ev.Seq != 1 {
				t.Fatalf("the first event after the loss is at %d, want 1", ev.Seq)
			}
			if _, ok, err := a.SequenceAfter(ctx, "seq", got[n-1], 10); err != nil || ok {
				t.Fatalf("a place of the ended sequence: held %v, err %v; want not", ok, err)
			}
		})
	}
}

// A wire event carries the place Redis wrote in.
func TestWireEventCarriesItsPlace(t *testing.T) {
	ev, err := decodeEvent([]byte(`{"seq":12,"v":4,"kind":"MESSAGE_POSTED","room":"tea","user":{"login":"alice"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if ev.Seq != 12 {
		t.Fatalf("decoded place %d", ev.Seq)
	}
}
