package cassandra

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gocql/gocql"
	"github.com/killrchat/chatql/store"
)

var _ store.Email = (*DB)(nil)

const (
	// setEmail is a compare-and-set on the password hash read, as
	// UpdateProfile's: a tombstone has none, so the address never goes
	// back into a deleted account.
	setEmail       = `UPDATE users SET email = ?, email_verified = false WHERE login = ? IF pass_hash = ?`
	verifyEmail    = `UPDATE users SET email_verified = true WHERE login = ? IF email = ?`
	setDigestsOff  = `UPDATE users SET digests_off = ? WHERE login = ?`
	setDigestSent  = `UPDATE users SET digest_sent_at = ? WHERE login = ?`
	insertEmailLog = `INSERT INTO email_logins (email, login) VALUES (?, ?)`
	selectEmailLog = `SELECT login FROM email_logins WHERE email = ?`

	insertEmailToken = `INSERT INTO email_tokens (token_hash, purpose, login, email, expires_at) VALUES (?, ?, ?, ?, ?) USING TTL ?`
	selectEmailToken = `SELECT purpose, login, email, expires_at FROM email_tokens WHERE token_hash = ?`
	deleteEmailToken = `DELETE FROM email_tokens WHERE token_hash = ? IF EXISTS`

	selectDigestDue     = `SELECT due FROM digest_due WHERE shard = ? AND login = ?`
	insertDigestDue     = `INSERT INTO digest_due (shard, login, due) VALUES (?, ?, ?)`
	selectDueDigests    = `SELECT login, due FROM digest_due WHERE shard = ?`
	deleteDigestDue     = `DELETE FROM digest_due WHERE shard = ? AND login = ?`
	insertDigestNotice  = `INSERT INTO digest_notices (login, id, kind, room, sender) VALUES (?, ?, ?, ?, ?)`
	selectDigestNotices = `SELECT id, kind, room, sender FROM digest_notices WHERE login = ?`
	selectDigestIDs     = `SELECT id FROM digest_notices WHERE login = ? LIMIT ?`
	deleteDigestNotice  = `DELETE FROM digest_notices WHERE login = ? AND id = ?`
	deleteDigestOf      = `DELETE FROM digest_notices WHERE login = ?`
)

// SetEmail writes the address on the password hash read, reading again
// when the password changed meanwhile.
func (db *DB) SetEmail(ctx context.Context, login, email string) error {
	_, err := db.updateOnPassword(ctx, login, "set the email", func(a store.Account) *gocql.Query {
		return db.query(ctx, setEmail, email, login, a.PassHash)
	}, func(_, got store.Account) bool { return got.Email == email && !got.EmailVerified })
	return err
}

// VerifyEmail marks the address verified with UPDATE ... IF email = ?,
// then indexes it.
func (db *DB) VerifyEmail(ctx context.Context, login, email string) error {
	if _, err := db.Account(ctx, login); err != nil {
		return err
	}
	if email == "" {
		return fmt.Errorf("the email of %q changed: %w", login, store.ErrConflict)
	}
	q := db.query(ctx, verifyEmail, login, email)
	applied, err := lwt(ctx, q, nil, func(ctx context.Context) (casOutcome, error) {
		got, err := db.readAccount(db.serialRead(ctx, selectUser, login))
		switch {
		case errors.Is(err, gocql.ErrNotFound), errors.Is(err, errDeletedAccount):
			return casRejected, nil
		case err != nil:
			return 0, err
		case got.Email != email:
			return casRejected, nil
		case got.EmailVerified:
			return casApplied, nil
		}
		return casNotApplied, nil
	})
	switch {
	case err != nil:
		return fmt.Errorf("cassandra: verify the email of %q: %w", login, err)
	case !applied:
		return fmt.Errorf("the email of %q changed: %w", login, store.ErrConflict)
	}
	if err := db.write(ctx, insertEmailLog, store.NormalizeEmail(email), login).Exec(); err != nil {
		return fmt.Errorf("cassandra: index the email of %q: %w", login, err)
	}
	return nil
}

