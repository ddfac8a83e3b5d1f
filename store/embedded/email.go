package embedded

import (
	"context"
	"fmt"
	"time"

	"github.com/killrchat/chatql/store"
)

var _ store.Email = (*DB)(nil)

// emailTokenRow is a row of email_tokens; the hash is in the key.
type emailTokenRow struct {
	Purpose   string    `json:"p"`
	Login     string    `json:"l"`
	Email     string    `json:"e"`
	ExpiresAt time.Time `json:"x"`
}

// emailLoginRow is a row of email_logins.
type emailLoginRow struct {
	Login string `json:"l"`
}

// digestDueRow is a row of digest_due; the shard and login are in the key.
type digestDueRow struct {
	Due time.Time `json:"d"`
}

// digestNoticeRow is a row of digest_notices; the login and id are in
// the key.
type digestNoticeRow struct {
	Kind string  `json:"k"`
	Room string  `json:"r"`
	From userRef `json:"f"`
}

// updateUser changes login's row under its lock with change.
func (db *DB) updateUser(ctx context.Context, login, what string, change func(*userRow) error) error {
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
	if err := change(&row); err != nil {
		return err
	}
	b := db.batch()
	b.set(k, row)
	if err := b.commit(); err != nil {
		return fmt.Errorf("%s of %q: %w", what, login, err)
	}
	return nil
}

func (db *DB) SetEmail(ctx context.Context, login, email string) error {
	return db.updateUser(ctx, login, "setting the email", func(r *userRow) error {
		r.Email, r.EmailVerified = email, false
		return nil
	})
}

// VerifyEmail checks and marks under the user's lock, then indexes the
// address.
func (db *DB) VerifyEmail(ctx context.Context, login, email string) error {
	err := db.updateUser(ctx, login, "verifying the email", func(r *userRow) error {
		if r.Email != email || email == "" {
			return fmt.Errorf("the email of %q changed: %w", login, store.ErrConflict)
		}
		r.EmailVerified = true
		return nil
	})
	if err != nil {
		return err
	}
	end, err := db.begin(ctx)
	if err != nil {
		return err
	}
	defer end()
	b := db.batch()
	b.set(emailLoginKey(email), emailLoginRow{Login: login})
	if err := b.commit(); err != nil {
		return fmt.Errorf("indexing the email of %q: %w", login, err)
	}
	return nil
}

func (db *DB) VerifiedEmailLogin(ctx context.Context, email string) (string, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return "", err
	}
	defer end()
	row, found, err := getRow[emailLoginRow](db, emailLoginKey(email))
	if err != nil {
		return "", fmt.Errorf("reading the login of an email: %w", err)
	}
	if !found {
		return "", fmt.Errorf("verified email: %w", store.ErrNotFound)
	}
	return row.Login, nil
}

func (db *DB) SetEmailDigests(ctx context.Context, login string, on bool) error {
	return db.updateUser(ctx, login, "setting email digests", func(r *userRow) error {
		r.DigestsOff = !on
		return nil
	})
}

func (db *DB) SetDigestSent(ctx context.Context, login string, at time.Time) error {
	return db.updateUser(ctx, login, "recording a digest", func(r *userRow) error {
		r.DigestSentAt = at.UTC().Truncate(time.Millisecond)
		return nil
	})
}

func (db *DB) CreateEmailToken(ctx context.Context, t store.EmailToken) error {
	if len(t.Hash) == 0 || t.Login == "" || t.Purpose == "" {
		return store.Invalidf("email token: a hash, a login and a purpose are needed")
	}
	end, err := db.begin(ctx)
	if err != nil {
		return err
	}
	defer end()
	b := db.batch()
	b.set(emailTokenKey(t.Hash), emailTokenRow{Purpose: string(t.Purpose), Login: t.Login, Email: t.Email, ExpiresAt: t.ExpiresAt.UTC().Truncate(time.Millisecond)})
	if err := b.commit(); err != nil {
		return fmt.Errorf("storing an email token of %q: %w", t.Login, err)
	}
	return nil
}

