package embedded

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/killrchat/chatql/store"
)

// React writes or deletes the reaction's row under the lock of the
// message's room, which DeleteRoom also holds, after reading the message's
// reactions for the kind cap; the row and the event go in one batch.
func (db *DB) React(ctx context.Context, m store.Message, by store.UserRef, emoji string, add bool) (store.Event, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return store.Event{}, err
	}
	defer end()
	row, err := db.messageByID(m.ID)
	if err != nil {
		return store.Event{}, err
	}
	set := db.locks.of(roomKey(row.Room))
	db.locks.lock(set)
	defer db.locks.unlock(set)
	if row, err = db.messageByID(m.ID); err != nil { // again, under the lock
		return store.Event{}, err
	}
	if row.Deleted {
		return store.Event{}, fmt.Errorf("message %v was deleted: %w", m.ID, store.ErrNotFound)
	}
	reactions, err := db.messageReactions(ctx, row.Room, m.ID, by.Login)
	if err != nil {
		return store.Event{}, err
	}
	i := slices.IndexFunc(reactions, func(r store.Reaction) bool { return r.Emoji == emoji })
	mine := i >= 0 && reactions[i].Mine
	switch {
	case add == mine:
		return store.Event{}, nil
	case add && i < 0 && len(reactions) >= store.MaxReactionKinds:
		return store.Event{}, store.Invalidf("invalid reaction: a message holds at most %d kinds of reaction", store.MaxReactionKinds)
	}

	b := db.batch()
	k := messageReactions(row.Room, m.ID).str(emoji).str(by.Login)
	if add {
		b.setEmpty(k)
	} else {
		b.delete(k)
	}
	msg := row.message(row.Room, m.ID)
	ev := store.Event{ID: store.NewMessageID(), Kind: store.ReactionChanged, Room: row.Room, User: by, Message: &msg}
	if store.IsDirectConversation(row.Room) {
		a, c, _ := strings.Cut(row.Room, ":")
		if err = db.logInboxEvent(b, a, ev); err == nil {
			err = db.logInboxEvent(b, c, ev)
		}
	} else {
		err = db.logRoomEvent(b, ev)
	}
	if err != nil {
		b.Close()
		return store.Event{}, err
	}
	if err := b.commit(); err != nil {
		return store.Event{}, fmt.Errorf("reacting to message %v: %w", m.ID, err)
	}
	return ev, nil
}

// Reactions reads each message's rows: one range read per message, all in
// one call.
func (db *DB) Reactions(ctx context.Context, msgs []store.Message, viewer string) (map[store.MessageID][]store.Reaction, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	out := make(map[store.MessageID][]store.Reaction)
	for _, m := range msgs {
		reactions, err := db.messageReactions(ctx, m.Room, m.ID, viewer)
		if err != nil {
			return nil, err
		}
		if len(reactions) > 0 {
			out[m.ID] = reactions
		}
	}
	return out, nil
}

// messageReactions reads the message's reaction rows, emoji by emoji.
func (db *DB) messageReactions(ctx context.Context, room string, id store.MessageID, viewer string) ([]store.Reaction, error) {
	p := messageReactions(room, id)
	var reactions []store.Reaction
	err := db.scan(ctx, p, p.end(), false, func(k, _ []byte) (bool, error) {
		emoji, rest, err := parseStr(k[len(p):])
		if err != nil {
			return false, err
		}
		login, _, err := parseStr(rest)
		if err != nil {
			return false, err
		}
		if n := len(reactions); n == 0 || reactions[n-1].Emoji != emoji {
			reactions = append(reactions, store.Reaction{Emoji: emoji})
		}
		r := &reactions[len(reactions)-1]
		r.Count++
		r.Mine = r.Mine || login == viewer
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the reactions of message %v: %w", id, err)
	}
	return reactions, nil
}
