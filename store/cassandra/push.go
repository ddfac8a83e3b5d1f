package cassandra

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gocql/gocql"
	"github.com/killrchat/chatql/store"
)

var _ store.PushSubscriptions = (*DB)(nil)

const (
	insertPush       = `INSERT INTO push_subscriptions (login, endpoint, p256dh, auth, device, created_at, session) VALUES (?, ?, ?, ?, ?, ?, ?)`
	deletePush       = `DELETE FROM push_subscriptions WHERE login = ? AND endpoint = ?`
	deletePushOf     = `DELETE FROM push_subscriptions WHERE login = ?`
	selectPush       = `SELECT endpoint, p256dh, auth, device, created_at, session FROM push_subscriptions WHERE login = ?`
	setPushPreviews  = `UPDATE push_subscriptions SET previews = ? WHERE login = ?`
	selectPushPrevue = `SELECT previews FROM push_subscriptions WHERE login = ? LIMIT 1`
)

// AddPushSubscription counts login's subscriptions, then writes. The count
// is a read before the write, not a compare-and-set (a lightweight
// transaction on every add would buy an exact cap of a list that is only
// a bound on the work of a push): n adds of new endpoints racing may each
// see room for one, leaving login up to n-1 over the cap; the next add
// over it is refused.
func (db *DB) AddPushSubscription(ctx context.Context, login string, s store.PushSubscription) error {
	if s.Endpoint == "" {
		return store.Invalidf("push subscription of %q has no endpoint", login)
	}
	subs, err := db.PushSubscriptions(ctx, login)
	if err != nil {
		return err
	}
	others := 0
	for _, o := range subs {
		if o.Endpoint != s.Endpoint {
			others++
		}
	}
	if others >= store.MaxPushSubscriptions {
		return store.Invalidf("invalid push subscription: %s has %d already, the most one may", login, others)
	}
	if s.CreatedAt.IsZero() {
		s.CreatedAt = time.Now()
	}
	if err := db.query(ctx, insertPush, login, s.Endpoint, s.P256dh, s.Auth, s.Device, s.CreatedAt, s.Session).Exec(); err != nil {
		return fmt.Errorf("cassandra: add a push subscription of %q: %w", login, err)
	}
	return nil
}

func (db *DB) RemovePushSubscription(ctx context.Context, login, endpoint string) error {
	if err := db.query(ctx, deletePush, login, endpoint).Exec(); err != nil {
		return fmt.Errorf("cassandra: remove a push subscription of %q: %w", login, err)
	}
	return nil
}

// PushSubscriptions reads the partition and sorts it by time. A partition
// with previews set and no subscription reads as one row of nulls, the
// static row, which is skipped.
func (db *DB) PushSubscriptions(ctx context.Context, login string) ([]store.PushSubscription, error) {
	iter := db.query(ctx, selectPush, login).Iter()
	out := []store.PushSubscription{}
	for {
		var s store.PushSubscription
		var session *string
		if !iter.Scan(&s.Endpoint, &s.P256dh, &s.Auth, &s.Device, &s.CreatedAt, &session) {
			break
		}
		if session != nil {
			s.Session = *session
		}
		if s.Endpoint != "" {
			s.CreatedAt = s.CreatedAt.UTC()
			out = append(out, s)
		}
	}
	if err := iter.Close(); err != nil {
		return nil, fmt.Errorf("cassandra: the push subscriptions of %q: %w", login, err)
	}
	slices.SortStableFunc(out, func(a, b store.PushSubscription) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}

// SetPushPreviews sets the partition's static column.
func (db *DB) SetPushPreviews(ctx context.Context, login string, previews bool) error {
	if err := db.query(ctx, setPushPreviews, previews, login).Exec(); err != nil {
		return fmt.Errorf("cassandra: set the push previews of %q: %w", login, err)
	}
	return nil
}

func (db *DB) PushPreviews(ctx context.Context, login string) (bool, error) {
	var previews *bool
	err := db.query(ctx, selectPushPrevue, login).Scan(&previews)
	switch {
	case errors.Is(err, gocql.ErrNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("cassandra: the push previews of %q: %w", login, err)
	}
	return previews != nil && *previews, nil
}
