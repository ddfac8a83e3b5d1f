package embedded

import (
	"context"
	"fmt"

	"github.com/killrchat/chatql/store"
)

// CreateUser stores a new account unless its login is taken. The new user
// is in no room yet: a.ChatRooms is ignored, since rooms list their
// participants and the two sides must agree.
func (db *DB) CreateUser(ctx context.Context, a store.Account) error {
	k := userKey(a.Login)
	end, err := db.beginLocked(ctx, k)
	if err != nil {
		return err
	}
	defer end()

	if _, found, err := getRow[userRow](db, k); err != nil {
		return fmt.Errorf("reading user %q: %w", a.Login, err)
	} else if found {
		return fmt.Errorf("user %q: %w", a.Login, store.ErrConflict)
	}
	b := db.batch()
	row := accountRow(a)
	b.set(k, row)
	b.indexUser(row)
	if err := b.commit(); err != nil {
		return fmt.Errorf("writing user %q: %w", a.Login, err)
	}
	return nil
}

// Account returns the account of login, password hash included.
func (db *DB) Account(ctx context.Context, login string) (store.Account, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return store.Account{}, err
	}
	defer end()

	row, err := db.user(login)
	if err != nil {
		return store.Account{}, err
	}
	return row.account(), nil
}

// User returns the profile of login and the rooms it is in.
func (db *DB) User(ctx context.Context, login string) (store.User, error) {
	a, err := db.Account(ctx, login)
	return a.User, err
}

// user reads the row of login, or fails with ErrNotFound: also for the
// tombstone of a deleted account.
func (db *DB) user(login string) (userRow, error) {
	row, found, err := getRow[userRow](db, userKey(login))
	if err != nil {
		return row, fmt.Errorf("reading user %q: %w", login, err)
	}
	if !found || row.Deleted {
		return row, fmt.Errorf("user %q: %w", login, store.ErrNotFound)
	}
	return row, nil
}
