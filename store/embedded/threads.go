package embedded

import (
	"context"
	"fmt"
	"slices"

	"github.com/killrchat/chatql/store"
)

// ThreadSummaries reads each root's thread rows, newest first: one range
// read per root, all in one call.
func (db *DB) ThreadSummaries(ctx context.Context, roots []store.Message) (map[store.MessageID]store.Thread, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	out := make(map[store.MessageID]store.Thread)
	for _, root := range roots {
		var t store.Thread
		p := threadKey(root.Room, root.ID)
		err := db.scan(ctx, p, p.end(), false, func(_, v []byte) (bool, error) {
			author, err := decode[userRef](v)
			if err != nil {
				return false, err
			}
			t.Replies++
			if len(t.LatestRepliers) < store.MaxLatestRepliers && !slices.Contains(t.LatestRepliers, author.ref()) {
				t.LatestRepliers = append(t.LatestRepliers, author.ref())
			}
			return true, nil
		})
		if err != nil {
			return nil, fmt.Errorf("reading the thread of %v: %w", root.ID, err)
		}
		if t.Replies > 0 {
			out[root.ID] = t
		}
	}
	return out, nil
}

// ThreadReplies reads the thread's rows newest first from the cursor, and
// each reply by id.
func (db *DB) ThreadReplies(ctx context.Context, root store.Message, before store.MessageID, limit int) ([]store.Message, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	p := threadKey(root.Room, root.ID)
	lower := []byte(p)
	if !before.IsZero() {
		lower = p.desc(before).next()
	}
	return db.readReplies(ctx, root, p, lower, p.end(), false, limit)
}

// ThreadRepliesAfter reads the thread's rows oldest first from the cursor,
// and each reply by id.
func (db *DB) ThreadRepliesAfter(ctx context.Context, root store.Message, after store.MessageID, limit int) ([]store.Message, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	p := threadKey(root.Room, root.ID)
	upper := p.end()
	if !after.IsZero() {
		upper = p.desc(after)
	}
	return db.readReplies(ctx, root, p, p, upper, true, limit)
}

// readReplies reads up to limit replies of the thread's partition p within
// [lower, upper), newest first or, if reverse, oldest first.
func (db *DB) readReplies(ctx context.Context, root store.Message, p key, lower, upper []byte, reverse bool, limit int) ([]store.Message, error) {
	replies := []store.Message{}
	err := db.scan(ctx, lower, upper, reverse, func(k, _ []byte) (bool, error) {
		id, err := parseDesc(k[len(p):])
		if err != nil {
			return false, err
		}
		row, err := db.messageByID(id)
		if err != nil {
			return false, err
		}
		replies = append(replies, row.message(row.Room, id))
		return len(replies) < limit, nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the thread of %v: %w", root.ID, err)
	}
	return replies, nil
}
