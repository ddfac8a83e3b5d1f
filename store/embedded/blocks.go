package embedded

import (
	"context"
	"fmt"
	"time"

	"github.com/killrchat/chatql/store"
)

// blockRow is a row of user_blocks; the logins are in the key.
type blockRow struct {
	User userRef   `json:"u"`
	At   time.Time `json:"at"`
}

// muteRow is a row of user_mutes; the login and conversation are in the
// key, and the conversation in the row, to list it.
type muteRow struct {
	Conversation string    `json:"c"`
	At           time.Time `json:"at"`
}

// blockCountRow is how many users a user blocks, kept up to date with
// their blocks, in the same batches under the blocks partition's lock.
type blockCountRow struct {
	N int `json:"n"`
}

// Block writes the block and its user's count of blocks in one batch,
// under the partition's lock, so that the cap holds however many blocks
// race, and filling the partition up to it reads one count per block, not
// the partition. A store written before the count was kept counts the
// partition once, at its user's first block since.
func (db *DB) Block(ctx context.Context, login string, u store.UserRef) error {
	p := blocksPartition(login)
	end, err := db.beginLocked(ctx, p)
	if err != nil {
		return err
	}
	defer end()
	if blocked, err := db.has(p.str(u.Login)); err != nil || blocked {
		return err
	}
	n, err := db.blockCount(ctx, login)
	if err != nil {
		return err
	}
	if n >= store.MaxBlocks {
		return store.Invalidf("invalid block: %s blocks %d users already, the most one may", login, n)
	}
	b := db.batch()
	b.set(p.str(u.Login), blockRow{User: refRow(u), At: time.Now().UTC()})
	b.set(blockCountKey(login), blockCountRow{N: n + 1})
	if err := b.commit(); err != nil {
		return fmt.Errorf("%q blocks %q: %w", login, u.Login, err)
	}
	return nil
}

// blockCount reads how many users login blocks, counting the partition if
// no count is stored (a store written before it was kept); the caller
// holds the partition's lock.
func (db *DB) blockCount(ctx context.Context, login string) (int, error) {
	row, found, err := getRow[blockCountRow](db, blockCountKey(login))
	if err != nil || found {
		return row.N, err
	}
	p := blocksPartition(login)
	n := 0
	err = db.scan(ctx, p, p.end(), false, func(_, _ []byte) (bool, error) {
		n++
		return true, nil
	})
	if err != nil {
		return 0, fmt.Errorf("counting the blocks of %q: %w", login, err)
	}
	return n, nil
}

// Unblock deletes the block and counts it off, under the partition's lock.
// Without a stored count (see Block), there is nothing to count off.
func (db *DB) Unblock(ctx context.Context, login, other string) error {
	p := blocksPartition(login)
	end, err := db.beginLocked(ctx, p)
	if err != nil {
		return err
	}
	defer end()
	if blocked, err := db.has(p.str(other)); err != nil || !blocked {
		return err
	}
	count, counted, err := getRow[blockCountRow](db, blockCountKey(login))
	if err != nil {
		return err
	}
	b := db.batch()
	b.delete(p.str(other))
	if counted {
		b.set(blockCountKey(login), blockCountRow{N: max(count.N-1, 0)})
	}
	if err := b.commit(); err != nil {
		return fmt.Errorf("%q unblocks %q: %w", login, other, err)
	}
	return nil
}

func (db *DB) BlockedUsers(ctx context.Context, login string) ([]store.UserRef, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	p := blocksPartition(login)
	out := []store.UserRef{}
	err = db.scan(ctx, p, p.end(), false, func(_, v []byte) (bool, error) {
		row, err := decode[blockRow](v)
		out = append(out, row.User.ref())
		return true, err
	})
	if err != nil {
		return nil, fmt.Errorf("the users %q blocked: %w", login, err)
	}
	return out, nil
}

func (db *DB) Blocks(ctx context.Context, login, other string) (bool, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return false, err
	}
	defer end()
	return db.has(blocksPartition(login).str(other))
}

func (db *DB) BlocksBetween(ctx context.Context, a, b string) (aBlocksB, bBlocksA bool, err error) {
	end, err := db.begin(ctx)
	if err != nil {
		return false, false, err
	}
	defer end()
	if aBlocksB, err = db.has(blocksPartition(a).str(b)); err != nil {
		return false, false, err
	}
	bBlocksA, err = db.has(blocksPartition(b).str(a))
	return aBlocksB, bBlocksA, err
}

func (db *DB) Mutes(ctx context.Context, login, conversation string) (bool, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return false, err
	}
	defer end()
	return db.has(mutesPartition(login).str(conversation))
}

func (db *DB) Mute(ctx context.Context, login, conversation string) error {
	end, err := db.begin(ctx)
	if err != nil {
		return err
	}
	defer end()
	b := db.batch()
	b.set(mutesPartition(login).str(conversation), muteRow{Conversation: conversation, At: time.Now().UTC()})
	if err := b.commit(); err != nil {
		return fmt.Errorf("%q mutes %q: %w", login, conversation, err)
	}
	return nil
}

func (db *DB) Unmute(ctx context.Context, login, conversation string) error {
	return db.deleteRow(ctx, mutesPartition(login).str(conversation), "%q unmutes %q", login, conversation)
}

func (db *DB) Muted(ctx context.Context, login string) ([]string, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	p := mutesPartition(login)
	out := []string{}
	err = db.scan(ctx, p, p.end(), false, func(_, v []byte) (bool, error) {
		row, err := decode[muteRow](v)
		out = append(out, row.Conversation)
		return true, err
	})
	if err != nil {
		return nil, fmt.Errorf("the conversations %q muted: %w", login, err)
	}
	return out, nil
}

// deleteRow deletes the row at k; what names the change in its error.
func (db *DB) deleteRow(ctx context.Context, k key, what string, args ...any) error {
	end, err := db.begin(ctx)
	if err != nil {
		return err
	}
	defer end()
	b := db.batch()
	b.delete(k)
	if err := b.commit(); err != nil {
		return fmt.Errorf(what+": %w", append(args, err)...)
	}
	return nil
}
