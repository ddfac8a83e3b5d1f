package cassandra

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/gocql/gocql"
	"github.com/killrchat/chatql/store"
)

const (
	insertUser = `INSERT INTO users (login, pass_hash, firstname, lastname, email, bio, search_prefixes)
		VALUES (?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS`
	selectUser = `SELECT login, pass_hash, firstname, lastname, email, bio, chat_rooms, deleted, avatar, bot, owner, no_read_receipts,
		email_verified, digests_off, digest_sent_at FROM users WHERE login = ?`
	addUserRoom    = `UPDATE users SET chat_rooms = chat_rooms + ? WHERE login = ?`
	removeUserRoom = `UPDATE users SET chat_rooms = chat_rooms - ? WHERE login = ?`
	// removeUserRoomAt is removeUserRoom at a given time, for the clean-up
	// of a deleted room (see cleanUpRoom).
	removeUserRoomAt = `UPDATE users USING TIMESTAMP ? SET chat_rooms = chat_rooms - ? WHERE login = ?`
	addUserRoomAt    = `UPDATE users USING TIMESTAMP ? SET chat_rooms = chat_rooms + ? WHERE login = ?`
)

// CreateUser stores a new account with INSERT ... IF NOT EXISTS, tried
// twice when a timeout leaves nothing written (againIfNotApplied). The new
// user is in no room yet, whatever a.ChatRooms says.
func (db *DB) CreateUser(ctx context.Context, a store.Account) error {
	return db.createAccount(ctx, a, insertUser, a.Login, a.PassHash, a.Firstname, a.Lastname, a.Email, a.Bio, store.Prefixes(a.Login, a.Firstname, a.Lastname))
}

// createAccount runs insert, an INSERT ... IF NOT EXISTS of a's row, with
// args.
func (db *DB) createAccount(ctx context.Context, a store.Account, insert string, args ...any) error {
	applied, err := againIfNotApplied(func() (bool, error) {
		q := db.query(ctx, insert, args...)
		return lwt(ctx, q, nil, func(ctx context.Context) (casOutcome, error) {
			got, err := db.readAccount(db.serialRead(ctx, selectUser, a.Login))
			switch {
			case errors.Is(err, errDeletedAccount):
				return casRejected, nil // the login of a deleted account stays taken
			case errors.Is(err, gocql.ErrNotFound):
				return casNotApplied, nil
			case err != nil:
				return 0, err
			case bytes.Equal(got.PassHash, a.PassHash):
				// Hashes are salted: an equal one is our own write.
				return casApplied, nil
			}
			return casRejected, nil
		})
	})
	if err != nil {
		return fmt.Errorf("cassandra: create user %q: %w", a.Login, err)
	}
	if !applied {
		return fmt.Errorf("login %q: %w", a.Login, store.ErrConflict)
	}
	return nil
}

// Account returns the account of login, password hash included.
func (db *DB) Account(ctx context.Context, login string) (store.Account, error) {
	a, err := db.readAccount(db.query(ctx, selectUser, login))
	if errors.Is(err, gocql.ErrNotFound) || errors.Is(err, errDeletedAccount) {
		return store.Account{}, fmt.Errorf("user %q: %w", login, store.ErrNotFound)
	}
	if err != nil {
		return store.Account{}, fmt.Errorf("cassandra: read user %q: %w", login, err)
	}
	return a, nil
}

// User returns the profile of login.
func (db *DB) User(ctx context.Context, login string) (store.User, error) {
	a, err := db.Account(ctx, login)
	return a.User, err
}

// errDeletedAccount is what readAccount returns for the tombstone of a
// deleted account.
var errDeletedAccount = errors.New("account deleted")

// readAccount runs selectUser. It returns gocql.ErrNotFound for no row, and
// for a row holding chat_rooms alone, which a join by a login that never
// signed up leaves behind: the INSERT of a signup always writes firstname,
// an empty string included, so only such a row has it null. It returns
// errDeletedAccount for a deleted account's tombstone.
func (db *DB) readAccount(q *gocql.Query) (store.Account, error) {
	var a store.Account
	var firstname *string
	var deleted bool
	var avatar string
	err := q.Scan(&a.Login, &a.PassHash, &firstname, &a.Lastname, &a.Email, &a.Bio, &a.ChatRooms, &deleted, &avatar, &a.Bot, &a.Owner, &a.NoReadReceipts,
		&a.EmailVerified, &a.DigestsOff, &a.DigestSentAt)
	if err == nil && deleted {
		err = errDeletedAccount
	}
	if err == nil && firstname == nil {
		err = gocql.ErrNotFound
	}
	if err != nil {
		return store.Account{}, err
	}
	a.Firstname = *firstname
	a.Avatar = decodePicture(avatar)
	if !a.DigestSentAt.IsZero() {
		a.DigestSentAt = a.DigestSentAt.UTC()
	}
	slices.Sort(a.ChatRooms)
	return a, nil
}
