package cassandra

import (
	"context"
	"fmt"
	"time"

	"github.com/gocql/gocql"

	"github.com/killrchat/chatql/store"
)

const (
	insertBlock         = `INSERT INTO user_blocks (login, blocked_login, blocked, blocked_at) VALUES (?, ?, ?, ?)`
	deleteBlock         = `DELETE FROM user_blocks WHERE login = ? AND blocked_login = ?`
	selectBlocks        = `SELECT blocked FROM user_blocks WHERE login = ?`
	selectBlocksBetween = `SELECT login FROM user_blocks WHERE login IN (?, ?) AND blocked_login IN (?, ?)`
	selectBlock         = `SELECT blocked_login FROM user_blocks WHERE login = ? AND blocked_login = ?`
	countBlocks         = `SELECT COUNT(*) FROM user_blocks WHERE login = ?`
	insertMute          = `INSERT INTO user_mutes (login, conversation, muted_at) VALUES (?, ?, ?)`
	deleteMute          = `DELETE FROM user_mutes WHERE login = ? AND conversation = ?`
	selectMutes         = `SELECT conversation FROM user_mutes WHERE login = ?`
	selectMute          = `SELECT conversation FROM user_mutes WHERE login = ? AND conversation = ?`
)

// Block counts the partition, then writes the row: two users blocking at
// once may pass MaxBlocks by a few, a bound, not an invariant.
func (db *DB) Block(ctx context.Context, login string, u store.UserRef) error {
	already, err := db.Blocks(ctx, login, u.Login)
	if err != nil || already {
		return err
	}
	var n int
	if err := db.query(ctx, countBlocks, login).Scan(&n); err != nil {
		return fmt.Errorf("cassandra: count the blocks of %q: %w", login, err)
	}
	if n >= store.MaxBlocks {
		return store.Invalidf("invalid block: %s blocks %d users already, the most one may", login, n)
	}
	if err := db.query(ctx, insertBlock, login, u.Login, userUDT(u), time.Now()).Exec(); err != nil {
		return fmt.Errorf("cassandra: %q blocks %q: %w", login, u.Login, err)
	}
	return nil
}

func (db *DB) Unblock(ctx context.Context, login, other string) error {
	if err := db.query(ctx, deleteBlock, login, other).Exec(); err != nil {
		return fmt.Errorf("cassandra: %q unblocks %q: %w", login, other, err)
	}
	return nil
}

func (db *DB) BlockedUsers(ctx context.Context, login string) ([]store.UserRef, error) {
	iter := db.query(ctx, selectBlocks, login).Iter()
	out := []store.UserRef{}
	var u userUDT
	for iter.Scan(&u) {
		out = append(out, store.UserRef(u))
	}
	if err := iter.Close(); err != nil {
		return nil, fmt.Errorf("cassandra: the users %q blocked: %w", login, err)
	}
	return out, nil
}

func (db *DB) Blocks(ctx context.Context, login, other string) (bool, error) {
	found, err := db.rowExists(ctx, selectBlock, login, other)
	if err != nil {
		return false, fmt.Errorf("cassandra: whether %q blocked %q: %w", login, other, err)
	}
	return found, nil
}

// BlocksBetween reads both rows with one query; (a, a) and (b, b) cannot
// be there, since nobody blocks themselves.
func (db *DB) BlocksBetween(ctx context.Context, a, b string) (aBlocksB, bBlocksA bool, err error) {
	iter := db.query(ctx, selectBlocksBetween, a, b, b, a).Iter()
	var login string
	for iter.Scan(&login) {
		aBlocksB = aBlocksB || login == a
		bBlocksA = bBlocksA || login == b
	}
	if err := iter.Close(); err != nil {
		return false, false, fmt.Errorf("cassandra: blocks between %q and %q: %w", a, b, err)
	}
	return aBlocksB, bBlocksA, nil
}

func (db *DB) Mutes(ctx context.Context, login, conversation string) (bool, error) {
	found, err := db.rowExists(ctx, selectMute, login, conversation)
	if err != nil {
		return false, fmt.Errorf("cassandra: whether %q muted %q: %w", login, conversation, err)
	}
	return found, nil
}

// rowExists runs a select of one text column by its full primary key and
// reports whether the row is there.
func (db *DB) rowExists(ctx context.Context, stmt string, args ...any) (bool, error) {
	var found string
	switch err := db.query(ctx, stmt, args...).Scan(&found); err {
	case nil:
		return true, nil
	case gocql.ErrNotFound:
		return false, nil
	default:
		return false, err
	}
}

func (db *DB) Mute(ctx context.Context, login, conversation string) error {
	if err := db.query(ctx, insertMute, login, conversation, time.Now()).Exec(); err != nil {
		return fmt.Errorf("cassandra: %q mutes %q: %w", login, conversation, err)
	}
	return nil
}

func (db *DB) Unmute(ctx context.Context, login, conversation string) error {
	if err := db.query(ctx, deleteMute, login, conversation).Exec(); err != nil {
		return fmt.Errorf("cassandra: %q unmutes %q: %w", login, conversation, err)
	}
	return nil
}

func (db *DB) Muted(ctx context.Context, login string) ([]string, error) {
	iter := db.query(ctx, selectMutes, login).Iter()
	out := []string{}
	var conversation string
	for iter.Scan(&conversation) {
		out = append(out, conversation)
	}
	if err := iter.Close(); err != nil {
		return nil, fmt.Errorf("cassandra: the conversations %q muted: %w", login, err)
	}
	return out, nil
}
