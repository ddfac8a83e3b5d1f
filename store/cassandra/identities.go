package cassandra

import (
	"context"
	"errors"
	"fmt"

	"github.com/gocql/gocql"

	"github.com/killrchat/chatql/store"
)

// OpenID Connect identities (schema_v21.cql): oidc_identities, a partition
// per identity, is the truth, written IF NOT EXISTS; the account's list
// (oidc_identities_by_user) follows it.

const (
	insertIdentity       = `INSERT INTO oidc_identities (issuer, subject, login, email, linked_at) VALUES (?, ?, ?, ?, ?) IF NOT EXISTS`
	selectIdentity       = `SELECT login, email, linked_at FROM oidc_identities WHERE issuer = ? AND subject = ?`
	insertUserIdentity   = `INSERT INTO oidc_identities_by_user (login, issuer, subject, email, linked_at) VALUES (?, ?, ?, ?, ?)`
	selectUserIdentities = `SELECT issuer, subject, email, linked_at FROM oidc_identities_by_user WHERE login = ?`
	deleteIdentity       = `DELETE FROM oidc_identities WHERE issuer = ? AND subject = ? IF login = ?`
	deleteUserIdentity   = `DELETE FROM oidc_identities_by_user WHERE login = ? AND issuer = ? AND subject = ?`
)

// LinkIdentity inserts the identity IF NOT EXISTS, then lists it with the
// account.
func (db *DB) LinkIdentity(ctx context.Context, id store.Identity) error {
	have, err := db.UserIdentities(ctx, id.Login)
	if err != nil {
		return err
	}
	if len(have) >= store.MaxIdentities {
		return store.Invalidf("invalid identity: %s has %d linked already, the most one may", id.Login, len(have))
	}
	q := db.query(ctx, insertIdentity, id.Issuer, id.Subject, id.Login, id.Email, id.LinkedAt)
	applied, err := lwt(ctx, q, nil, func(ctx context.Context) (casOutcome, error) {
		got := store.Identity{}
		err := db.serialRead(ctx, selectIdentity, id.Issuer, id.Subject).Scan(&got.Login, &got.Email, &got.LinkedAt)
		login := got.Login
		switch {
		case errors.Is(err, gocql.ErrNotFound):
			return casNotApplied, nil
		case err != nil:
			return 0, err
		case login == id.Login:
			return casApplied, nil
		}
		return casRejected, nil
	})
	if err != nil {
		return fmt.Errorf("cassandra: link identity of %q: %w", id.Login, err)
	}
	if !applied {
		return fmt.Errorf("identity %s at %s is linked already: %w", id.Subject, id.Issuer, store.ErrConflict)
	}
	if err := db.query(ctx, insertUserIdentity, id.Login, id.Issuer, id.Subject, id.Email, id.LinkedAt).Exec(); err != nil {
		return fmt.Errorf("cassandra: list identity of %q: %w", id.Login, err)
	}
	return nil
}

// Identity reads the identity's row.
func (db *DB) Identity(ctx context.Context, issuer, subject string) (store.Identity, error) {
	id := store.Identity{Issuer: issuer, Subject: subject}
	err := db.query(ctx, selectIdentity, issuer, subject).Scan(&id.Login, &id.Email, &id.LinkedAt)
	if errors.Is(err, gocql.ErrNotFound) {
		return store.Identity{}, fmt.Errorf("identity %s at %s: %w", subject, issuer, store.ErrNotFound)
	}
	if err != nil {
		return store.Identity{}, fmt.Errorf("cassandra: read identity: %w", err)
	}
	return id, nil
}

// UserIdentities reads the account's list.
func (db *DB) UserIdentities(ctx context.Context, login string) ([]store.Identity, error) {
	iter := db.query(ctx, selectUserIdentities, login).Iter()
	var out []store.Identity
	for {
		id := store.Identity{Login: login}
		if !iter.Scan(&id.Issuer, &id.Subject, &id.Email, &id.LinkedAt) {
			break
		}
		out = append(out, id)
	}
	if err := iter.Close(); err != nil {
		return nil, fmt.Errorf("cassandra: read identities of %q: %w", login, err)
	}
	return out, nil
}

// UnlinkIdentity deletes the identity's row IF it is linked to login, then
// takes it off the account's list. The list's row goes whatever the
// delete found, so that an unlink that died between the two deletes is
// finished by the next one (which answers ErrNotFound).
func (db *DB) UnlinkIdentity(ctx context.Context, login, issuer, subject string) error {
	q := db.query(ctx, deleteIdentity, issuer, subject, login)
	applied, err := lwt(ctx, q, nil, func(ctx context.Context) (casOutcome, error) {
		var got string
		err := db.serialRead(ctx, `SELECT login FROM oidc_identities WHERE issuer = ? AND subject = ?`, issuer, subject).Scan(&got)
		switch {
		case errors.Is(err, gocql.ErrNotFound):
			return casApplied, nil
		case err != nil:
			return 0, err
		case got == login:
			return casNotApplied, nil
		}
		return casRejected, nil
	})
	if err != nil {
		return fmt.Errorf("cassandra: unlink identity of %q: %w", login, err)
	}
	if err := db.query(ctx, deleteUserIdentity, login, issuer, subject).Exec(); err != nil {
		return fmt.Errorf("cassandra: unlist identity of %q: %w", login, err)
	}
	if !applied {
		return fmt.Errorf("identity %s at %s is not linked to %s: %w", subject, issuer, login, store.ErrNotFound)
	}
	return nil
}
