package cassandra

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/gocql/gocql"

	"github.com/killrchat/chatql/store"
)

// Passkeys (schema_v21.cql): a partition per user. The cap of
// store.MaxPasskeys is checked by a read before the insert: concurrent
// registrations of one user may pass it by a few.

const (
	selectPasskeys = `SELECT credential_id, name, credential, created_at, last_used_at FROM passkeys WHERE login = ?`
	selectPasskey  = `SELECT credential_id, name, credential, created_at, last_used_at FROM passkeys WHERE login = ? AND credential_id = ?`
	insertPasskey  = `INSERT INTO passkeys (login, credential_id, name, credential, created_at, last_used_at)
		VALUES (?, ?, ?, ?, ?, ?) IF NOT EXISTS`
	updatePasskey = `UPDATE passkeys SET credential = ?, last_used_at = ? WHERE login = ? AND credential_id = ? IF EXISTS`
	deletePasskey = `DELETE FROM passkeys WHERE login = ? AND credential_id = ? IF EXISTS`
)

func scanPasskey(scan func(...any) bool, login string) (store.Passkey, bool) {
	p := store.Passkey{Login: login}
	ok := scan(&p.ID, &p.Name, &p.Credential, &p.CreatedAt, &p.LastUsedAt)
	return p, ok
}

// UserPasskeys reads the user's partition.
func (db *DB) UserPasskeys(ctx context.Context, login string) ([]store.Passkey, error) {
	iter := db.query(ctx, selectPasskeys, login).Iter()
	var out []store.Passkey
	for {
		p, ok := scanPasskey(iter.Scan, login)
		if !ok {
			break
		}
		out = append(out, p)
	}
	if err := iter.Close(); err != nil {
		return nil, fmt.Errorf("cassandra: read passkeys of %q: %w", login, err)
	}
	return out, nil
}

// readPasskey reads one row at serial consistency.
func (db *DB) readPasskey(ctx context.Context, login string, id []byte) (store.Passkey, error) {
	p := store.Passkey{Login: login}
	err := db.serialRead(ctx, selectPasskey, login, id).Scan(&p.ID, &p.Name, &p.Credential, &p.CreatedAt, &p.LastUsedAt)
	return p, err
}

// AddPasskey counts the user's passkeys, then inserts IF NOT EXISTS.
func (db *DB) AddPasskey(ctx context.Context, p store.Passkey) error {
	have, err := db.UserPasskeys(ctx, p.Login)
	if err != nil {
		return err
	}
	if len(have) >= store.MaxPasskeys {
		return store.Invalidf("invalid passkey: %s has %d passkeys already, the most one may", p.Login, len(have))
	}
	q := db.query(ctx, insertPasskey, p.Login, p.ID, p.Name, p.Credential, p.CreatedAt, p.LastUsedAt)
	applied, err := lwt(ctx, q, nil, func(ctx context.Context) (casOutcome, error) {
		got, err := db.readPasskey(ctx, p.Login, p.ID)
		switch {
		case errors.Is(err, gocql.ErrNotFound):
			return casNotApplied, nil
		case err != nil:
			return 0, err
		case bytes.Equal(got.Credential, p.Credential):
			return casApplied, nil
		}
		return casRejected, nil
	})
	if err != nil {
		return fmt.Errorf("cassandra: add passkey of %q: %w", p.Login, err)
	}
	if !applied {
		return fmt.Errorf("passkey of %q: %w", p.Login, store.ErrConflict)
	}
	return nil
}

// UpdatePasskey updates IF EXISTS.
func (db *DB) UpdatePasskey(ctx context.Context, p store.Passkey) error {
	q := db.query(ctx, updatePasskey, p.Credential, p.LastUsedAt, p.Login, p.ID)
	applied, err := lwt(ctx, q, nil, func(ctx context.Context) (casOutcome, error) {
		got, err := db.readPasskey(ctx, p.Login, p.ID)
		switch {
		case errors.Is(err, gocql.ErrNotFound):
			return casRejected, nil
		case err != nil:
			return 0, err
		case bytes.Equal(got.Credential, p.Credential):
			return casApplied, nil
		}
		return casNotApplied, nil
	})
	if err != nil {
		return fmt.Errorf("cassandra: update passkey of %q: %w", p.Login, err)
	}
	if !applied {
		return fmt.Errorf("passkey of %q: %w", p.Login, store.ErrNotFound)
	}
	return nil
}

// DeletePasskey deletes IF EXISTS.
func (db *DB) DeletePasskey(ctx context.Context, login string, id []byte) error {
	q := db.query(ctx, deletePasskey, login, id)
	applied, err := lwt(ctx, q, nil, func(ctx context.Context) (casOutcome, error) {
		_, err := db.readPasskey(ctx, login, id)
		switch {
		case errors.Is(err, gocql.ErrNotFound):
			return casApplied, nil
		case err != nil:
			return 0, err
		}
		return casNotApplied, nil
	})
	if err != nil {
		return fmt.Errorf("cassandra: delete passkey of %q: %w", login, err)
	}
	if !applied {
		return fmt.Errorf("passkey of %q: %w", login, store.ErrNotFound)
	}
	return nil
}
