package cassandra

import (
	"context"
	"fmt"
	"slices"

	"github.com/gocql/gocql"
	"github.com/killrchat/chatql/store"
)

const (
	insertReaction = `INSERT INTO message_reactions (room_name, time_bucket, message_id, emoji, login) VALUES (?, ?, ?, ?, ?)`
	deleteReaction = `DELETE FROM message_reactions WHERE room_name = ? AND time_bucket = ? AND message_id = ? AND emoji = ? AND login = ?`
	// selectReactions reads the rows of some messages of one room and day.
	selectReactions   = `SELECT message_id, emoji, login FROM message_reactions WHERE room_name = ? AND time_bucket = ? AND message_id IN ?`
	deleteReactionsOf = `DELETE FROM message_reactions USING TIMESTAMP ? WHERE room_name = ? AND time_bucket = ?`
)

// React reads the message (by id) and its reactions, then writes or deletes
// its row and logs the event concurrently; both writes are idempotent. The
// kind cap is checked on the read, so two racing new kinds may pass it.
func (db *DB) React(ctx context.Context, m store.Message, by store.UserRef, emoji string, add bool) (store.Event, error) {
	stored, err := db.Message(ctx, m.ID)
	if err != nil {
		return store.Event{}, err
	}
	if stored.Deleted {
		return store.Event{}, fmt.Errorf("message %v was deleted: %w", m.ID, store.ErrNotFound)
	}
	all, err := db.Reactions(ctx, []store.Message{stored}, by.Login)
	if err != nil {
		return store.Event{}, err
	}
	reactions := all[m.ID]
	i := slices.IndexFunc(reactions, func(r store.Reaction) bool { return r.Emoji == emoji })
	switch {
	case add == (i >= 0 && reactions[i].Mine):
		return store.Event{}, nil
	case add && i < 0 && len(reactions) >= store.MaxReactionKinds:
		return store.Event{}, store.Invalidf("invalid reaction: a message holds at most %d kinds of reaction", store.MaxReactionKinds)
	}
	stmt := deleteReaction
	if add {
		stmt = insertReaction
	}
	ev := store.Event{ID: store.NewMessageID(), Kind: store.ReactionChanged, Room: stored.Room, User: by, Message: &stored}
	fo := newFanout(fanoutParallelism)
	fo.Go(func() error {
		return db.query(ctx, stmt, stored.Room, int(store.BucketOf(m.ID.Time())), gocql.UUID(m.ID), emoji, by.Login).Exec()
	})
	db.logMessageEvent(ctx, fo, ev)
	if err := fo.Wait(); err != nil {
		return store.Event{}, fmt.Errorf("cassandra: react to message %v: %w", m.ID, err)
	}
	return ev, nil
}

// Reactions reads the rows of msgs with one query per room and day
// (readDays) and counts them.
func (db *DB) Reactions(ctx context.Context, msgs []store.Message, viewer string) (map[store.MessageID][]store.Reaction, error) {
	type row struct {
		id           store.MessageID
		emoji, login string
	}
	rows, err := readDays(ctx, db, msgs, selectReactions, func(iter *gocql.Iter) []row {
		var (
			rows []row
			r    row
			id   gocql.UUID
		)
		for iter.Scan(&id, &r.emoji, &r.login) {
			r.id = store.MessageID(id)
			rows = append(rows, r)
		}
		return rows
	})
	if err != nil {
		return nil, fmt.Errorf("cassandra: reactions: %w", err)
	}
	out := make(map[store.MessageID][]store.Reaction)
	for _, r := range rows { // by message, then emoji: the clustering order
		reactions := out[r.id]
		if n := len(reactions); n == 0 || reactions[n-1].Emoji != r.emoji {
			reactions = append(reactions, store.Reaction{Emoji: r.emoji})
		}
		last := &reactions[len(reactions)-1]
		last.Count++
		last.Mine = last.Mine || r.login == viewer
		out[r.id] = reactions
	}
	return out, nil
}
