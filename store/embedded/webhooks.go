package embedded

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/killrchat/chatql/store"
)

var _ store.Webhooks = (*DB)(nil)

// webhookRow is a row of webhooks; the id is in the key. Times are kept to
// the millisecond, as Cassandra's timestamps keep them.
type webhookRow struct {
	Room            string          `json:"r"`
	URL             string          `json:"u"`
	Secret          string          `json:"s"`
	CreatedBy       string          `json:"b"`
	CreatedAt       time.Time       `json:"at"`
	Cursor          store.MessageID `json:"c,omitzero"`
	FailedAttempts  int             `json:"f,omitempty"`
	NextAttempt     time.Time       `json:"n,omitzero"`
	LastError       string          `json:"e,omitempty"`
	LastDeliveredAt time.Time       `json:"d,omitzero"`
	Dead            bool            `json:"x,omitempty"`
	DeadEvent       store.MessageID `json:"xe,omitzero"`
}

// rowOfWebhook is the row of w.
func rowOfWebhook(w store.Webhook) webhookRow {
	r := webhookRow{Room: w.Room, URL: w.URL, Secret: w.Secret, CreatedBy: w.CreatedBy, CreatedAt: millis(w.CreatedAt)}
	r.setState(w.WebhookState)
	return r
}

// setState copies st into the row.
func (r *webhookRow) setState(st store.WebhookState) {
	r.Cursor, r.FailedAttempts, r.NextAttempt, r.LastError = st.Cursor, st.FailedAttempts, millis(st.NextAttempt), st.LastError
	r.LastDeliveredAt, r.Dead, r.DeadEvent = millis(st.LastDeliveredAt), st.Dead, st.DeadEvent
}

// webhook is the webhook of id the row holds.
func (r webhookRow) webhook(id string) store.Webhook {
	return store.Webhook{
		ID: id, Room: r.Room, URL: r.URL, Secret: r.Secret, CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt,
		WebhookState: store.WebhookState{
			Cursor: r.Cursor, FailedAttempts: r.FailedAttempts, NextAttempt: r.NextAttempt, LastError: r.LastError,
			LastDeliveredAt: r.LastDeliveredAt, Dead: r.Dead, DeadEvent: r.DeadEvent,
		},
	}
}

// millis is t in UTC to the millisecond; the zero time stays zero.
func millis(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC().Truncate(time.Millisecond)
}

// AddWebhook counts and writes under the partition's lock, so the cap
// holds exactly here.
func (db *DB) AddWebhook(ctx context.Context, w store.Webhook) error {
	if w.ID == "" || w.Room == "" || w.URL == "" || w.Secret == "" {
		return store.Invalidf("invalid webhook: an id, a room, a URL and a secret are needed")
	}
	end, err := db.beginLocked(ctx, webhooksPartition())
	if err != nil {
		return err
	}
	defer end()
	all, err := db.allWebhooks(ctx)
	if err != nil {
		return err
	}
	if n := len(ofRoom(all, w.Room)); n >= store.MaxWebhooks {
		return store.Invalidf("invalid webhook: room %s has %d already, the most it may", w.Room, n)
	}
	if w.CreatedAt.IsZero() {
		w.CreatedAt = time.Now()
	}
	b := db.batch()
	b.set(webhookKey(w.ID), rowOfWebhook(w))
	if err := b.commit(); err != nil {
		return fmt.Errorf("adding webhook %s of room %s: %w", w.ID, w.Room, err)
	}
	return nil
}

func (db *DB) Webhook(ctx context.Context, id string) (store.Webhook, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return store.Webhook{}, err
	}
	defer end()
	row, found, err := getRow[webhookRow](db, webhookKey(id))
	switch {
	case err != nil:
		return store.Webhook{}, fmt.Errorf("webhook %s: %w", id, err)
	case !found:
		return store.Webhook{}, fmt.Errorf("%w: webhook %s", store.ErrNotFound, id)
	}
	return row.webhook(id), nil
}

// RoomWebhooks reads the partition and keeps the room's, oldest first.
func (db *DB) RoomWebhooks(ctx context.Context, room string) ([]store.Webhook, error) {
	all, err := db.AllWebhooks(ctx)
	if err != nil {
		return nil, err
	}
	return ofRoom(all, room), nil
}

// ofRoom keeps the webhooks of room, oldest first.
func ofRoom(all []store.Webhook, room string) []store.Webhook {
	mine := slices.DeleteFunc(all, func(w store.Webhook) bool { return w.Room != room })
	slices.SortStableFunc(mine, func(a, b store.Webhook) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return mine
}

func (db *DB) AllWebhooks(ctx context.Context) ([]store.Webhook, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	return db.allWebhooks(ctx)
}

// allWebhooks scans the partition, in id order.
func (db *DB) allWebhooks(ctx context.Context) ([]store.Webhook, error) {
	p := webhooksPartition()
	out := []store.Webhook{}
	err := db.scan(ctx, p, p.end(), false, func(k, v []byte) (bool, error) {
		row, err := decode[webhookRow](v)
		if err != nil {
			return false, err
		}
		id, _, err := parseStr(k[len(p):])
		out = append(out, row.webhook(id))
		return err == nil, err
	})
	if err != nil {
		return nil, fmt.Errorf("the webhooks: %w", err)
	}
	return out, nil
}

// RemoveWebhook deletes the row and the lease under the partition's lock,
// which SetWebhookState holds too.
func (db *DB) RemoveWebhook(ctx context.Context, id string) error {
	end, err := db.beginLocked(ctx, webhooksPartition())
	if err != nil {
		return err
	}
	defer end()
	b := db.batch()
	b.delete(webhookKey(id))
	b.delete(webhookLeaseKey(id))
	if err := b.commit(); err != nil {
		return fmt.Errorf("removing webhook %s: %w", id, err)
	}
	return nil
}

// SetWebhookState rewrites the row under the partition's lock, if it is
// still there.
func (db *DB) SetWebhookState(ctx context.Context, id string, st store.WebhookState) error {
	end, err := db.beginLocked(ctx, webhooksPartition())
	if err != nil {
		return err
	}
	defer end()
	k := webhookKey(id)
	row, found, err := getRow[webhookRow](db, k)
	if err != nil || !found {
		return err
	}
	row.setState(st)
	b := db.batch()
	b.set(k, row)
	if err := b.commit(); err != nil {
		return fmt.Errorf("setting the state of webhook %s: %w", id, err)
	}
	return nil
}

// LeaseWebhook takes or renews the webhook's lease (see lease).
func (db *DB) LeaseWebhook(ctx context.Context, id, holder string, ttl time.Duration) (bool, error) {
	if id == "" || holder == "" || ttl <= 0 {
		return false, store.Invalidf("lease of webhook %q: an id, a holder and a positive ttl are needed", id)
	}
	return db.lease(ctx, webhookLeaseKey(id), "webhook "+id, holder, ttl)
}
