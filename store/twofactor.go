package store

import (
	"context"
	"time"
)

// TwoFactor is a user's two-factor sign-in: a TOTP key (RFC 6238) and
// one-time recovery codes.
type TwoFactor struct {
	Login string
	// Secret is the TOTP key, sealed (encrypted and authenticated) by the
	// server: the store never holds it in the clear.
	Secret []byte
	// Enabled is set once the user confirmed the key with a code; until
	// then sign-in does not ask for one.
	Enabled bool
	// RecoveryHashes are the SHA-256 of the unused recovery codes.
	RecoveryHashes [][]byte
	// LastStep is the TOTP time step of the last code accepted: a code of
	// that step or an earlier one is refused (no replay).
	LastStep int64
	// Version counts the writes: every change is a compare-and-set on it,
	// so a code or a recovery code is accepted once however many requests
	// present it at once.
	Version   int
	UpdatedAt time.Time
}

// MaxRecoveryCodes caps the recovery codes a user holds.
const MaxRecoveryCodes = 16

// TwoFactors is the persistence contract of two-factor sign-in.
type TwoFactors interface {
	// TwoFactor returns login's two-factor settings. Returns ErrNotFound
	// if there are none.
	TwoFactor(ctx context.Context, login string) (TwoFactor, error)

	// PutTwoFactor stores tf, whose Version is from+1, if the stored
	// settings are at version from (0: none stored): a compare-and-set.
	// Returns ErrConflict if they moved on (or exist, for from 0),
	// ErrNotFound if from is not 0 and there are none.
	PutTwoFactor(ctx context.Context, tf TwoFactor, from int) error

	// DeleteTwoFactor deletes login's settings if they are at version
	// from. Returns ErrConflict if they moved on, ErrNotFound if there are
	// none.
	DeleteTwoFactor(ctx context.Context, login string, from int) error
}
