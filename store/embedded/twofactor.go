package embedded

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/killrchat/chatql/store"
)

// twoFactorRow is a row of two_factor: a user's two-factor settings, the
// login in the key.
type twoFactorRow struct {
	Secret         []byte    `json:"secret"`
	Enabled        bool      `json:"enabled,omitempty"`
	RecoveryHashes [][]byte  `json:"recovery_hashes,omitempty"`
	LastStep       int64     `json:"last_step,omitempty"`
	Version        int       `json:"version"`
	UpdatedAt      time.Time `json:"updated_at"`
}

func (r twoFactorRow) twoFactor(login string) store.TwoFactor {
	return store.TwoFactor{Login: login, Secret: r.Secret, Enabled: r.Enabled, RecoveryHashes: r.RecoveryHashes,
		LastStep: r.LastStep, Version: r.Version, UpdatedAt: r.UpdatedAt}
}

// TwoFactor reads login's row of two_factor.
func (db *DB) TwoFactor(ctx context.Context, login string) (store.TwoFactor, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return store.TwoFactor{}, err
	}
	defer end()
	return db.twoFactor(login)
}

func (db *DB) twoFactor(login string) (store.TwoFactor, error) {
	row, found, err := getRow[twoFactorRow](db, twoFactorKey(login))
	if err != nil {
		return store.TwoFactor{}, fmt.Errorf("reading two-factor settings of %q: %w", login, err)
	}
	if !found {
		return store.TwoFactor{}, fmt.Errorf("two-factor settings of %q: %w", login, store.ErrNotFound)
	}
	return row.twoFactor(login), nil
}

// casTwoFactor checks, under the row's lock, that login's settings are at
// version from (0: none).
func (db *DB) casTwoFactor(login string, from int) error {
	cur, err := db.twoFactor(login)
	switch {
	case from == 0 && err == nil:
		return fmt.Errorf("two-factor settings of %q exist: %w", login, store.ErrConflict)
	case from == 0 && errors.Is(err, store.ErrNotFound):
		return nil
	case err != nil:
		return err
	case cur.Version != from:
		return fmt.Errorf("two-factor settings of %q are at version %d, not %d: %w", login, cur.Version, from, store.ErrConflict)
	}
	return nil
}

// PutTwoFactor writes the row if its version is still from.
func (db *DB) PutTwoFactor(ctx context.Context, tf store.TwoFactor, from int) error {
	k := twoFactorKey(tf.Login)
	end, err := db.beginLocked(ctx, k)
	if err != nil {
		return err
	}
	defer end()
	if err := db.casTwoFactor(tf.Login, from); err != nil {
		return err
	}
	b := db.batch()
	b.set(k, twoFactorRow{Secret: tf.Secret, Enabled: tf.Enabled, RecoveryHashes: tf.RecoveryHashes,
		LastStep: tf.LastStep, Version: tf.Version, UpdatedAt: tf.UpdatedAt.UTC()})
	if err := b.commit(); err != nil {
		return fmt.Errorf("writing two-factor settings of %q: %w", tf.Login, err)
	}
	return nil
}

// DeleteTwoFactor deletes the row if its version is still from.
func (db *DB) DeleteTwoFactor(ctx context.Context, login string, from int) error {
	k := twoFactorKey(login)
	end, err := db.beginLocked(ctx, k)
	if err != nil {
		return err
	}
	defer end()
	if from == 0 {
		return store.Invalidf("invalid version 0")
	}
	if err := db.casTwoFactor(login, from); err != nil {
		return err
	}
	b := db.batch()
	b.delete(k)
	if err := b.commit(); err != nil {
		return fmt.Errorf("deleting two-factor settings of %q: %w", login, err)
	}
	return nil
}
