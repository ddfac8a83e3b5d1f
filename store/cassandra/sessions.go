package cassandra

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/gocql/gocql"

	"github.com/killrchat/chatql/store"
)

// Sessions (schema_v3.cql): every write to a session row is a lightweight
// transaction, so they are ordered by Paxos among themselves and a
// rotation's compare-and-set cannot be undone by a plain write with an
// older timestamp.

const (
	insertSession = `INSERT INTO sessions (login, session_id, refresh_hash, generation, created_at, expires_at,
			device, address, method, last_seen_at, two_factor)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS USING TTL ?`
	sessionColumns = `refresh_hash, generation, created_at, expires_at, device, address, method, last_seen_at, two_factor`
	selectSession  = `SELECT ` + sessionColumns + `
		FROM sessions WHERE login = ? AND session_id = ?`
	selectSessionIDs  = `SELECT session_id FROM sessions WHERE login = ?`
	selectUserSession = `SELECT session_id, ` + sessionColumns + ` FROM sessions WHERE login = ?`
	// A rotation writes every column: the row's cells each live until the
	// TTL they were written with.
	rotateSession = `UPDATE sessions USING TTL ?
		SET refresh_hash = ?, generation = ?, created_at = ?, expires_at = ?,
			device = ?, address = ?, method = ?, last_seen_at = ?, two_factor = ?
		WHERE login = ? AND session_id = ? IF generation = ?`
	deleteSession  = `DELETE FROM sessions WHERE login = ? AND session_id = ? IF EXISTS`
	changePassword = `UPDATE users SET pass_hash = ? WHERE login = ? IF pass_hash = ?`
)

// ttlUntil is the TTL, in whole seconds, of a row that must live until t.
func ttlUntil(t time.Time) int {
	return max(1, int(math.Ceil(time.Until(t).Seconds())))
}

// CreateSession stores a new session with INSERT ... IF NOT EXISTS.
func (db *DB) CreateSession(ctx context.Context, s store.Session) error {
	q := db.query(ctx, insertSession, s.Login, s.ID, s.RefreshHash, s.Generation, s.CreatedAt, s.ExpiresAt,
		s.Device, s.Address, s.Method, s.LastSeenAt, s.TwoFactor, ttlUntil(s.ExpiresAt))
	applied, err := lwt(ctx, q, nil, func(ctx context.Context) (casOutcome, error) {
		got, err := db.readSession(db.serialRead(ctx, selectSession, s.Login, s.ID), s.Login, s.ID)
		switch {
		case errors.Is(err, gocql.ErrNotFound):
			return casNotApplied, nil
		case err != nil:
			return 0, err
		case bytes.Equal(got.RefreshHash, s.RefreshHash):
			return casApplied, nil
		}
		return casRejected, nil
	})
	if err != nil {
		return fmt.Errorf("cassandra: create session of %q: %w", s.Login, err)
	}
	if !applied {
		return fmt.Errorf("session %q: %w", s.ID, store.ErrConflict)
	}
	return nil
}

// Session returns a live session.
func (db *DB) Session(ctx context.Context, login, id string) (store.Session, error) {
	s, err := db.readSession(db.query(ctx, selectSession, login, id), login, id)
	if errors.Is(err, gocql.ErrNotFound) || err == nil && !time.Now().Before(s.ExpiresAt) {
		return store.Session{}, fmt.Errorf("session of %q: %w", login, store.ErrNotFound)
	}
	if err != nil {
		return store.Session{}, fmt.Errorf("cassandra: read session of %q: %w", login, err)
	}
	return s, nil
}

func (db *DB) readSession(q *gocql.Query, login, id string) (store.Session, error) {
	s := store.Session{Login: login, ID: id}
	err := q.Scan(&s.RefreshHash, &s.Generation, &s.CreatedAt, &s.ExpiresAt, &s.Device, &s.Address, &s.Method, &s.LastSeenAt, &s.TwoFactor)
	return s, err
}

// UserSessions reads login's partition of sessions.
func (db *DB) UserSessions(ctx context.Context, login string) ([]store.Session, error) {
	iter := db.query(ctx, selectUserSession, login).Iter()
	now := time.Now()
	var out []store.Session
	for {
		s := store.Session{Login: login}
		if !iter.Scan(&s.ID, &s.RefreshHash, &s.Generation, &s.CreatedAt, &s.ExpiresAt, &s.Device, &s.Address, &s.Method, &s.LastSeenAt, &s.TwoFactor) {
			break
		}
		if now.Before(s.ExpiresAt) {
			out = append(out, s)
		}
	}
	if err := iter.Close(); err != nil {
		return nil, fmt.Errorf("cassandra: read sessions of %q: %w", login, err)
	}
	return store.NewestSeen(out), nil
}

