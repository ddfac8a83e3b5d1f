package cassandra

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gocql/gocql"

	"github.com/killrchat/chatql/store"
)

const (
	insertBot = `INSERT INTO users (login, pass_hash, firstname, lastname, email, bio, bot, owner, search_prefixes)
		VALUES (?, ?, ?, ?, '', '', true, ?, ?) IF NOT EXISTS`
	insertBotListing = `INSERT INTO bots_by_owner (owner, login, firstname, lastname, created_at, key_prefix, key_hash)
		VALUES (?, ?, ?, ?, ?, ?, ?)`
	selectBots = `SELECT login, firstname, lastname, created_at, key_prefix, key_hash
		FROM bots_by_owner WHERE owner = ?`
	selectBot = `SELECT login, firstname, lastname, created_at, key_prefix, key_hash
		FROM bots_by_owner WHERE owner = ? AND login = ?`
	setBotListingKey = `UPDATE bots_by_owner SET key_prefix = ?, key_hash = ? WHERE owner = ? AND login = ?`
	deleteBotListing = `DELETE FROM bots_by_owner WHERE owner = ? AND login = ?`
	insertBotKey     = `INSERT INTO bot_keys (key_hash, login, owner) VALUES (?, ?, ?)`
	selectBotKey     = `SELECT login FROM bot_keys WHERE key_hash = ?`
	deleteBotKey     = `DELETE FROM bot_keys WHERE key_hash = ?`
)

// CreateBot inserts the account as CreateUser does, then its listing and
// its key in one logged batch. Should the batch fail, the account stands
// with no key (it cannot be used) and unlisted; creating it again gives
// ErrConflict.
func (db *DB) CreateBot(ctx context.Context, a store.Account, key store.BotKey, createdAt time.Time) error {
	if err := db.createAccount(ctx, a, insertBot, a.Login, a.PassHash, a.Firstname, a.Lastname, a.Owner, store.Prefixes(a.Login, a.Firstname, a.Lastname)); err != nil {
		return err
	}
	b := db.session.NewBatch(gocql.LoggedBatch).WithContext(ctx)
	b.Query(insertBotListing, a.Owner, a.Login, a.Firstname, a.Lastname, createdAt, key.Prefix, key.Hash)
	b.Query(insertBotKey, key.Hash, a.Login, a.Owner)
	if err := db.session.ExecuteBatch(b); err != nil {
		return fmt.Errorf("cassandra: write the key of bot %q: %w", a.Login, err)
	}
	return nil
}

// Bots reads the owner's partition of bots_by_owner.
func (db *DB) Bots(ctx context.Context, owner string) ([]store.Bot, error) {
	iter := db.query(ctx, selectBots, owner).Iter()
	out := []store.Bot{}
	b := store.Bot{Owner: owner}
	for iter.Scan(&b.Login, &b.Firstname, &b.Lastname, &b.CreatedAt, &b.KeyPrefix, &b.KeyHash) {
		out = append(out, b)
		b = store.Bot{Owner: owner}
	}
	if err := iter.Close(); err != nil {
		return nil, fmt.Errorf("cassandra: read the bots of %q: %w", owner, err)
	}
	return out, nil
}

// BotByKey reads the key's row of bot_keys.
func (db *DB) BotByKey(ctx context.Context, hash []byte) (string, error) {
	var login string
	err := db.query(ctx, selectBotKey, hash).Scan(&login)
	switch {
	case errors.Is(err, gocql.ErrNotFound):
		return "", fmt.Errorf("bot key: %w", store.ErrNotFound)
	case err != nil:
		return "", fmt.Errorf("cassandra: read a bot key: %w", err)
	}
	return login, nil
}

// SetBotKey reads the listing, then, in one logged batch, deletes the old
// key's row, writes the new one and updates the listing. Two rotations at
// once may both write a key: the listing shows the last, and the other
// stays usable until the bot is rotated again or removed.
func (db *DB) SetBotKey(ctx context.Context, owner, login string, key store.BotKey) (store.Bot, error) {
	old, err := db.bot(ctx, owner, login)
	if err != nil {
		return store.Bot{}, err
	}
	b := db.session.NewBatch(gocql.LoggedBatch).WithContext(ctx)
	b.Query(deleteBotKey, old.KeyHash)
	b.Query(insertBotKey, key.Hash, login, owner)
	b.Query(setBotListingKey, key.Prefix, key.Hash, owner, login)
	if err := db.session.ExecuteBatch(b); err != nil {
		return store.Bot{}, fmt.Errorf("cassandra: write the key of bot %q: %w", login, err)
	}
	return old, nil
}

// RemoveBot reads the listing, then deletes it and its key's row in one
// logged batch.
func (db *DB) RemoveBot(ctx context.Context, owner, login string) (store.Bot, error) {
	old, err := db.bot(ctx, owner, login)
	if err != nil {
		return store.Bot{}, err
	}
	b := db.session.NewBatch(gocql.LoggedBatch).WithContext(ctx)
	b.Query(deleteBotKey, old.KeyHash)
	b.Query(deleteBotListing, owner, login)
	if err := db.session.ExecuteBatch(b); err != nil {
		return store.Bot{}, fmt.Errorf("cassandra: remove bot %q: %w", login, err)
	}
	return old, nil
}

// bot reads owner's listing of the bot login, or fails with ErrNotFound.
func (db *DB) bot(ctx context.Context, owner, login string) (store.Bot, error) {
	b := store.Bot{Owner: owner}
	err := db.query(ctx, selectBot, owner, login).Scan(&b.Login, &b.Firstname, &b.Lastname, &b.CreatedAt, &b.KeyPrefix, &b.KeyHash)
	switch {
	case errors.Is(err, gocql.ErrNotFound):
		return store.Bot{}, fmt.Errorf("bot %q of %q: %w", login, owner, store.ErrNotFound)
	case err != nil:
		return store.Bot{}, fmt.Errorf("cassandra: read bot %q: %w", login, err)
	}
	return b, nil
}
