package store

import (
	"context"
	"time"
)

// Identity is an account at an OpenID Connect provider linked to a chatql
// account: signing in there signs in here.
type Identity struct {
	// Issuer and Subject name the account at the provider (the ID token's
	// iss and sub): together they are unique and never reassigned.
	Issuer  string
	Subject string
	// Login is the chatql account it signs in.
	Login string
	// Email is the address the provider gave, for the user to recognise
	// the link by; may be empty.
	Email    string
	LinkedAt time.Time
}

// MaxIdentities caps the identities linked to one account.
const MaxIdentities = 10

// Identities is the persistence contract of the links between OpenID
// Connect identities and accounts: a lookup by (issuer, subject), and each
// account's list.
type Identities interface {
	// LinkIdentity links id to id.Login (INSERT ... IF NOT EXISTS on the
	// issuer and subject), and lists it with the account. Returns
	// ErrConflict if the identity is linked already (to any account).
	LinkIdentity(ctx context.Context, id Identity) error

	// Identity returns the link of the provider's account. Returns
	// ErrNotFound if it is linked to none.
	Identity(ctx context.Context, issuer, subject string) (Identity, error)

	// UserIdentities returns the identities linked to login.
	UserIdentities(ctx context.Context, login string) ([]Identity, error)

	// UnlinkIdentity deletes the link of the provider's account to login
	// (a compare-and-set on its login) and takes it off the account's
	// list: it signs in nobody, and may be linked again. Returns
	// ErrNotFound if it is not linked to login.
	UnlinkIdentity(ctx context.Context, login, issuer, subject string) error
}
