package store

import (
	"context"
	"strings"
	"time"
)

// EmailPurpose is what an emailed link does.
type EmailPurpose string

// The purposes of emailed links.
const (
	// VerifyEmailLink proves that its user reads the address it went to.
	VerifyEmailLink EmailPurpose = "VERIFY_EMAIL"
	// ResetPasswordLink lets its user choose a new password.
	ResetPasswordLink EmailPurpose = "RESET_PASSWORD"
)

// EmailToken is the stored side of an emailed link: the SHA-256 of the
// token the link carries (the token itself is never stored), what it is
// for, whose it is, and until when it works.
type EmailToken struct {
	Hash    []byte
	Purpose EmailPurpose
	Login   string
	// Email is the address the link went to.
	Email     string
	ExpiresAt time.Time
}

// MaxDigestNotices bounds the notices kept for one person's next email
// digest: past it, newer notices are not kept (the digest says "and
// more" in the app anyway).
const MaxDigestNotices = 100

// NormalizeEmail is the form of an address the verified addresses are
// found by: trimmed and in lower case.
func NormalizeEmail(email string) string { return strings.ToLower(strings.TrimSpace(email)) }

// Email keeps the users' email addresses and whether they verified them,
// the single-use links emailed to them, and the email digests owed to
// people who are away. User carries the address (Email), EmailVerified,
// DigestsOff and DigestSentAt.
type Email interface {
	// SetEmail replaces login's address (empty removes it), which is then
	// not verified. Returns ErrNotFound if there is no such user.
	SetEmail(ctx context.Context, login, email string) error
	// VerifyEmail marks login's address verified if it is still email (a
	// compare-and-set), and makes login the account the verified address
	// finds (VerifiedEmailLogin): the last to verify an address has it.
	// Returns ErrNotFound if there is no such user, ErrConflict if the
	// address changed.
	VerifyEmail(ctx context.Context, login, email string) error
	// VerifiedEmailLogin is the login that last verified email (compared
	// normalized). The caller checks that the account still has it
	// verified. Returns ErrNotFound if none did.
	VerifiedEmailLogin(ctx context.Context, email string) (string, error)
	// SetEmailDigests turns login's email digests on or off (on is the
	// default).
	SetEmailDigests(ctx context.Context, login string, on bool) error
	// SetDigestSent records when login's last digest was sent.
	SetDigestSent(ctx context.Context, login string, at time.Time) error

	// CreateEmailToken stores t until t.ExpiresAt.
	CreateEmailToken(ctx context.Context, t EmailToken) error
	// UseEmailToken deletes the token of this hash and returns it: of
	// racing uses exactly one gets it. Returns ErrNotFound if it is
	// unknown, used or expired.
	UseEmailToken(ctx context.Context, hash []byte) (EmailToken, error)

	// AddDigestNotices keeps notices (all of them login's) for login's
	// next digest, at most MaxDigestNotices, each once however often it
	// is added, and makes the digest due at due unless it is due already.
	// A digest is kept in login's outbox shard (NoticeShard), which the
	// holder of its lease alone reads and writes.
	AddDigestNotices(ctx context.Context, login string, due time.Time, notices []Notice) error
	// SetDigestDue makes login's digest due at due, whenever it was due.
	SetDigestDue(ctx context.Context, login string, due time.Time) error
	// DueDigests lists up to limit logins of shard whose digest is due at
	// now or before.
	DueDigests(ctx context.Context, shard int, now time.Time, limit int) ([]string, error)
	// DigestNotices are the notices kept for login's digest, oldest first.
	DigestNotices(ctx context.Context, login string) ([]Notice, error)
	// ClearDigest forgets login's digest: the notices given and when it
	// is due.
	ClearDigest(ctx context.Context, login string, notices []Notice) error
}
