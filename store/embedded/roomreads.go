package embedded

import (
	"context"
	"errors"
	"fmt"

	"github.com/killrchat/chatql/store"
)

// readMarkRow is a row of room_reads; the room and login are in the key.
type readMarkRow struct {
	User userRef         `json:"u"`
	UpTo store.MessageID `json:"r"`
}

// MarkRoomRead is a read-modify-write under the room's lock.
func (db *DB) MarkRoomRead(ctx context.Context, room string, user store.UserRef, upTo store.MessageID) error {
	k := roomReadsPartition(room).str(user.Login)
	end, err := db.beginLocked(ctx, roomKey(room))
	if err != nil {
		return err
	}
	defer end()
	row, _, err := getRow[readMarkRow](db, k)
	if err != nil {
		return fmt.Errorf("reading the read mark of %q in %q: %w", user.Login, room, err)
	}
	if row.UpTo.Compare(upTo) >= 0 {
		return nil
	}
	b := db.batch()
	b.set(k, readMarkRow{User: refRow(user), UpTo: upTo})
	if err := b.commit(); err != nil {
		return fmt.Errorf("marking %q read by %q: %w", room, user.Login, err)
	}
	return nil
}

// RoomReadMarks scans the room's partition, by login, from the login
// after after.
func (db *DB) RoomReadMarks(ctx context.Context, room, after string, limit int) ([]store.ReadMark, error) {
	marks := []store.ReadMark{}
	if limit <= 0 {
		return marks, nil
	}
	end, err := db.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	p := roomReadsPartition(room)
	lower := []byte(p)
	if after != "" {
		lower = p.str(after).next()
	}
	err = db.scan(ctx, lower, p.end(), false, func(_, v []byte) (bool, error) {
		row, err := decode[readMarkRow](v)
		if err != nil {
			return false, err
		}
		marks = append(marks, store.ReadMark{User: row.User.ref(), UpTo: row.UpTo})
		return len(marks) < limit, nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the read marks of %q: %w", room, err)
	}
	return marks, nil
}

// RoomConversations reads, per room, the newest message, login's mark and
// the unread after it.
func (db *DB) RoomConversations(ctx context.Context, login string, rooms []string) ([]store.Conversation, error) {
	var out []store.Conversation
	for _, room := range rooms {
		newest, err := db.Messages(ctx, room, store.MessageID{}, 1)
		if err != nil {
			return nil, err
		}
		c, found, err := db.roomConversation(ctx, login, room, newest)
		if err != nil {
			return nil, err
		}
		if found {
			out = append(out, c)
		}
	}
	return out, nil
}

// roomConversation is one room's entry, if the room exists.
func (db *DB) roomConversation(ctx context.Context, login, room string, newest []store.Message) (store.Conversation, bool, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return store.Conversation{}, false, err
	}
	defer end()
	if _, err := db.room(room); errors.Is(err, store.ErrNotFound) {
		return store.Conversation{}, false, nil
	} else if err != nil {
		return store.Conversation{}, false, err
	}
	c := store.Conversation{ID: room, Kind: store.RoomConversation}
	if len(newest) > 0 {
		c.LastMessage = newest[0]
	}
	row, _, err := getRow[readMarkRow](db, roomReadsPartition(room).str(login))
	if err != nil {
		return store.Conversation{}, false, fmt.Errorf("reading the read mark of %q in %q: %w", login, room, err)
	}
	c.ReadUpTo = row.UpTo
	if c.Unread, c.Mentions, err = store.CountUnread(ctx, login, c, db.stream(room), db); err != nil {
		return store.Conversation{}, false, fmt.Errorf("counting the unread messages of %q in %q: %w", login, room, err)
	}
	return c, true, nil
}
