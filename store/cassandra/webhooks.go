package cassandra

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gocql/gocql"
	"github.com/killrchat/chatql/store"
)

var _ store.Webhooks = (*DB)(nil)

// webhookShard is the one partition of webhooks.
const webhookShard = 0

const (
	webhookColumns = `id, room, url, secret, created_by, created_at, cursor, failed_attempts, next_attempt, last_error, last_delivered_at, dead, dead_event`
	insertWebhook  = `INSERT INTO webhooks (shard, ` + webhookColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	selectWebhook  = `SELECT ` + webhookColumns + ` FROM webhooks WHERE shard = ? AND id = ?`
	selectWebhooks = `SELECT ` + webhookColumns + ` FROM webhooks WHERE shard = ?`
	deleteWebhook  = `DELETE FROM webhooks WHERE shard = ? AND id = ?`
	updateWebhook  = `UPDATE webhooks SET cursor = ?, failed_attempts = ?, next_attempt = ?, last_error = ?, last_delivered_at = ?, dead = ?, dead_event = ? WHERE shard = ? AND id = ?`

	selectWebhookLease = `SELECT holder FROM webhook_leases WHERE id = ?`
	insertWebhookLease = `INSERT INTO webhook_leases (id, holder) VALUES (?, ?) IF NOT EXISTS USING TTL ?`
	renewWebhookLease  = `UPDATE webhook_leases USING TTL ? SET holder = ? WHERE id = ? IF holder = ?`
	deleteWebhookLease = `DELETE FROM webhook_leases WHERE id = ?`
)

// webhookLease is the table of the webhooks' leases.
var webhookLease = leaseTable{
	name:   "webhook",
	insert: insertWebhookLease,
	renew:  renewWebhookLease,
	sel:    selectWebhookLease,
}

// AddWebhook counts the room's webhooks, then writes. The count is a read
// before the write, not a compare-and-set, as for push subscriptions:
// racing adds may each see room for one.
func (db *DB) AddWebhook(ctx context.Context, w store.Webhook) error {
	if err := checkWebhook(w); err != nil {
		return err
	}
	others, err := db.RoomWebhooks(ctx, w.Room)
	if err != nil {
		return err
	}
	if len(others) >= store.MaxWebhooks {
		return store.Invalidf("invalid webhook: room %s has %d already, the most it may", w.Room, len(others))
	}
	if w.CreatedAt.IsZero() {
		w.CreatedAt = time.Now()
	}
	st := w.WebhookState
	err = db.query(ctx, insertWebhook, webhookShard, w.ID, w.Room, w.URL, w.Secret, w.CreatedBy, w.CreatedAt,
		nullUUID(st.Cursor), st.FailedAttempts, nullTime(st.NextAttempt), st.LastError, nullTime(st.LastDeliveredAt), st.Dead, nullUUID(st.DeadEvent)).Exec()
	if err != nil {
		return fmt.Errorf("cassandra: add webhook %s of room %s: %w", w.ID, w.Room, err)
	}
	return nil
}

// checkWebhook refuses a webhook without an id, a room, a URL or a secret.
func checkWebhook(w store.Webhook) error {
	if w.ID == "" || w.Room == "" || w.URL == "" || w.Secret == "" {
		return store.Invalidf("invalid webhook: an id, a room, a URL and a secret are needed")
	}
	return nil
}

// Webhook reads one row; a row without url (a removal raced a state
// update) is no webhook.
func (db *DB) Webhook(ctx context.Context, id string) (store.Webhook, error) {
	w, err := scanWebhook(db.query(ctx, selectWebhook, webhookShard, id).Iter())
	switch {
	case errors.Is(err, gocql.ErrNotFound) || err == nil && w.URL == "":
		return store.Webhook{}, fmt.Errorf("%w: webhook %s", store.ErrNotFound, id)
	case err != nil:
		return store.Webhook{}, fmt.Errorf("cassandra: webhook %s: %w", id, err)
	}
	return w, nil
}

// scanWebhook reads the one row of iter.
func scanWebhook(iter *gocql.Iter) (store.Webhook, error) {
	ws, err := readWebhooks(iter)
	if err != nil {
		return store.Webhook{}, err
	}
	if len(ws) == 0 {
		return store.Webhook{}, gocql.ErrNotFound
	}
	return ws[0], nil
}

