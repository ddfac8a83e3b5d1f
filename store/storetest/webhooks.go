package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

// newWebhook returns a webhook of room, registered at.
func newWebhook(room string, at time.Time) store.Webhook {
	id := "wh_" + randomSuffix()
	return store.Webhook{
		ID: id, Room: room, URL: "https://hooks.example.com/" + id,
		Secret: "whsec_" + id, CreatedBy: "someone", CreatedAt: at.UTC().Truncate(time.Millisecond),
	}
}

// testWebhooksLifecycle adds, lists, updates and removes webhooks, and
// checks the cap of a room.
func testWebhooksLifecycle(t *testing.T, s store.Store) {
	ctx := newContext(t)
	room, other := newRoomName(t, "hooked"), newRoomName(t, "hooked")
	t0 := time.Now().Add(-time.Hour).UTC().Truncate(time.Millisecond)
	var added []store.Webhook
	for i := range store.MaxWebhooks {
		w := newWebhook(room, t0.Add(time.Duration(store.MaxWebhooks-i)*time.Second))
		if err := s.AddWebhook(ctx, w); err != nil {
			t.Fatalf("AddWebhook %d = %v", i, err)
		}
		added = append([]store.Webhook{w}, added...) // the later added are older
	}
	if err := s.AddWebhook(ctx, newWebhook(room, t0)); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("AddWebhook past the cap = %v, want ErrInvalid", err)
	}
	elsewhere := newWebhook(other, t0)
	if err := s.AddWebhook(ctx, elsewhere); err != nil {
		t.Fatalf("AddWebhook to another room = %v", err)
	}
	checkWebhooks(t, ctx, s, room, added)
	checkWebhooks(t, ctx, s, other, []store.Webhook{elsewhere})

	st := store.WebhookState{
		Cursor: store.NewMessageID(), FailedAttempts: 3, NextAttempt: t0.Add(time.Minute), LastError: "503 Service Unavailable",
		LastDeliveredAt: t0.Add(2 * time.Second), Dead: true, DeadEvent: store.NewMessageID(),
	}
	w := added[4]
	if err := s.SetWebhookState(ctx, w.ID, st); err != nil {
		t.Fatalf("SetWebhookState = %v", err)
	}
	w.WebhookState = st
	got, err := s.Webhook(ctx, w.ID)
	if err != nil || got != w {
		t.Fatalf("Webhook after SetWebhookState = %+v, %v, want %+v", got, err, w)
	}
	if err := s.SetWebhookState(ctx, w.ID, store.WebhookState{Cursor: st.Cursor}); err != nil {
		t.Fatalf("SetWebhookState back = %v", err)
	}
	w.WebhookState = store.WebhookState{Cursor: st.Cursor}
	if got, err := s.Webhook(ctx, w.ID); err != nil || got != w {
		t.Fatalf("Webhook after a revival = %+v, %v, want %+v", got, err, w)
	}

	if err := s.RemoveWebhook(ctx, w.ID); err != nil {
		t.Fatalf("RemoveWebhook = %v", err)
	}
	if err := s.RemoveWebhook(ctx, w.ID); err != nil {
		t.Fatalf("RemoveWebhook again = %v", err)
	}
	if _, err := s.Webhook(ctx, w.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Webhook of a removed one = %v, want ErrNotFound", err)
	}
	if err := s.SetWebhookState(ctx, w.ID, st); err != nil {
		t.Fatalf("SetWebhookState of a removed one = %v", err)
	}
	if _, err := s.Webhook(ctx, w.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("SetWebhookState brought back a removed webhook: %v", err)
	}
	added = append(added[:4], added[5:]...)
	checkWebhooks(t, ctx, s, room, added)
	if err := s.AddWebhook(ctx, newWebhook(room, t0.Add(time.Hour))); err != nil {
		t.Fatalf("AddWebhook after a removal made room = %v", err)
	}
	if err := s.AddWebhook(ctx, store.Webhook{ID: "wh_" + randomSuffix(), Room: room}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("AddWebhook without URL and secret = %v, want ErrInvalid", err)
	}
}

// checkWebhooks compares the room's webhooks, and AllWebhooks' copies of
// them, with want.
func checkWebhooks(t *testing.T, ctx context.Context, s store.Store, room string, want []store.Webhook) {
	t.Helper()
	got, err := s.RoomWebhooks(ctx, room)
	if err != nil {
		t.Fatalf("RoomWebhooks(%s) = %v", room, err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("RoomWebhooks(%s):\n got %+v\nwant %+v", room, got, want)
	}
	all, err := s.AllWebhooks(ctx)
	if err != nil {
		t.Fatalf("AllWebhooks = %v", err)
	}
	byID := map[string]store.Webhook{}
	for i, w := range all {
		if i > 0 && all[i-1].ID >= w.ID {
			t.Fatalf("AllWebhooks out of id order: %s then %s", all[i-1].ID, w.ID)
		}
		byID[w.ID] = w
	}
	for _, w := range want {
		if byID[w.ID] != w {
			t.Fatalf("AllWebhooks has %+v, want %+v", byID[w.ID], w)
		}
	}
}

// testWebhookLease checks that a webhook's lease is one holder's until it
// runs out, renewed by its holder, and won by one of racing takers.
func testWebhookLease(t *testing.T, s store.Store) {
	ctx := newContext(t)
	id, ttl := "wh_"+randomSuffix(), 2*time.Second
	lease := func(holder string) bool {
		t.Helper()
		ok, err := s.LeaseWebhook(ctx, id, holder, ttl)
		if err != nil {
			t.Fatalf("LeaseWebhook(%s) = %v", holder, err)
		}
		return ok
	}
	if _, err := s.LeaseWebhook(ctx, id, "", ttl); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("LeaseWebhook without holder = %v, want ErrInvalid", err)
	}
	var (
		mu      sync.Mutex
		winners []string
		wg      sync.WaitGroup
	)
	for i := range 8 {
		holder := fmt.Sprintf("racer-%d", i)
		wg.Go(func() {
			if lease(holder) {
				mu.Lock()
				winners = append(winners, holder)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(winners) != 1 {
		t.Fatalf("racing takers won %v, want exactly one", winners)
	}
	h1 := winners[0]
	if lease("another") {
		t.Fatalf("another took the lease %s holds", h1)
	}
	time.Sleep(1200 * time.Millisecond)
	if !lease(h1) {
		t.Fatalf("%s could not renew its lease", h1)
	}
	time.Sleep(1200 * time.Millisecond)
	if lease("another") {
		t.Fatalf("another took the lease %s renewed", h1)
	}
	deadline := time.Now().Add(3 * ttl)
	for !lease("another") {
		if time.Now().After(deadline) {
			t.Fatalf("the lease of %s never ran out", h1)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
