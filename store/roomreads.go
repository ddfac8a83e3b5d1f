package store

import "context"

// ReadUpTo: User read the room up to Message. A live room event only: it
// has no id and is in no log (read marks are kept, their moves are not
// history).
const ReadUpTo EventKind = "READ_UPTO"

// A ReadMark is how far a participant has read a room.
type ReadMark struct {
	User UserRef
	UpTo MessageID
}

// RoomReads keeps the participants' read marks of public rooms, in a
// partition per room, which also answers who has read how far.
type RoomReads interface {
	// MarkRoomRead moves user's read mark of the room to upTo unless it is
	// further already (Cassandra: written at upTo's time, so the furthest
	// wins). The caller checks that user takes part.
	MarkRoomRead(ctx context.Context, room string, user UserRef, upTo MessageID) error

	// RoomReadMarks returns up to limit marks of the room, by login,
	// those of the logins after after ("" from the first): one bounded
	// read of the room's partition per page.
	RoomReadMarks(ctx context.Context, room, after string, limit int) ([]ReadMark, error)

	// RoomConversations returns login's inbox entries of the public rooms:
	// each room's newest message, login's mark and unread count (as
	// CountUnread), for the rooms that exist.
	RoomConversations(ctx context.Context, login string, rooms []string) ([]Conversation, error)
}
