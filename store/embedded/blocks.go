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

// Block counts and writes under the partition's lock.
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
	n := 0
	err = db.scan(ctx, p, p.end(), false, func(_, _ []byte) (bool, error) {
		n++
		return n < store.MaxBlocks, nil
	})
	if err != nil {
		return fmt.Errorf("counting the blocks of %q: %w", login, err)
	}
	if n >= store.MaxBlocks {
		return store.Invalidf("invalid block: %s blocks %d users already, the most one may", login, n)
	}
	b := db.batch()
	b.set(p.str(u.Login), blockRow{User: refRow(u), At: time.Now().UTC()})
	if err := b.commit(); err != nil {
		return fmt.Errorf("%q blocks %q: %w", login, u.Login, err)
	}
	return nil
}

func (db *DB) Unblock(ctx context.Context, login, other string) error {
	return db.deleteRow(ctx, blocksPartition(login).str(other), "%q unblocks %q", login, other)
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
