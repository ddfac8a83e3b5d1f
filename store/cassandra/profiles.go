package cassandra

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gocql/gocql"
	"github.com/killrchat/chatql/store"
)

const (
	// A row whose firstname is null holds chat_rooms alone (see
	// readAccount): no user.
	selectNames = `SELECT login, firstname, lastname, deleted, avatar, bot FROM users WHERE login IN ?`
	// deleteAccount erases everything but the login and the rooms, on the
	// condition that the password is the one the caller checked; the
	// tombstone's firstname is '' rather than null, so that the row still
	// reads as an account's (readAccount), a deleted one.
	deleteAccount = `UPDATE users SET deleted = true, firstname = '', lastname = null, email = null, bio = null, pass_hash = null, avatar = null,
		email_verified = null, digests_off = null, digest_sent_at = null, search_prefixes = null
		WHERE login = ? IF pass_hash = ?`
	// setAvatar is a compare-and-set of the avatar read, on the account
	// standing (a tombstone has no pass_hash).
	setAvatar       = `UPDATE users SET avatar = ? WHERE login = ? IF pass_hash = ? AND avatar = ?`
	selectUserRooms = `SELECT chat_rooms FROM users WHERE login = ?`
	deleteBlocksOf  = `DELETE FROM user_blocks WHERE login = ?`
	deleteMutesOf   = `DELETE FROM user_mutes WHERE login = ?`
)

// namesPerQuery bounds the logins of one IN query: its coordinator reads
// that many partitions.
const namesPerQuery = 100

// UpdateProfile writes the fields given with UPDATE ... IF pass_hash = ?,
// the hash just read: an account deleted meanwhile has none, so the update
// cannot write names back into its tombstone. Only the fields given are
// set, so two updates of different fields both stand. A password change
// between the read and the write makes it read and try again.
func (db *DB) UpdateProfile(ctx context.Context, login string, p store.ProfileUpdate) (store.User, error) {
	var sets []string
	var args []any
	for _, f := range []struct {
		col string
		v   *string
	}{{"firstname", p.Firstname}, {"lastname", p.Lastname}, {"bio", p.Bio}} {
		if f.v != nil {
			sets = append(sets, f.col+" = ?")
			args = append(args, *f.v)
		}
	}
	if p.ReadReceipts != nil {
		sets = append(sets, "no_read_receipts = ?")
		args = append(args, !*p.ReadReceipts)
	}
	if len(sets) == 0 {
		a, err := db.Account(ctx, login)
		return p.Apply(a.User), err
	}
	stmt := `UPDATE users SET ` + strings.Join(sets, ", ") + `, search_prefixes = ? WHERE login = ? IF pass_hash = ?`
	a, err := db.updateOnPassword(ctx, login, "update profile", func(a store.Account) *gocql.Query {
		want := p.Apply(a.User)
		return db.query(ctx, stmt, append(slices.Clone(args), store.Prefixes(login, want.Firstname, want.Lastname), login, a.PassHash)...)
	}, func(_, got store.Account) bool {
		// Ours, or the same values: either way, they stand.
		want := p.Apply(got.User)
		return want.UserRef == got.UserRef && want.Bio == got.Bio && want.NoReadReceipts == got.NoReadReceipts
	})
	if err != nil {
		return store.User{}, err
	}
	return p.Apply(a.User), nil
}

// updateOnPassword writes what write makes of the account just read, a
// statement ending IF pass_hash = ? with the hash read: an account deleted
// meanwhile has none, so nothing is written back into its tombstone, and
// a password change between the read and the write makes it read and try
// again. When a write's outcome is unknown, landed tells whether the row,
// read serially, shows it. It returns the account the write was made on.
func (db *DB) updateOnPassword(ctx context.Context, login, what string, write func(a store.Account) *gocql.Query, landed func(a, got store.Account) bool) (store.Account, error) {
	for range maxCASAttempts {
		a, err := db.Account(ctx, login)
		if err != nil {
			return store.Account{}, err
		}
		var current []byte
		applied, err := lwt(ctx, write(a), map[string]any{"pass_hash": &current}, func(ctx context.Context) (casOutcome, error) {
			got, err := db.readAccount(db.serialRead(ctx, selectUser, login))
			switch {
			case errors.Is(err, gocql.ErrNotFound), errors.Is(err, errDeletedAccount):
				return casRejected, nil
			case err != nil:
				return 0, err
			case !bytes.Equal(got.PassHash, a.PassHash):
				current = got.PassHash
				return casRejected, nil
			case landed(a, got):
				return casApplied, nil
			}
			return casNotApplied, nil
		})
		switch {
		case err != nil:
			return store.Account{}, fmt.Errorf("cassandra: %s of %q: %w", what, login, err)
		case applied:
			return a, nil
		case current == nil:
			return store.Account{}, fmt.Errorf("user %q: %w", login, store.ErrNotFound)
		}
		// The password changed since the read: read again.
	}
	return store.Account{}, fmt.Errorf("cassandra: %s of %q: the password kept changing, gave up after %d attempts", what, login, maxCASAttempts)
}

