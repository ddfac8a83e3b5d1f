package store

import (
	"context"
	"time"
)

// MaxBotsPerOwner caps the bot accounts one user may own.
const MaxBotsPerOwner = 20

// BotKey is the stored half of a bot's API key: the key itself is shown
// once, to its owner, and never stored.
type BotKey struct {
	// Hash is the SHA-256 of the key.
	Hash []byte
	// Prefix is the start of the key, which its owner recognises it by.
	Prefix string
}

// Bot is one of a user's bot accounts, as its owner's list shows it.
type Bot struct {
	UserRef
	Owner     string
	CreatedAt time.Time
	// KeyPrefix is the start of the bot's current API key.
	KeyPrefix string
	// KeyHash is the SHA-256 of the bot's current API key.
	KeyHash []byte
}

// Bots is the persistence contract of bot accounts: accounts of kind bot
// (User.Bot, with their User.Owner), each with one API key, found by the
// key's hash, and listed in their owner's bots. A bot account is a user
// like any other everywhere else; it is deleted as any account is
// (DeleteAccount), after RemoveBot.
type Bots interface {
	// CreateBot stores the bot account a (a.Bot set, a.Owner its owner,
	// a.PassHash random: no password hashes to it) as CreateUser stores a
	// user, lists it among its owner's bots as created at createdAt, and
	// stores its key. Returns ErrConflict if the login is taken; the
	// existing account is left untouched.
	CreateBot(ctx context.Context, a Account, key BotKey, createdAt time.Time) error

	// Bots returns the bots owner owns, sorted by login.
	Bots(ctx context.Context, owner string) ([]Bot, error)

	// BotByKey returns the login of the bot whose current key hashes to
	// hash. Returns ErrNotFound if there is none: the key was never issued,
	// or was replaced, or its bot removed.
	BotByKey(ctx context.Context, hash []byte) (string, error)

	// SetBotKey makes key the only key of owner's bot login: the old one
	// stops being found at once. It returns the bot as it was, with the
	// old key's hash and prefix. Returns
	// ErrNotFound if owner has no bot of that login.
	SetBotKey(ctx context.Context, owner, login string, key BotKey) (Bot, error)

	// RemoveBot deletes the key of owner's bot login and takes it off
	// owner's bots, and returns it as it was (its account stays, for
	// DeleteAccount). Returns ErrNotFound if owner has no bot of that
	// login.
	RemoveBot(ctx context.Context, owner, login string) (Bot, error)
}
