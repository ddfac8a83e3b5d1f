package cassandra

import (
	"context"
	"errors"
	"fmt"

	"github.com/gocql/gocql"
	"github.com/killrchat/chatql/store"
)

const (
	setRoomRead     = `UPDATE room_reads USING TIMESTAMP ? SET reader = ?, read_upto = ? WHERE room_name = ? AND login = ?`
	selectRoomReads = `SELECT reader, read_upto FROM room_reads WHERE room_name = ? AND login > ? LIMIT ?`
	selectRoomRead  = `SELECT read_upto FROM room_reads WHERE room_name = ? AND login = ?`
	deleteRoomReads = `DELETE FROM room_reads USING TIMESTAMP ? WHERE room_name = ?`
)

// MarkRoomRead writes the mark at upTo's time: no read, the furthest wins.
func (db *DB) MarkRoomRead(ctx context.Context, room string, user store.UserRef, upTo store.MessageID) error {
	if upTo.IsZero() {
		return nil
	}
	err := db.query(ctx, setRoomRead, writeTime(upTo), userUDT(user), gocql.UUID(upTo), room, user.Login).Exec()
	if err != nil {
		return fmt.Errorf("cassandra: mark %q read by %q: %w", room, user.Login, err)
	}
	return nil
}

// RoomReadMarks reads the room's partition, by login, after the login
// after, up to limit rows (every login is greater than "").
func (db *DB) RoomReadMarks(ctx context.Context, room, after string, limit int) ([]store.ReadMark, error) {
	if limit <= 0 {
		return []store.ReadMark{}, nil
	}
	iter := db.query(ctx, selectRoomReads, room, after, limit).Iter()
	marks := []store.ReadMark{}
	var (
		reader userUDT
		upTo   gocql.UUID
	)
	for iter.Scan(&reader, &upTo) {
		marks = append(marks, store.ReadMark{User: store.UserRef(reader), UpTo: store.MessageID(upTo)})
	}
	if err := iter.Close(); err != nil {
		return nil, fmt.Errorf("cassandra: read marks of %q: %w", room, err)
	}
	return marks, nil
}

// RoomConversations makes each room's entry, countParallelism rooms at a
// time: the room's newest message, login's mark, the unread after it.
func (db *DB) RoomConversations(ctx context.Context, login string, rooms []string) ([]store.Conversation, error) {
	entries := make([]*store.Conversation, len(rooms))
	fo := newFanout(countParallelism)
	for i, room := range rooms {
		fo.Go(func() error {
			c, found, err := db.roomConversation(ctx, login, room)
			if found {
				entries[i] = &c
			}
			return err
		})
	}
	if err := fo.Wait(); err != nil {
		return nil, err
	}
	var out []store.Conversation
	for _, c := range entries {
		if c != nil {
			out = append(out, *c)
		}
	}
	return out, nil
}

// roomConversation is one room's entry, if the room exists.
func (db *DB) roomConversation(ctx context.Context, login, room string) (store.Conversation, bool, error) {
	if _, err := db.Membership(ctx, room, login); errors.Is(err, store.ErrNotFound) {
		return store.Conversation{}, false, nil
	} else if err != nil {
		return store.Conversation{}, false, err
	}
	c := store.Conversation{ID: room, Kind: store.RoomConversation}
	newest, err := db.Messages(ctx, room, store.MessageID{}, 1)
	if err != nil {
		return store.Conversation{}, false, err
	}
	if len(newest) > 0 {
		c.LastMessage = newest[0]
	}
	var upTo gocql.UUID
	if err := db.query(ctx, selectRoomRead, room, login).Scan(&upTo); err != nil && !errors.Is(err, gocql.ErrNotFound) {
		return store.Conversation{}, false, fmt.Errorf("cassandra: read mark of %q in %q: %w", login, room, err)
	}
	c.ReadUpTo = store.MessageID(upTo)
	if err := db.countUnread(ctx, login, &c); err != nil {
		return store.Conversation{}, false, err
	}
	return c, true, nil
}
