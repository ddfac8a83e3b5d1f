package embedded

import (
	"context"
	"fmt"
	"time"

	"github.com/killrchat/chatql/store"
)

// botRow is a row of bots_by_owner: one of a user's bots.
type botRow struct {
	Login     string    `json:"login"`
	Firstname string    `json:"firstname"`
	Lastname  string    `json:"lastname"`
	CreatedAt time.Time `json:"created_at"`
	KeyPrefix string    `json:"key_prefix"`
	KeyHash   []byte    `json:"key_hash"`
}

// botKeyRow is a row of bot_keys: the bot an API key's hash belongs to.
type botKeyRow struct {
	Login string `json:"login"`
	Owner string `json:"owner"`
}

func (r botRow) bot(owner string) store.Bot {
	return store.Bot{
		UserRef:   store.UserRef{Login: r.Login, Firstname: r.Firstname, Lastname: r.Lastname},
		Owner:     owner,
		CreatedAt: r.CreatedAt,
		KeyPrefix: r.KeyPrefix,
		KeyHash:   r.KeyHash,
	}
}

// CreateBot writes the bot's account, its listing and its key in one
// batch, under the locks of the login and of the owner's bots.
func (db *DB) CreateBot(ctx context.Context, a store.Account, key store.BotKey, createdAt time.Time) error {
	k := userKey(a.Login)
	end, err := db.beginLocked(ctx, k, botsPartition(a.Owner))
	if err != nil {
		return err
	}
	defer end()
	if _, found, err := getRow[userRow](db, k); err != nil {
		return fmt.Errorf("reading user %q: %w", a.Login, err)
	} else if found {
		return fmt.Errorf("user %q: %w", a.Login, store.ErrConflict)
	}
	a.Bot = true
	b := db.batch()
	b.set(k, accountRow(a))
	b.set(botsPartition(a.Owner).str(a.Login), botRow{
		Login: a.Login, Firstname: a.Firstname, Lastname: a.Lastname,
		CreatedAt: createdAt.UTC(), KeyPrefix: key.Prefix, KeyHash: key.Hash,
	})
	b.set(botKeyKey(key.Hash), botKeyRow{Login: a.Login, Owner: a.Owner})
	b.indexUser(accountRow(a))
	if err := b.commit(); err != nil {
		return fmt.Errorf("writing bot %q: %w", a.Login, err)
	}
	return nil
}

// Bots scans the owner's partition of bots_by_owner.
func (db *DB) Bots(ctx context.Context, owner string) ([]store.Bot, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	p := botsPartition(owner)
	out := []store.Bot{}
	err = db.scan(ctx, p, p.end(), false, func(_, v []byte) (bool, error) {
		row, err := decode[botRow](v)
		out = append(out, row.bot(owner))
		return true, err
	})
	if err != nil {
		return nil, fmt.Errorf("the bots of %q: %w", owner, err)
	}
	return out, nil
}

// BotByKey reads the key's row.
func (db *DB) BotByKey(ctx context.Context, hash []byte) (string, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return "", err
	}
	defer end()
	row, found, err := getRow[botKeyRow](db, botKeyKey(hash))
	switch {
	case err != nil:
		return "", fmt.Errorf("reading a bot key: %w", err)
	case !found:
		return "", fmt.Errorf("bot key: %w", store.ErrNotFound)
	}
	return row.Login, nil
}

// SetBotKey replaces the key's row and the listing's key in one batch,
// under the lock of the owner's bots.
func (db *DB) SetBotKey(ctx context.Context, owner, login string, key store.BotKey) (store.Bot, error) {
	end, err := db.beginLocked(ctx, botsPartition(owner))
	if err != nil {
		return store.Bot{}, err
	}
	defer end()
	row, err := db.bot(owner, login)
	if err != nil {
		return store.Bot{}, err
	}
	old := row.bot(owner)
	b := db.batch()
	b.delete(botKeyKey(row.KeyHash))
	row.KeyHash, row.KeyPrefix = key.Hash, key.Prefix
	b.set(botsPartition(owner).str(login), row)
	b.set(botKeyKey(key.Hash), botKeyRow{Login: login, Owner: owner})
	if err := b.commit(); err != nil {
		return store.Bot{}, fmt.Errorf("writing the key of bot %q: %w", login, err)
	}
	return old, nil
}

// RemoveBot deletes the listing and the key in one batch, under the lock
// of the owner's bots.
func (db *DB) RemoveBot(ctx context.Context, owner, login string) (store.Bot, error) {
	end, err := db.beginLocked(ctx, botsPartition(owner))
	if err != nil {
		return store.Bot{}, err
	}
	defer end()
	row, err := db.bot(owner, login)
	if err != nil {
		return store.Bot{}, err
	}
	b := db.batch()
	b.delete(botKeyKey(row.KeyHash))
	b.delete(botsPartition(owner).str(login))
	if err := b.commit(); err != nil {
		return store.Bot{}, fmt.Errorf("removing bot %q: %w", login, err)
	}
	return row.bot(owner), nil
}

// bot reads owner's listing of the bot login, or fails with ErrNotFound.
func (db *DB) bot(owner, login string) (botRow, error) {
	row, found, err := getRow[botRow](db, botsPartition(owner).str(login))
	switch {
	case err != nil:
		return row, fmt.Errorf("reading bot %q: %w", login, err)
	case !found:
		return row, fmt.Errorf("bot %q of %q: %w", login, owner, store.ErrNotFound)
	}
	return row, nil
}
