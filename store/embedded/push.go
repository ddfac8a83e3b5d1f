package embedded

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/killrchat/chatql/store"
)

var _ store.PushSubscriptions = (*DB)(nil)

// pushRow is a row of push_subscriptions; the login and endpoint are in the
// key, and the endpoint in the row too, to list it. CreatedAt is kept to
// the millisecond, as Cassandra's timestamp keeps it.
type pushRow struct {
	Endpoint  string    `json:"e"`
	P256dh    string    `json:"p"`
	Auth      string    `json:"a"`
	Device    string    `json:"d,omitempty"`
	Session   string    `json:"s,omitempty"`
	CreatedAt time.Time `json:"at"`
}

// previewsRow is a row of push_previews.
type previewsRow struct {
	Previews bool `json:"p"`
}

// AddPushSubscription counts and writes under the partition's lock, so the
// cap holds exactly here.
func (db *DB) AddPushSubscription(ctx context.Context, login string, s store.PushSubscription) error {
	if s.Endpoint == "" {
		return store.Invalidf("push subscription of %q has no endpoint", login)
	}
	p := pushPartition(login)
	end, err := db.beginLocked(ctx, p)
	if err != nil {
		return err
	}
	defer end()
	others := 0
	err = db.scan(ctx, p, p.end(), false, func(_, v []byte) (bool, error) {
		row, err := decode[pushRow](v)
		if err == nil && row.Endpoint != s.Endpoint {
			others++
		}
		return err == nil, err
	})
	if err != nil {
		return fmt.Errorf("counting the push subscriptions of %q: %w", login, err)
	}
	if others >= store.MaxPushSubscriptions {
		return store.Invalidf("invalid push subscription: %s has %d already, the most one may", login, others)
	}
	if s.CreatedAt.IsZero() {
		s.CreatedAt = time.Now()
	}
	b := db.batch()
	b.set(pushKey(login, s.Endpoint), pushRow{Endpoint: s.Endpoint, P256dh: s.P256dh, Auth: s.Auth, Device: s.Device, Session: s.Session, CreatedAt: s.CreatedAt.UTC().Truncate(time.Millisecond)})
	if err := b.commit(); err != nil {
		return fmt.Errorf("adding a push subscription of %q: %w", login, err)
	}
	return nil
}

func (db *DB) RemovePushSubscription(ctx context.Context, login, endpoint string) error {
	return db.deleteRow(ctx, pushKey(login, endpoint), "removing a push subscription of %q", login)
}

// PushSubscriptions reads the partition and sorts it by time.
func (db *DB) PushSubscriptions(ctx context.Context, login string) ([]store.PushSubscription, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	p := pushPartition(login)
	out := []store.PushSubscription{}
	err = db.scan(ctx, p, p.end(), false, func(_, v []byte) (bool, error) {
		row, err := decode[pushRow](v)
		out = append(out, store.PushSubscription{Endpoint: row.Endpoint, P256dh: row.P256dh, Auth: row.Auth, Device: row.Device, Session: row.Session, CreatedAt: row.CreatedAt})
		return err == nil, err
	})
	if err != nil {
		return nil, fmt.Errorf("the push subscriptions of %q: %w", login, err)
	}
	slices.SortStableFunc(out, func(a, b store.PushSubscription) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}

func (db *DB) SetPushPreviews(ctx context.Context, login string, previews bool) error {
	end, err := db.begin(ctx)
	if err != nil {
		return err
	}
	defer end()
	b := db.batch()
	b.set(pushPreviewsKey(login), previewsRow{Previews: previews})
	if err := b.commit(); err != nil {
		return fmt.Errorf("setting the push previews of %q: %w", login, err)
	}
	return nil
}

func (db *DB) PushPreviews(ctx context.Context, login string) (bool, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return false, err
	}
	defer end()
	row, _, err := getRow[previewsRow](db, pushPreviewsKey(login))
	if err != nil {
		return false, fmt.Errorf("the push previews of %q: %w", login, err)
	}
	return row.Previews, nil
}