// UseEmailToken reads and deletes the row under its lock. An expired row
// is deleted too.
func (db *DB) UseEmailToken(ctx context.Context, hash []byte) (store.EmailToken, error) {
	k := emailTokenKey(hash)
	end, err := db.beginLocked(ctx, k)
	if err != nil {
		return store.EmailToken{}, err
	}
	defer end()
	row, found, err := getRow[emailTokenRow](db, k)
	if err != nil {
		return store.EmailToken{}, fmt.Errorf("reading an email token: %w", err)
	}
	if !found {
		return store.EmailToken{}, fmt.Errorf("email token: %w", store.ErrNotFound)
	}
	b := db.batch()
	b.delete(k)
	if err := b.commit(); err != nil {
		return store.EmailToken{}, fmt.Errorf("using an email token: %w", err)
	}
	if !time.Now().Before(row.ExpiresAt) {
		return store.EmailToken{}, fmt.Errorf("email token expired: %w", store.ErrNotFound)
	}
	return store.EmailToken{Hash: hash, Purpose: store.EmailPurpose(row.Purpose), Login: row.Login, Email: row.Email, ExpiresAt: row.ExpiresAt}, nil
}

// AddDigestNotices writes under the lock of login's digest partition.
func (db *DB) AddDigestNotices(ctx context.Context, login string, due time.Time, notices []store.Notice) error {
	p := digestNoticesPartition(login)
	end, err := db.beginLocked(ctx, p)
	if err != nil {
		return err
	}
	defer end()
	kept := 0
	err = db.scan(ctx, p, p.end(), false, func(_, _ []byte) (bool, error) {
		kept++
		return kept < store.MaxDigestNotices, nil
	})
	if err != nil {
		return fmt.Errorf("counting the digest of %q: %w", login, err)
	}
	b := db.batch()
	for _, n := range notices {
		k := digestNoticeKey(login, n.ID)
		switch found, err := db.has(k); {
		case err != nil:
			return fmt.Errorf("reading the digest of %q: %w", login, err)
		case !found && kept < store.MaxDigestNotices:
			b.set(k, digestNoticeRow{Kind: string(n.Kind), Room: n.Room, From: refRow(n.From)})
			kept++
		}
	}
	dk := digestDueKey(login)
	switch found, err := db.has(dk); {
	case err != nil:
		return fmt.Errorf("reading the digest of %q: %w", login, err)
	case !found:
		b.set(dk, digestDueRow{Due: due.UTC().Truncate(time.Millisecond)})
	}
	if err := b.commit(); err != nil {
		return fmt.Errorf("adding to the digest of %q: %w", login, err)
	}
	return nil
}

func (db *DB) SetDigestDue(ctx context.Context, login string, due time.Time) error {
	end, err := db.begin(ctx)
	if err != nil {
		return err
	}
	defer end()
	b := db.batch()
	b.set(digestDueKey(login), digestDueRow{Due: due.UTC().Truncate(time.Millisecond)})
	if err := b.commit(); err != nil {
		return fmt.Errorf("scheduling the digest of %q: %w", login, err)
	}
	return nil
}

// DueDigests scans the shard's partition.
func (db *DB) DueDigests(ctx context.Context, shard int, now time.Time, limit int) ([]string, error) {
	if err := checkShard(shard); err != nil || limit <= 0 {
		return nil, err
	}
	end, err := db.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	p := digestDuePartition(shard)
	var out []string
	err = db.scan(ctx, p, p.end(), false, func(k, v []byte) (bool, error) {
		row, err := decode[digestDueRow](v)
		if err != nil {
			return false, err
		}
		if row.Due.After(now) {
			return true, nil
		}
		login, _, err := parseStr(k[len(p):])
		if err != nil {
			return false, err
		}
		out = append(out, login)
		return len(out) < limit, nil
	})
	if err != nil {
		return nil, fmt.Errorf("due digests of shard %d: %w", shard, err)
	}
	return out, nil
}

func (db *DB) DigestNotices(ctx context.Context, login string) ([]store.Notice, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	p := digestNoticesPartition(login)
	var out []store.Notice
	err = db.scan(ctx, p, p.end(), false, func(k, v []byte) (bool, error) {
		row, err := decode[digestNoticeRow](v)
		if err != nil {
			return false, err
		}
		id, err := store.MessageIDFromSortKey(k[len(p):])
		if err != nil {
			return false, err
		}
		out = append(out, store.Notice{ID: id, Recipient: login, Kind: store.NoticeKind(row.Kind), Room: row.Room, From: row.From.ref()})
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("the digest of %q: %w", login, err)
	}
	return out, nil
}

func (db *DB) ClearDigest(ctx context.Context, login string, notices []store.Notice) error {
	end, err := db.beginLocked(ctx, digestNoticesPartition(login))
	if err != nil {
		return err
	}
	defer end()
	b := db.batch()
	for _, n := range notices {
		b.delete(digestNoticeKey(login, n.ID))
	}
	b.delete(digestDueKey(login))
	if err := b.commit(); err != nil {
		return fmt.Errorf("clearing the digest of %q: %w", login, err)
	}
	return nil
}