// SetAvatar writes the avatar as a compare-and-set of the one read, on the
// account standing; another change of either between the read and the
// write makes it read and try again.
func (db *DB) SetAvatar(ctx context.Context, login string, avatar *store.Picture) (*store.Picture, error) {
	fail := func(err error) error { return fmt.Errorf("cassandra: set the avatar of %q: %w", login, err) }
	value, err := pictureValue(avatar)
	if err != nil {
		return nil, fail(err)
	}
	for range maxCASAttempts {
		a, err := db.readAccount(db.serialRead(ctx, selectUser, login))
		switch {
		case errors.Is(err, gocql.ErrNotFound), errors.Is(err, errDeletedAccount):
			return nil, fmt.Errorf("user %q: %w", login, store.ErrNotFound)
		case err != nil:
			return nil, fail(err)
		}
		old, err := pictureValue(a.Avatar)
		if err != nil {
			return nil, fail(err)
		}
		q := db.query(ctx, setAvatar, value, login, a.PassHash, old)
		applied, err := lwt(ctx, q, nil, func(ctx context.Context) (casOutcome, error) {
			got, err := db.readAccount(db.serialRead(ctx, selectUser, login))
			switch {
			case errors.Is(err, gocql.ErrNotFound), errors.Is(err, errDeletedAccount):
				return casRejected, nil
			case err != nil:
				return 0, err
			case samePicture(got.Avatar, avatar):
				return casApplied, nil
			case samePicture(got.Avatar, a.Avatar) && bytes.Equal(got.PassHash, a.PassHash):
				return casNotApplied, nil
			}
			return casRejected, nil
		})
		if err != nil {
			return nil, fail(err)
		}
		if applied {
			return a.Avatar, nil
		}
		// The avatar or the password changed since the read, or the
		// account went: read again.
	}
	return nil, fail(fmt.Errorf("the avatar kept changing, gave up after %d attempts", maxCASAttempts))
}

// Names reads the users' rows, namesPerQuery logins per query.
func (db *DB) Names(ctx context.Context, logins []string) (map[string]store.PublicProfile, error) {
	out := make(map[string]store.PublicProfile, len(logins))
	for len(logins) > 0 {
		chunk := logins[:min(len(logins), namesPerQuery)]
		logins = logins[len(chunk):]
		iter := db.query(ctx, selectNames, chunk).Iter()
		var login, lastname, avatar string
		var firstname *string
		var deleted, bot bool
		for iter.Scan(&login, &firstname, &lastname, &deleted, &avatar, &bot) {
			if firstname != nil && !deleted {
				out[login] = store.PublicProfile{
					UserRef: store.UserRef{Login: login, Firstname: *firstname, Lastname: lastname},
					Avatar:  decodePicture(avatar),
					Bot:     bot,
				}
			}
			firstname, deleted, bot, lastname, avatar = nil, false, false, "", ""
		}
		if err := iter.Close(); err != nil {
			return nil, fmt.Errorf("cassandra: read names: %w", err)
		}
	}
	return out, nil
}

// DeleteAccount turns the row into a tombstone with UPDATE ... IF pass_hash
// = ?, then deletes the user's sessions, blocks, mutes and push
// subscriptions (their partition, with the previews choice). A failure
// after the tombstone leaves some of those behind: the sessions are
// unusable (Refresh reads the user), the blocks and mutes invisible (only
// their owner reads them); subscriptions left behind would still be read
// by whoever pushes to the user, who should check that the account stands.
func (db *DB) DeleteAccount(ctx context.Context, login string, passHash []byte) ([]string, error) {
	a, err := db.readAccount(db.serialRead(ctx, selectUser, login))
	switch {
	case errors.Is(err, gocql.ErrNotFound), errors.Is(err, errDeletedAccount):
		return nil, fmt.Errorf("user %q: %w", login, store.ErrNotFound)
	case err != nil:
		return nil, fmt.Errorf("cassandra: read user %q: %w", login, err)
	}
	var current []byte
	q := db.query(ctx, deleteAccount, login, passHash)
	applied, err := lwt(ctx, q, map[string]any{"pass_hash": &current}, func(ctx context.Context) (casOutcome, error) {
		got, err := db.readAccount(db.serialRead(ctx, selectUser, login))
		switch {
		case errors.Is(err, errDeletedAccount):
			return casApplied, nil
		case errors.Is(err, gocql.ErrNotFound):
			return casRejected, nil
		case err != nil:
			return 0, err
		case bytes.Equal(got.PassHash, passHash):
			return casNotApplied, nil
		}
		current = got.PassHash
		return casRejected, nil
	})
	switch {
	case err != nil:
		return nil, fmt.Errorf("cassandra: delete user %q: %w", login, err)
	case !applied && current == nil:
		return nil, fmt.Errorf("user %q: %w", login, store.ErrNotFound)
	case !applied:
		return nil, fmt.Errorf("password of %q changed meanwhile: %w", login, store.ErrConflict)
	}
	if err := db.DeleteSessions(ctx, login, ""); err != nil {
		return nil, err
	}
	for _, stmt := range []string{deleteBlocksOf, deleteMutesOf, deletePushOf} {
		if err := db.query(ctx, stmt, login).Exec(); err != nil {
			return nil, fmt.Errorf("cassandra: delete user %q: %w", login, err)
		}
	}
	if err := db.forgetDigest(ctx, login); err != nil {
		return nil, fmt.Errorf("cassandra: delete user %q: %w", login, err)
	}
	// The rooms as the tombstone lists them: a join that ran since the read
	// above is in it too.
	rooms := a.ChatRooms
	var after []string
	if err := db.serialRead(ctx, selectUserRooms, login).Scan(&after); err == nil {
		rooms = after
	}
	return rooms, nil
}
