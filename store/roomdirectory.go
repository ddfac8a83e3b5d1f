package store

import "context"

// A ListedRoom is a room of the public room directory, with whether the
// reader it was read for is banned from it.
type ListedRoom struct {
	Room
	// ReaderBanned: the reader is banned from the room (the chat leaves
	// it out of the reader's directory).
	ReaderBanned bool
}

// RoomDirectory lists the public rooms, a bounded page at a time, never a
// private group.
type RoomDirectory interface {
	// PublicRooms returns up to limit public rooms after the room named
	// after ("" from the first), in the backend's stable order: by name
	// on embedded (a key range of its index of public rooms), in token
	// order on Cassandra (one range read of chat_rooms' SAI index on
	// listed). Each page is one bounded read; paging on with the last
	// name returned visits every public room that exists throughout
	// exactly once, and after may name a room deleted since. Each room
	// says whether reader is banned from it.
	PublicRooms(ctx context.Context, reader, after string, limit int) ([]ListedRoom, error)
}