func (db *DB) VerifiedEmailLogin(ctx context.Context, email string) (string, error) {
	var login string
	err := db.query(ctx, selectEmailLog, store.NormalizeEmail(email)).Scan(&login)
	if errors.Is(err, gocql.ErrNotFound) {
		return "", fmt.Errorf("verified email: %w", store.ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("cassandra: read the login of an email: %w", err)
	}
	return login, nil
}

func (db *DB) SetEmailDigests(ctx context.Context, login string, on bool) error {
	if err := db.query(ctx, setDigestsOff, !on, login).Exec(); err != nil {
		return fmt.Errorf("cassandra: set the email digests of %q: %w", login, err)
	}
	return nil
}

func (db *DB) SetDigestSent(ctx context.Context, login string, at time.Time) error {
	if err := db.query(ctx, setDigestSent, at.UTC(), login).Exec(); err != nil {
		return fmt.Errorf("cassandra: record the digest of %q: %w", login, err)
	}
	return nil
}

// CreateEmailToken writes the token with a TTL to its expiry.
func (db *DB) CreateEmailToken(ctx context.Context, t store.EmailToken) error {
	if len(t.Hash) == 0 || t.Login == "" || t.Purpose == "" {
		return store.Invalidf("email token: a hash, a login and a purpose are needed")
	}
	ttl := max(int(time.Until(t.ExpiresAt).Seconds())+1, 1)
	if err := db.write(ctx, insertEmailToken, t.Hash, string(t.Purpose), t.Login, t.Email, t.ExpiresAt.UTC(), ttl).Exec(); err != nil {
		return fmt.Errorf("cassandra: store an email token of %q: %w", t.Login, err)
	}
	return nil
}

// UseEmailToken reads the token, then deletes it with DELETE ... IF
// EXISTS: of racing uses, the one whose delete applied has it. An unknown
// outcome whose read-back finds the token gone counts as another's use.
func (db *DB) UseEmailToken(ctx context.Context, hash []byte) (store.EmailToken, error) {
	t := store.EmailToken{Hash: hash}
	var purpose string
	err := db.serialRead(ctx, selectEmailToken, hash).Scan(&purpose, &t.Login, &t.Email, &t.ExpiresAt)
	if errors.Is(err, gocql.ErrNotFound) {
		return t, fmt.Errorf("email token: %w", store.ErrNotFound)
	}
	if err != nil {
		return t, fmt.Errorf("cassandra: read an email token: %w", err)
	}
	t.Purpose = store.EmailPurpose(purpose)
	applied, err := lwt(ctx, db.query(ctx, deleteEmailToken, hash), nil, func(ctx context.Context) (casOutcome, error) {
		var p string
		err := db.serialRead(ctx, selectEmailToken, hash).Scan(&p)
		switch {
		case errors.Is(err, gocql.ErrNotFound):
			return casRejected, nil
		case err != nil:
			return 0, err
		}
		return casNotApplied, nil
	})
	switch {
	case err != nil:
		return t, fmt.Errorf("cassandra: use an email token: %w", err)
	case !applied:
		return t, fmt.Errorf("email token: %w", store.ErrNotFound)
	case !time.Now().Before(t.ExpiresAt):
		return t, fmt.Errorf("email token expired: %w", store.ErrNotFound)
	}
	return t, nil
}

// AddDigestNotices counts the notices kept, writes the new ones, and the
// due time if none is set: reads then writes, which the shard's single
// reader (the holder of its lease) makes safe.
func (db *DB) AddDigestNotices(ctx context.Context, login string, due time.Time, notices []store.Notice) error {
	fail := func(err error) error { return fmt.Errorf("cassandra: add to the digest of %q: %w", login, err) }
	iter := db.query(ctx, selectDigestIDs, login, store.MaxDigestNotices).Iter()
	kept := map[gocql.UUID]bool{}
	var id gocql.UUID
	for iter.Scan(&id) {
		kept[id] = true
	}
	if err := iter.Close(); err != nil {
		return fail(err)
	}
	n := len(kept)
	for _, nt := range notices {
		if kept[gocql.UUID(nt.ID)] || n >= store.MaxDigestNotices {
			continue
		}
		if err := db.write(ctx, insertDigestNotice, login, gocql.UUID(nt.ID), string(nt.Kind), nt.Room, userUDT(nt.From)).Exec(); err != nil {
			return fail(err)
		}
		kept[gocql.UUID(nt.ID)] = true
		n++
	}
	var at time.Time
	err := db.query(ctx, selectDigestDue, store.NoticeShard(login), login).Scan(&at)
	if errors.Is(err, gocql.ErrNotFound) {
		err = db.SetDigestDue(ctx, login, due)
	}
	if err != nil {
		return fail(err)
	}
	return nil
}

func (db *DB) SetDigestDue(ctx context.Context, login string, due time.Time) error {
	if err := db.write(ctx, insertDigestDue, store.NoticeShard(login), login, due.UTC()).Exec(); err != nil {
		return fmt.Errorf("cassandra: schedule the digest of %q: %w", login, err)
	}
	return nil
}

// DueDigests reads the shard's partition: the people with a digest
// pending.
func (db *DB) DueDigests(ctx context.Context, shard int, now time.Time, limit int) ([]string, error) {
	if err := checkShard(shard); err != nil || limit <= 0 {
		return nil, err
	}
	iter := db.query(ctx, selectDueDigests, shard).Iter()
	var out []string
	var login string
	var due time.Time
	for len(out) < limit && iter.Scan(&login, &due) {
		if !due.After(now) {
			out = append(out, login)
		}
	}
	if err := iter.Close(); err != nil {
		return nil, fmt.Errorf("cassandra: due digests of shard %d: %w", shard, err)
	}
	return out, nil
}

func (db *DB) DigestNotices(ctx context.Context, login string) ([]store.Notice, error) {
	iter := db.query(ctx, selectDigestNotices, login).Iter()
	var out []store.Notice
	var (
		id         gocql.UUID
		kind, room string
		from       userUDT
	)
	for iter.Scan(&id, &kind, &room, &from) {
		out = append(out, store.Notice{ID: store.MessageID(id), Recipient: login, Kind: store.NoticeKind(kind), Room: room, From: store.UserRef(from)})
	}
	if err := iter.Close(); err != nil {
		return nil, fmt.Errorf("cassandra: the digest of %q: %w", login, err)
	}
	return out, nil
}

func (db *DB) ClearDigest(ctx context.Context, login string, notices []store.Notice) error {
	for _, n := range notices {
		if err := db.write(ctx, deleteDigestNotice, login, gocql.UUID(n.ID)).Exec(); err != nil {
			return fmt.Errorf("cassandra: clear the digest of %q: %w", login, err)
		}
	}
	if err := db.write(ctx, deleteDigestDue, store.NoticeShard(login), login).Exec(); err != nil {
		return fmt.Errorf("cassandra: clear the digest of %q: %w", login, err)
	}
	return nil
}

// forgetDigest deletes a deleted account's digest.
func (db *DB) forgetDigest(ctx context.Context, login string) error {
	if err := db.write(ctx, deleteDigestOf, login).Exec(); err != nil {
		return err
	}
	return db.write(ctx, deleteDigestDue, store.NoticeShard(login), login).Exec()
}
