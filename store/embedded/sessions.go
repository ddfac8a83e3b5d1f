package embedded

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/killrchat/chatql/store"
)

// Sessions are rows of the sessions table, one partition per login, so that
// a password change finds every session of its user in one range. Writes
// are compare-and-set under the lock of the login's partition. Expired
// sessions read as absent and are deleted by the next CreateSession of
// their login, so a partition holds no more than the login's live sessions
// and the expired ones since its last login.

// sessionRow is a row of sessions; the login and the id are in the key.
type sessionRow struct {
	RefreshHash []byte    `json:"refresh_hash"`
	Generation  int       `json:"generation"`
	CreatedAt   time.Time `json:"created_at"`
	ExpiresAt   time.Time `json:"expires_at"`
	Device      string    `json:"device,omitempty"`
	Address     string    `json:"address,omitempty"`
	Method      string    `json:"method,omitempty"`
	LastSeenAt  time.Time `json:"last_seen_at,omitzero"`
	TwoFactor   bool      `json:"two_factor,omitempty"`
}

func newSessionRow(s store.Session) sessionRow {
	return sessionRow{RefreshHash: s.RefreshHash, Generation: s.Generation, CreatedAt: s.CreatedAt.UTC(), ExpiresAt: s.ExpiresAt.UTC(),
		Device: s.Device, Address: s.Address, Method: s.Method, LastSeenAt: s.LastSeenAt.UTC(), TwoFactor: s.TwoFactor}
}

func (r sessionRow) session(login, id string) store.Session {
	return store.Session{Login: login, ID: id, RefreshHash: r.RefreshHash, Generation: r.Generation, CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt,
		Device: r.Device, Address: r.Address, Method: r.Method, LastSeenAt: r.LastSeenAt, TwoFactor: r.TwoFactor}
}

func (r sessionRow) expired(now time.Time) bool { return !now.Before(r.ExpiresAt) }

// CreateSession stores a new session and drops the login's expired ones.
func (db *DB) CreateSession(ctx context.Context, s store.Session) error {
	end, err := db.beginLocked(ctx, sessionPartition(s.Login))
	if err != nil {
		return err
	}
	defer end()
	b := db.batch()
	now := time.Now()
	prefix := sessionPartition(s.Login)
	err = db.scan(ctx, prefix, prefix.end(), false, func(k, v []byte) (bool, error) {
		row, err := decode[sessionRow](v)
		if err != nil {
			return false, err
		}
		if bytes.Equal(k, sessionKey(s.Login, s.ID)) {
			return false, fmt.Errorf("session %q: %w", s.ID, store.ErrConflict)
		}
		if row.expired(now) {
			b.delete(key(bytes.Clone(k)))
		}
		return true, nil
	})
	if err != nil {
		b.Close()
		return fmt.Errorf("creating session of %q: %w", s.Login, err)
	}
	b.set(sessionKey(s.Login, s.ID), newSessionRow(s))
	if err := b.commit(); err != nil {
		return fmt.Errorf("writing session of %q: %w", s.Login, err)
	}
	return nil
}

// Session returns a live session.
func (db *DB) Session(ctx context.Context, login, id string) (store.Session, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return store.Session{}, err
	}
	defer end()
	return db.session(login, id)
}

func (db *DB) session(login, id string) (store.Session, error) {
	row, found, err := getRow[sessionRow](db, sessionKey(login, id))
	if err != nil {
		return store.Session{}, fmt.Errorf("reading session of %q: %w", login, err)
	}
	if !found || row.expired(time.Now()) {
		return store.Session{}, fmt.Errorf("session of %q: %w", login, store.ErrNotFound)
	}
	return row.session(login, id), nil
}

// RotateSession replaces the refresh token if the generation is still from.
func (db *DB) RotateSession(ctx context.Context, next store.Session, from int) error {
	end, err := db.beginLocked(ctx, sessionPartition(next.Login))
	if err != nil {
		return err
	}
	defer end()
	cur, err := db.session(next.Login, next.ID)
	if err != nil {
		return err
	}
	if cur.Generation != from {
		return fmt.Errorf("session of %q is at generation %d, not %d: %w", next.Login, cur.Generation, from, store.ErrConflict)
	}
	b := db.batch()
	b.set(sessionKey(next.Login, next.ID), newSessionRow(next))
	if err := b.commit(); err != nil {
		return fmt.Errorf("rotating session of %q: %w", next.Login, err)
	}
	return nil
}

// UserSessions reads login's partition of sessions.
func (db *DB) UserSessions(ctx context.Context, login string) ([]store.Session, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	now := time.Now()
	var out []store.Session
	prefix := sessionPartition(login)
	err = db.scan(ctx, prefix, prefix.end(), false, func(k, v []byte) (bool, error) {
		row, err := decode[sessionRow](v)
		if err != nil {
			return false, err
		}
		if !row.expired(now) {
			out = append(out, row.session(login, sessionIDOf(prefix, k)))
		}
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading sessions of %q: %w", login, err)
	}
	return store.NewestSeen(out), nil
}

// DeleteSession revokes one session.
func (db *DB) DeleteSession(ctx context.Context, login, id string) error {
	end, err := db.beginLocked(ctx, sessionPartition(login))
	if err != nil {
		return err
	}
	defer end()
	b := db.batch()
	b.delete(sessionKey(login, id))
	if err := b.commit(); err != nil {
		return fmt.Errorf("deleting session of %q: %w", login, err)
	}
	return nil
}

// DeleteSessions revokes every session of login but keep.
func (db *DB) DeleteSessions(ctx context.Context, login, keep string) error {
	end, err := db.beginLocked(ctx, sessionPartition(login))
	if err != nil {
		return err
	}
	defer end()
	b := db.batch()
	kept := sessionKey(login, keep)
	prefix := sessionPartition(login)
	err = db.scan(ctx, prefix, prefix.end(), false, func(k, _ []byte) (bool, error) {
		if keep == "" || !bytes.Equal(k, kept) {
			b.delete(key(bytes.Clone(k)))
		}
		return true, nil
	})
	if err != nil {
		b.Close()
		return fmt.Errorf("reading sessions of %q: %w", login, err)
	}
	if err := b.commit(); err != nil {
		return fmt.Errorf("deleting sessions of %q: %w", login, err)
	}
	return nil
}

// ChangePassword replaces the password hash if it is still oldHash.
func (db *DB) ChangePassword(ctx context.Context, login string, oldHash, newHash []byte) error {
	k := userKey(login)
	end, err := db.beginLocked(ctx, k)
	if err != nil {
		return err
	}
	defer end()
	row, err := db.user(login)
	if err != nil {
		return err
	}
	if !bytes.Equal(row.PassHash, oldHash) {
		return fmt.Errorf("password of %q changed meanwhile: %w", login, store.ErrConflict)
	}
	row.PassHash = newHash
	b := db.batch()
	b.set(k, row)
	if err := b.commit(); err != nil {
		return fmt.Errorf("writing user %q: %w", login, err)
	}
	return nil
}

// sessionIDOf reads the id of a session from its key, under the
// partition's prefix: the rest is the id as key.str encodes it.
func sessionIDOf(prefix key, k []byte) string {
	enc := bytes.TrimSuffix(k[len(prefix):], []byte{0x00, 0x01})
	return string(bytes.ReplaceAll(enc, []byte{0x00, 0xFF}, []byte{0x00}))
}
