package store

import (
	"context"
	"slices"
	"strings"
	"time"
)

// Session is one login of a user: the family of refresh tokens that
// descend from it, of which only the newest may be used. Access tokens name
// the session they belong to, and stop being accepted when it is gone.
type Session struct {
	Login string
	// ID is random and unique per session.
	ID string
	// RefreshHash is the SHA-256 of the current refresh token: the token
	// itself is never stored.
	RefreshHash []byte
	// Generation counts the rotations: the current refresh token is the
	// Generation-th of the family (the login's is 0).
	Generation int
	CreatedAt  time.Time
	// ExpiresAt is when the current refresh token stops being accepted, and
	// the session ends with it. Backends may forget a session after it.
	ExpiresAt time.Time

	// What the session shows its user of itself in their list of devices
	// (see UserSessions). Device names the client (its own name, or a
	// summary of its User-Agent); Address is the client address of the
	// sign-in or the last refresh; Method is how the session signed in
	// (SignInPassword, ...); LastSeenAt is the sign-in or the last refresh:
	// a rotation writes them with the rest, so "last seen" costs no write of
	// its own.
	Device     string
	Address    string
	Method     string
	LastSeenAt time.Time
	// TwoFactor reports whether the session proved a second factor (a
	// one-time code) or signed in with one that counts as two (a passkey).
	TwoFactor bool
}

// The ways a session signs in: Session.Method.
const (
	SignInPassword = "password"
	SignInPasskey  = "passkey"
	SignInOIDC     = "oidc"
)

// MaxListedSessions caps the sessions UserSessions returns: the newest
// seen.
const MaxListedSessions = 200

// Sessions is the persistence contract of logins: sessions and their
// refresh tokens, and password changes, which end sessions. Revoking a
// session deletes it: a deleted, an expired and an unknown session all read
// as ErrNotFound.
type Sessions interface {
	// CreateSession stores a new session (INSERT ... IF NOT EXISTS).
	// Returns ErrConflict if the id is taken.
	CreateSession(ctx context.Context, s Session) error

	// Session returns the session of login with this id.
	// Returns ErrNotFound if there is none or it has expired.
	Session(ctx context.Context, login, id string) (Session, error)

	// RotateSession stores next, the session as read with its new
	// RefreshHash, Generation and ExpiresAt, if its generation is still from: a
	// compare-and-set (UPDATE ... IF generation = from), so of concurrent
	// rotations from one generation exactly one succeeds. Returns
	// ErrConflict if the generation moved on, ErrNotFound if the session is
	// gone.
	RotateSession(ctx context.Context, next Session, from int) error

	// UserSessions returns login's live sessions, the most recently seen
	// (LastSeenAt) first, at most MaxListedSessions.
	UserSessions(ctx context.Context, login string) ([]Session, error)

	// DeleteSession revokes one session. Deleting a session that is gone
	// is harmless.
	DeleteSession(ctx context.Context, login, id string) error

	// DeleteSessions revokes every session of login except the one whose
	// id is keep (none if keep is empty).
	DeleteSessions(ctx context.Context, login, keep string) error

	// ChangePassword replaces login's password hash with newHash if it is
	// still oldHash: a compare-and-set, so of two concurrent changes from
	// one password one wins. Returns ErrNotFound if there is no such user,
	// ErrConflict if the hash changed meanwhile.
	ChangePassword(ctx context.Context, login string, oldHash, newHash []byte) error
}

// NewestSeen sorts sessions by LastSeenAt, newest first (then by id), and
// keeps the first MaxListedSessions: what UserSessions returns.
func NewestSeen(sessions []Session) []Session {
	slices.SortFunc(sessions, func(a, b Session) int {
		if c := b.LastSeenAt.Compare(a.LastSeenAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return sessions[:min(len(sessions), MaxListedSessions)]
}
