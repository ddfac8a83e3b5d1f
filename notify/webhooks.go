package notify

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/killrchat/chatql/notify/webhook"
	"github.com/killrchat/chatql/store"
)

// Deliverer posts the rooms' events to their webhooks: durably, in the
// order of each room's event log, at least once.
//
// The room's event log, written in the same store operation as each
// change, is the outbox: a webhook's cursor is the id of the last event its
// receiver acknowledged (2xx), kept in the store and moved only then. Every
// Poll the deliverer reads the listing of all webhooks (one small read)
// and, for each live webhook whose retry is due and that it is not busy
// with, takes the webhook's lease; the holder reads the room's events after
// the cursor and posts them one by one, so one instance at a time delivers
// to a webhook, and each event waits for the one before it. Polling, not
// the broker's room topics, tells it of new events: it needs no
// subscription per room, survives a lost broker message, and costs a read
// a second whatever the traffic; an event reaches its webhook within Poll
// and Settle.
//
// A failed attempt is retried after Retry tells how long (webhook.Next's
// schedule, or the receiver's Retry-After); the failures, the last error
// and the time of the next attempt are stored, so another instance
// resumes the schedule. Once the event failed for good (every attempt, or
// 410 Gone) the webhook is dead, with the event it died on, and nothing
// is delivered to it until it is revived.
type Deliverer struct {
	Store interface {
		store.Webhooks
		store.EventLog
	}
	Sender *webhook.Sender
	// Body is the JSON payload of an event (chat.WebhookBody).
	Body func(store.Event) ([]byte, error)
	// Holder names this instance in the webhooks' leases.
	Holder string
	Log    *slog.Logger
	// Poll is how often the listing of webhooks is read (DefaultPoll when
	// zero).
	Poll time.Duration
	// Settle is how old an event's id must be before it is delivered
	// (DefaultSettle when zero): ids are taken before the writes that log
	// them, which land in any order, so an event is delivered once every
	// write of a smaller id has surely landed, and the cursor never passes
	// one that has not.
	Settle time.Duration
	// Retry says whether and after how long to retry after attempt number
	// attempt ended with r (webhook.Next when nil).
	Retry func(attempt int, r webhook.Result) (time.Duration, bool)

	mu   sync.Mutex
	busy map[string]bool
	// delivered counts the events acknowledged by receivers.
	delivered atomic.Uint64
}

// The deliverer's defaults.
const (
	DefaultSettle    = 2 * time.Second
	webhookLeaseTTL  = 30 * time.Second
	webhookPageSize  = 100
	maxWebhookErrLen = 300
)

// Delivered is how many events this deliverer's receivers acknowledged.
func (d *Deliverer) Delivered() uint64 { return d.delivered.Load() }

// Run delivers until ctx ends, and waits for the deliveries under way.
func (d *Deliverer) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	poll := d.Poll
	if poll <= 0 {
		poll = DefaultPoll
	}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		d.startDue(ctx, &wg)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// startDue starts draining each live webhook whose retry is due and that
// this instance is not busy with.
func (d *Deliverer) startDue(ctx context.Context, wg *sync.WaitGroup) {
	ws, err := d.Store.AllWebhooks(ctx)
	if err != nil {
		if ctx.Err() == nil {
			d.Log.WarnContext(ctx, "webhooks: listing failed", "err", err)
		}
		return
	}
	now := time.Now()
	for _, w := range ws {
		if w.Dead || w.NextAttempt.After(now) || !d.claim(w.ID) {
			continue
		}
		wg.Go(func() {
			defer d.release(w.ID)
			if err := d.drain(ctx, w.ID); err != nil && ctx.Err() == nil {
				d.Log.WarnContext(ctx, "webhooks: delivery failed", "webhook", w.ID, "room", w.Room, "err", err)
			}
		})
	}
}

// claim marks the webhook busy here, reporting false if it was.
func (d *Deliverer) claim(id string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.busy[id] {
		return false
	}
	if d.busy == nil {
		d.busy = map[string]bool{}
	}
	d.busy[id] = true
	return true
}

func (d *Deliverer) release(id string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.busy, id)
}

