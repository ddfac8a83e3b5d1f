package store

import (
	"context"
	"time"
)

// Passkey is a WebAuthn credential a user registered to sign in with, no
// password needed.
type Passkey struct {
	Login string
	// ID is the credential's id, as the authenticator made it.
	ID []byte
	// Name is what the user calls it ("Phone", "YubiKey").
	Name string
	// Credential is the credential as the server verifies assertions with
	// it: its public key, flags and signature counter (JSON of go-webauthn's
	// Credential). No secret: a passkey's private key never leaves its
	// authenticator.
	Credential []byte
	CreatedAt  time.Time
	// LastUsedAt is the last sign-in with it; zero if never.
	LastUsedAt time.Time
}

// MaxPasskeys caps the passkeys of one user.
const MaxPasskeys = 20

// Passkeys is the persistence contract of passkeys: a partition per user.
type Passkeys interface {
	// AddPasskey stores a new passkey of p.Login (INSERT ... IF NOT
	// EXISTS). Returns ErrConflict if the user has one of that id,
	// ErrInvalid if they have MaxPasskeys already.
	AddPasskey(ctx context.Context, p Passkey) error

	// UserPasskeys returns login's passkeys, by id.
	UserPasskeys(ctx context.Context, login string) ([]Passkey, error)

	// UpdatePasskey replaces the Credential and LastUsedAt of a stored
	// passkey (after a sign-in). Returns ErrNotFound if it is gone.
	UpdatePasskey(ctx context.Context, p Passkey) error

	// DeletePasskey deletes one of login's passkeys. Returns ErrNotFound
	// if there is no such passkey.
	DeletePasskey(ctx context.Context, login string, id []byte) error
}
