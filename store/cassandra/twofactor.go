package cassandra

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/gocql/gocql"

	"github.com/killrchat/chatql/store"
)

// Two-factor settings (schema_v21.cql): one row per user, every write a
// lightweight transaction on its version.

const (
	selectTwoFactor = `SELECT secret, enabled, recovery_hashes, last_step, version, updated_at FROM two_factor WHERE login = ?`
	insertTwoFactor = `INSERT INTO two_factor (login, secret, enabled, recovery_hashes, last_step, version, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS`
	updateTwoFactor = `UPDATE two_factor SET secret = ?, enabled = ?, recovery_hashes = ?, last_step = ?, version = ?, updated_at = ?
		WHERE login = ? IF version = ?`
	deleteTwoFactor = `DELETE FROM two_factor WHERE login = ? IF version = ?`
)

func (db *DB) readTwoFactor(q *gocql.Query, login string) (store.TwoFactor, error) {
	tf := store.TwoFactor{Login: login}
	err := q.Scan(&tf.Secret, &tf.Enabled, &tf.RecoveryHashes, &tf.LastStep, &tf.Version, &tf.UpdatedAt)
	return tf, err
}

// TwoFactor reads login's row.
func (db *DB) TwoFactor(ctx context.Context, login string) (store.TwoFactor, error) {
	tf, err := db.readTwoFactor(db.query(ctx, selectTwoFactor, login), login)
	if errors.Is(err, gocql.ErrNotFound) {
		return store.TwoFactor{}, fmt.Errorf("two-factor settings of %q: %w", login, store.ErrNotFound)
	}
	if err != nil {
		return store.TwoFactor{}, fmt.Errorf("cassandra: read two-factor settings of %q: %w", login, err)
	}
	return tf, nil
}

// PutTwoFactor inserts IF NOT EXISTS (from 0) or updates IF version = from.
func (db *DB) PutTwoFactor(ctx context.Context, tf store.TwoFactor, from int) error {
	var q *gocql.Query
	if from == 0 {
		q = db.query(ctx, insertTwoFactor, tf.Login, tf.Secret, tf.Enabled, tf.RecoveryHashes, tf.LastStep, tf.Version, tf.UpdatedAt)
	} else {
		q = db.query(ctx, updateTwoFactor, tf.Secret, tf.Enabled, tf.RecoveryHashes, tf.LastStep, tf.Version, tf.UpdatedAt, tf.Login, from)
	}
	var current *int // the stored version when the condition fails; nil if there is no row
	applied, err := lwt(ctx, q, map[string]any{"version": &current}, func(ctx context.Context) (casOutcome, error) {
		got, err := db.readTwoFactor(db.serialRead(ctx, selectTwoFactor, tf.Login), tf.Login)
		switch {
		case errors.Is(err, gocql.ErrNotFound):
			if from == 0 {
				return casNotApplied, nil
			}
			return casRejected, nil
		case err != nil:
			return 0, err
		case got.Version == tf.Version && bytes.Equal(got.Secret, tf.Secret) && got.LastStep == tf.LastStep:
			return casApplied, nil
		case got.Version == from:
			return casNotApplied, nil
		}
		current = &got.Version
		return casRejected, nil
	})
	switch {
	case err != nil:
		return fmt.Errorf("cassandra: write two-factor settings of %q: %w", tf.Login, err)
	case applied:
		return nil
	case from == 0:
		return fmt.Errorf("two-factor settings of %q exist: %w", tf.Login, store.ErrConflict)
	case current == nil:
		return fmt.Errorf("two-factor settings of %q: %w", tf.Login, store.ErrNotFound)
	}
	return fmt.Errorf("two-factor settings of %q are at version %d, not %d: %w", tf.Login, *current, from, store.ErrConflict)
}

// DeleteTwoFactor deletes the row IF version = from.
func (db *DB) DeleteTwoFactor(ctx context.Context, login string, from int) error {
	if from == 0 {
		return store.Invalidf("invalid version 0")
	}
	var current *int
	q := db.query(ctx, deleteTwoFactor, login, from)
	applied, err := lwt(ctx, q, map[string]any{"version": &current}, func(ctx context.Context) (casOutcome, error) {
		got, err := db.readTwoFactor(db.serialRead(ctx, selectTwoFactor, login), login)
		switch {
		case errors.Is(err, gocql.ErrNotFound):
			return casApplied, nil
		case err != nil:
			return 0, err
		case got.Version == from:
			return casNotApplied, nil
		}
		current = &got.Version
		return casRejected, nil
	})
	switch {
	case err != nil:
		return fmt.Errorf("cassandra: delete two-factor settings of %q: %w", login, err)
	case applied:
		return nil
	case current == nil:
		return fmt.Errorf("two-factor settings of %q: %w", login, store.ErrNotFound)
	}
	return fmt.Errorf("two-factor settings of %q are at version %d, not %d: %w", login, *current, from, store.ErrConflict)
}