// RotateSession stores next with UPDATE ... IF generation = from.
func (db *DB) RotateSession(ctx context.Context, next store.Session, from int) error {
	var current *int // the stored generation when the condition fails; nil if the row is gone
	q := db.query(ctx, rotateSession, ttlUntil(next.ExpiresAt), next.RefreshHash, next.Generation, next.CreatedAt, next.ExpiresAt,
		next.Device, next.Address, next.Method, next.LastSeenAt, next.TwoFactor, next.Login, next.ID, from)
	applied, err := lwt(ctx, q, map[string]any{"generation": &current}, func(ctx context.Context) (casOutcome, error) {
		got, err := db.readSession(db.serialRead(ctx, selectSession, next.Login, next.ID), next.Login, next.ID)
		switch {
		case errors.Is(err, gocql.ErrNotFound):
			return casRejected, nil
		case err != nil:
			return 0, err
		case got.Generation == next.Generation && bytes.Equal(got.RefreshHash, next.RefreshHash):
			return casApplied, nil
		case got.Generation == from:
			return casNotApplied, nil
		}
		current = &got.Generation
		return casRejected, nil
	})
	switch {
	case err != nil:
		return fmt.Errorf("cassandra: rotate session of %q: %w", next.Login, err)
	case applied:
		return nil
	case current == nil:
		return fmt.Errorf("session of %q: %w", next.Login, store.ErrNotFound)
	}
	return fmt.Errorf("session of %q is at generation %d, not %d: %w", next.Login, *current, from, store.ErrConflict)
}

// DeleteSession revokes one session with DELETE ... IF EXISTS.
func (db *DB) DeleteSession(ctx context.Context, login, id string) error {
	q := db.query(ctx, deleteSession, login, id)
	_, err := lwt(ctx, q, nil, func(ctx context.Context) (casOutcome, error) {
		_, err := db.readSession(db.serialRead(ctx, selectSession, login, id), login, id)
		switch {
		case errors.Is(err, gocql.ErrNotFound):
			return casApplied, nil
		case err != nil:
			return 0, err
		}
		return casNotApplied, nil
	})
	if err != nil {
		return fmt.Errorf("cassandra: delete session of %q: %w", login, err)
	}
	return nil
}

// DeleteSessions reads the ids of login's sessions and revokes each one but
// keep.
func (db *DB) DeleteSessions(ctx context.Context, login, keep string) error {
	iter := db.serialRead(ctx, selectSessionIDs, login).Iter()
	var ids []string
	var id string
	for iter.Scan(&id) {
		if id != keep {
			ids = append(ids, id)
		}
	}
	if err := iter.Close(); err != nil {
		return fmt.Errorf("cassandra: read sessions of %q: %w", login, err)
	}
	for _, id := range ids {
		if err := db.DeleteSession(ctx, login, id); err != nil {
			return err
		}
	}
	return nil
}

// ChangePassword replaces the hash with UPDATE ... IF pass_hash = oldHash.
func (db *DB) ChangePassword(ctx context.Context, login string, oldHash, newHash []byte) error {
	var current []byte
	q := db.query(ctx, changePassword, newHash, login, oldHash)
	applied, err := lwt(ctx, q, map[string]any{"pass_hash": &current}, func(ctx context.Context) (casOutcome, error) {
		got, err := db.readAccount(db.serialRead(ctx, selectUser, login))
		switch {
		case errors.Is(err, gocql.ErrNotFound), errors.Is(err, errDeletedAccount):
			return casRejected, nil
		case err != nil:
			return 0, err
		case bytes.Equal(got.PassHash, newHash):
			// Hashes are salted: an equal one is our own write.
			return casApplied, nil
		case bytes.Equal(got.PassHash, oldHash):
			return casNotApplied, nil
		}
		current = got.PassHash
		return casRejected, nil
	})
	switch {
	case err != nil:
		return fmt.Errorf("cassandra: change password of %q: %w", login, err)
	case applied:
		return nil
	case current == nil:
		return fmt.Errorf("user %q: %w", login, store.ErrNotFound)
	}
	return fmt.Errorf("password of %q changed meanwhile: %w", login, store.ErrConflict)
}
