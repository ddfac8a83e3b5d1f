package embedded

import (
	"context"
	"fmt"
	"time"

	"github.com/killrchat/chatql/store"
)

// identityRow is a row of oidc_identities and of oidc_identities_by_user.
type identityRow struct {
	Issuer   string    `json:"issuer"`
	Subject  string    `json:"subject"`
	Login    string    `json:"login"`
	Email    string    `json:"email,omitempty"`
	LinkedAt time.Time `json:"linked_at"`
}

func (r identityRow) identity() store.Identity {
	return store.Identity{Issuer: r.Issuer, Subject: r.Subject, Login: r.Login, Email: r.Email, LinkedAt: r.LinkedAt}
}

// LinkIdentity writes both rows in one batch, under the locks of the
// identity and of the account's list.
func (db *DB) LinkIdentity(ctx context.Context, id store.Identity) error {
	k := identityKey(id.Issuer, id.Subject)
	part := userIdentitiesPartition(id.Login)
	end, err := db.beginLocked(ctx, k, part)
	if err != nil {
		return err
	}
	defer end()
	if _, found, err := getRow[identityRow](db, k); err != nil {
		return fmt.Errorf("reading identity: %w", err)
	} else if found {
		return fmt.Errorf("identity %s at %s is linked already: %w", id.Subject, id.Issuer, store.ErrConflict)
	}
	have, err := db.identities(ctx, id.Login)
	if err != nil {
		return err
	}
	if len(have) >= store.MaxIdentities {
		return store.Invalidf("invalid identity: %s has %d linked already, the most one may", id.Login, len(have))
	}
	row := identityRow{Issuer: id.Issuer, Subject: id.Subject, Login: id.Login, Email: id.Email, LinkedAt: id.LinkedAt.UTC()}
	b := db.batch()
	b.set(k, row)
	b.set(part.str(id.Issuer).str(id.Subject), row)
	if err := b.commit(); err != nil {
		return fmt.Errorf("writing identity of %q: %w", id.Login, err)
	}
	return nil
}

// Identity reads the row of oidc_identities.
func (db *DB) Identity(ctx context.Context, issuer, subject string) (store.Identity, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return store.Identity{}, err
	}
	defer end()
	row, found, err := getRow[identityRow](db, identityKey(issuer, subject))
	if err != nil {
		return store.Identity{}, fmt.Errorf("reading identity: %w", err)
	}
	if !found {
		return store.Identity{}, fmt.Errorf("identity %s at %s: %w", subject, issuer, store.ErrNotFound)
	}
	return row.identity(), nil
}

// UserIdentities scans the account's partition.
func (db *DB) UserIdentities(ctx context.Context, login string) ([]store.Identity, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	return db.identities(ctx, login)
}

func (db *DB) identities(ctx context.Context, login string) ([]store.Identity, error) {
	var out []store.Identity
	p := userIdentitiesPartition(login)
	err := db.scan(ctx, p, p.end(), false, func(_, v []byte) (bool, error) {
		row, err := decode[identityRow](v)
		out = append(out, row.identity())
		return true, err
	})
	if err != nil {
		return nil, fmt.Errorf("the identities of %q: %w", login, err)
	}
	return out, nil
}

// UnlinkIdentity deletes both rows in one batch, under the locks of the
// identity and of the account's list.
func (db *DB) UnlinkIdentity(ctx context.Context, login, issuer, subject string) error {
	k := identityKey(issuer, subject)
	part := userIdentitiesPartition(login)
	end, err := db.beginLocked(ctx, k, part)
	if err != nil {
		return err
	}
	defer end()
	row, found, err := getRow[identityRow](db, k)
	if err != nil {
		return fmt.Errorf("reading identity: %w", err)
	}
	if !found || row.Login != login {
		return fmt.Errorf("identity %s at %s is not linked to %s: %w", subject, issuer, login, store.ErrNotFound)
	}
	b := db.batch()
	b.delete(k)
	b.delete(part.str(issuer).str(subject))
	if err := b.commit(); err != nil {
		return fmt.Errorf("unlinking identity of %q: %w", login, err)
	}
	return nil
}