// readWebhooks reads the rows of iter, skipping those without url.
func readWebhooks(iter *gocql.Iter) ([]store.Webhook, error) {
	out := []store.Webhook{}
	for {
		var (
			w                 store.Webhook
			cursor, deadEvent gocql.UUID
		)
		st := &w.WebhookState
		if !iter.Scan(&w.ID, &w.Room, &w.URL, &w.Secret, &w.CreatedBy, &w.CreatedAt, &cursor, &st.FailedAttempts,
			&st.NextAttempt, &st.LastError, &st.LastDeliveredAt, &st.Dead, &deadEvent) {
			break
		}
		if w.URL == "" {
			continue
		}
		st.Cursor, st.DeadEvent = store.MessageID(cursor), store.MessageID(deadEvent)
		w.CreatedAt, st.NextAttempt, st.LastDeliveredAt = utcOrZero(w.CreatedAt), utcOrZero(st.NextAttempt), utcOrZero(st.LastDeliveredAt)
		out = append(out, w)
	}
	return out, iter.Close()
}

// utcOrZero returns t in UTC, or the zero time for a null timestamp.
func utcOrZero(t time.Time) time.Time {
	if t.IsZero() || t.Unix() == 0 && t.Nanosecond() == 0 {
		return time.Time{}
	}
	return t.UTC()
}

// nullUUID is id for a timeuuid column, nil for the zero id.
func nullUUID(id store.MessageID) any {
	if id.IsZero() {
		return nil
	}
	return gocql.UUID(id)
}

// nullTime is t for a timestamp column, nil for the zero time.
func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// RoomWebhooks reads the partition and keeps the room's.
func (db *DB) RoomWebhooks(ctx context.Context, room string) ([]store.Webhook, error) {
	all, err := db.AllWebhooks(ctx)
	if err != nil {
		return nil, err
	}
	mine := slices.DeleteFunc(all, func(w store.Webhook) bool { return w.Room != room })
	slices.SortStableFunc(mine, func(a, b store.Webhook) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return mine, nil
}

// AllWebhooks reads the partition, in id order.
func (db *DB) AllWebhooks(ctx context.Context) ([]store.Webhook, error) {
	ws, err := readWebhooks(db.query(ctx, selectWebhooks, webhookShard).Iter())
	if err != nil {
		return nil, fmt.Errorf("cassandra: webhooks: %w", err)
	}
	return ws, nil
}

// RemoveWebhook deletes the row and the lease.
func (db *DB) RemoveWebhook(ctx context.Context, id string) error {
	if err := db.query(ctx, deleteWebhook, webhookShard, id).Exec(); err != nil {
		return fmt.Errorf("cassandra: remove webhook %s: %w", id, err)
	}
	if err := db.query(ctx, deleteWebhookLease, id).Exec(); err != nil {
		return fmt.Errorf("cassandra: remove the lease of webhook %s: %w", id, err)
	}
	return nil
}

// SetWebhookState writes the state columns by a plain update. A webhook
// removed before (or racing) it is left a row without url, which readers
// skip; a read first keeps the common case, a gone webhook, clean.
func (db *DB) SetWebhookState(ctx context.Context, id string, st store.WebhookState) error {
	if _, err := db.Webhook(ctx, id); errors.Is(err, store.ErrNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	err := db.query(ctx, updateWebhook, nullUUID(st.Cursor), st.FailedAttempts, nullTime(st.NextAttempt), st.LastError,
		nullTime(st.LastDeliveredAt), st.Dead, nullUUID(st.DeadEvent), webhookShard, id).Exec()
	if err != nil {
		return fmt.Errorf("cassandra: set the state of webhook %s: %w", id, err)
	}
	return nil
}

// LeaseWebhook takes or renews the webhook's lease (see leaseTable.take).
func (db *DB) LeaseWebhook(ctx context.Context, id, holder string, ttl time.Duration) (bool, error) {
	if id == "" || holder == "" || ttl <= 0 {
		return false, store.Invalidf("lease of webhook %q: an id, a holder and a positive ttl are needed", id)
	}
	return webhookLease.take(ctx, db, id, holder, ttl)
}
