package embedded

import (
	"context"
	"fmt"
	"time"

	"github.com/killrchat/chatql/store"
)

// passkeyRow is a row of passkeys.
type passkeyRow struct {
	ID         []byte    `json:"id"`
	Name       string    `json:"name"`
	Credential []byte    `json:"credential"`
	CreatedAt  time.Time `json:"created_at"`
	LastUsedAt time.Time `json:"last_used_at,omitzero"`
}

func newPasskeyRow(p store.Passkey) passkeyRow {
	return passkeyRow{ID: p.ID, Name: p.Name, Credential: p.Credential, CreatedAt: p.CreatedAt.UTC(), LastUsedAt: p.LastUsedAt.UTC()}
}

func (r passkeyRow) passkey(login string) store.Passkey {
	return store.Passkey{Login: login, ID: r.ID, Name: r.Name, Credential: r.Credential, CreatedAt: r.CreatedAt, LastUsedAt: r.LastUsedAt}
}

// AddPasskey writes the row under the lock of the user's partition.
func (db *DB) AddPasskey(ctx context.Context, p store.Passkey) error {
	part := passkeysPartition(p.Login)
	end, err := db.beginLocked(ctx, part)
	if err != nil {
		return err
	}
	defer end()
	have, err := db.passkeys(ctx, p.Login)
	if err != nil {
		return err
	}
	if len(have) >= store.MaxPasskeys {
		return store.Invalidf("invalid passkey: %s has %d passkeys already, the most one may", p.Login, len(have))
	}
	k := passkeyKey(p.Login, p.ID)
	if _, found, err := getRow[passkeyRow](db, k); err != nil {
		return fmt.Errorf("reading passkey of %q: %w", p.Login, err)
	} else if found {
		return fmt.Errorf("passkey of %q: %w", p.Login, store.ErrConflict)
	}
	b := db.batch()
	b.set(k, newPasskeyRow(p))
	if err := b.commit(); err != nil {
		return fmt.Errorf("writing passkey of %q: %w", p.Login, err)
	}
	return nil
}

// UserPasskeys scans the user's partition.
func (db *DB) UserPasskeys(ctx context.Context, login string) ([]store.Passkey, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	return db.passkeys(ctx, login)
}

func (db *DB) passkeys(ctx context.Context, login string) ([]store.Passkey, error) {
	var out []store.Passkey
	p := passkeysPartition(login)
	err := db.scan(ctx, p, p.end(), false, func(_, v []byte) (bool, error) {
		row, err := decode[passkeyRow](v)
		out = append(out, row.passkey(login))
		return true, err
	})
	if err != nil {
		return nil, fmt.Errorf("the passkeys of %q: %w", login, err)
	}
	return out, nil
}

// UpdatePasskey rewrites the row if it exists.
func (db *DB) UpdatePasskey(ctx context.Context, p store.Passkey) error {
	end, err := db.beginLocked(ctx, passkeysPartition(p.Login))
	if err != nil {
		return err
	}
	defer end()
	k := passkeyKey(p.Login, p.ID)
	row, found, err := getRow[passkeyRow](db, k)
	if err != nil {
		return fmt.Errorf("reading passkey of %q: %w", p.Login, err)
	}
	if !found {
		return fmt.Errorf("passkey of %q: %w", p.Login, store.ErrNotFound)
	}
	row.Credential, row.LastUsedAt = p.Credential, p.LastUsedAt.UTC()
	b := db.batch()
	b.set(k, row)
	if err := b.commit(); err != nil {
		return fmt.Errorf("writing passkey of %q: %w", p.Login, err)
	}
	return nil
}

// DeletePasskey deletes the row if it exists.
func (db *DB) DeletePasskey(ctx context.Context, login string, id []byte) error {
	end, err := db.beginLocked(ctx, passkeysPartition(login))
	if err != nil {
		return err
	}
	defer end()
	k := passkeyKey(login, id)
	if _, found, err := getRow[passkeyRow](db, k); err != nil {
		return fmt.Errorf("reading passkey of %q: %w", login, err)
	} else if !found {
		return fmt.Errorf("passkey of %q: %w", login, store.ErrNotFound)
	}
	b := db.batch()
	b.delete(k)
	if err := b.commit(); err != nil {
		return fmt.Errorf("deleting passkey of %q: %w", login, err)
	}
	return nil
}