// drain delivers the webhook's settled events after its cursor while it
// holds the lease, until none is left or an attempt fails.
func (d *Deliverer) drain(ctx context.Context, id string) error {
	renewed, held, err := d.lease(ctx, id)
	if err != nil || !held {
		return err
	}
	// Read after taking the lease: the previous holder may have moved on.
	w, err := d.Store.Webhook(ctx, id)
	if err != nil || w.Dead || w.NextAttempt.After(time.Now()) {
		return ignoreNotFound(err)
	}
	target, err := d.target(w)
	if err != nil {
		return d.die(ctx, w, store.MessageID{}, err.Error()) // a secret that cannot sign
	}
	for {
		events, err := d.settled(ctx, w)
		if err != nil || len(events) == 0 {
			return err
		}
		for _, e := range events {
			if time.Since(renewed) > webhookLeaseTTL/3 {
				if renewed, held, err = d.lease(ctx, id); err != nil || !held {
					return err
				}
			}
			ok, err := d.deliver(ctx, &w, target, e)
			if err != nil || !ok {
				return err
			}
		}
	}
}

// lease takes or renews the webhook's lease, returning when.
func (d *Deliverer) lease(ctx context.Context, id string) (time.Time, bool, error) {
	at := time.Now()
	held, err := d.Store.LeaseWebhook(ctx, id, d.Holder, webhookLeaseTTL)
	return at, held, err
}

// target is where w's events go.
func (d *Deliverer) target(w store.Webhook) (webhook.Target, error) {
	secret, err := webhook.ParseSecret(w.Secret)
	return webhook.Target{URL: w.URL, Secret: secret}, err
}

// settled reads a page of w's events after its cursor, up to those too
// recent to be settled.
func (d *Deliverer) settled(ctx context.Context, w store.Webhook) ([]store.Event, error) {
	events, err := d.Store.RoomEvents(ctx, w.Room, w.Cursor, webhookPageSize)
	if err != nil {
		return nil, err
	}
	settle := d.Settle
	if settle <= 0 {
		settle = DefaultSettle
	}
	horizon := time.Now().Add(-settle)
	for i, e := range events {
		if e.ID.Time().After(horizon) {
			return events[:i], nil
		}
	}
	return events, nil
}

// deliver makes one attempt at e and records its outcome in w's state:
// the cursor moves past e when it was delivered (ok); otherwise the
// failure is counted, and the webhook waits for its retry or dies.
func (d *Deliverer) deliver(ctx context.Context, w *store.Webhook, target webhook.Target, e store.Event) (ok bool, err error) {
	body, err := d.Body(e)
	if err != nil {
		return false, err
	}
	r := d.Sender.Deliver(ctx, target, webhook.Message{ID: e.ID.String(), Body: body})
	if ctx.Err() != nil {
		return false, nil // shutting down: the attempt does not count
	}
	if r.Outcome == webhook.Delivered {
		w.WebhookState = store.WebhookState{Cursor: e.ID, LastDeliveredAt: time.Now()}
		if err := d.Store.SetWebhookState(ctx, w.ID, w.WebhookState); err != nil {
			return false, err
		}
		d.delivered.Add(1)
		return true, nil
	}
	return false, d.failed(ctx, w, e, r)
}

// failed records the failed attempt at e, and when to try again, or that
// the webhook died on it.
func (d *Deliverer) failed(ctx context.Context, w *store.Webhook, e store.Event, r webhook.Result) error {
	attempt := w.FailedAttempts + 1
	msg := errorText(r)
	retry := d.Retry
	if retry == nil {
		retry = webhook.Next
	}
	delay, again := retry(attempt, r)
	if !again {
		w.FailedAttempts = attempt
		return d.die(ctx, *w, e.ID, msg)
	}
	w.FailedAttempts, w.LastError, w.NextAttempt = attempt, msg, time.Now().Add(delay)
	return d.Store.SetWebhookState(ctx, w.ID, w.WebhookState)
}

// die records that w died on the event, with why.
func (d *Deliverer) die(ctx context.Context, w store.Webhook, event store.MessageID, why string) error {
	w.Dead, w.DeadEvent, w.LastError, w.NextAttempt = true, event, why, time.Time{}
	d.Log.WarnContext(ctx, "webhooks: webhook died", "webhook", w.ID, "room", w.Room, "event", event, "err", why)
	return d.Store.SetWebhookState(ctx, w.ID, w.WebhookState)
}

// errorText explains a failed attempt, briefly.
func errorText(r webhook.Result) string {
	msg := "failed"
	if r.Err != nil {
		msg = r.Err.Error()
	}
	if len(msg) > maxWebhookErrLen {
		msg = msg[:maxWebhookErrLen]
	}
	return msg
}

// ignoreNotFound is err, but nil for a webhook removed meanwhile.
func ignoreNotFound(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}
