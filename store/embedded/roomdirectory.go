package embedded

import (
	"context"
	"fmt"

	"github.com/killrchat/chatql/store"
)

// tablePublicRooms is no Cassandra table but this store's index of the
// public rooms, by name (Cassandra's is an index on chat_rooms.listed): a
// key per public room, its value empty, written and deleted with the
// room's row.
const tablePublicRooms = "public_rooms"

// publicRoomKey is the row of public_rooms that lists the room called name.
func publicRoomKey(name string) key { return tuple(tablePublicRooms).str(name) }

// publicRoomsBuilt is the row of store_meta that says public_rooms lists
// every public room (see buildPublicRooms).
func publicRoomsBuilt() key { return tuple(tableMeta).str(tablePublicRooms) }

// PublicRooms scans public_rooms by name from after's successor, reading
// each room's row and the reader's ban row: one key range of at most limit
// rows, however many private groups there are.
func (db *DB) PublicRooms(ctx context.Context, reader, after string, limit int) ([]store.ListedRoom, error) {
	rooms := []store.ListedRoom{}
	if limit <= 0 {
		return rooms, nil
	}
	end, err := db.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()

	table := tuple(tablePublicRooms)
	lower := []byte(table)
	if after != "" {
		lower = publicRoomKey(after).next()
	}
	var names []string
	err = db.scan(ctx, lower, table.end(), false, func(k, _ []byte) (bool, error) {
		name, _, err := parseStr(k[len(table):])
		if err != nil {
			return false, err
		}
		names = append(names, name)
		return len(names) < limit, nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing public rooms after %q: %w", after, err)
	}
	for _, name := range names {
		row, found, err := getRow[roomRow](db, roomKey(name))
		if err != nil {
			return nil, fmt.Errorf("reading room %q: %w", name, err)
		}
		if !found || store.RoomKind(row.Kind) != store.PublicRoom {
			continue // deleted since the scan
		}
		banned, err := db.has(banKey(name, reader))
		if err != nil {
			return nil, err
		}
		rooms = append(rooms, store.ListedRoom{Room: row.room(), ReaderBanned: banned})
	}
	return rooms, nil
}

// listRoom adds to b the room's row of public_rooms if it is public.
func (b *batch) listRoom(row roomRow) {
	if store.RoomKind(row.Kind) == store.PublicRoom {
		b.setEmpty(publicRoomKey(row.Name))
	}
}

// buildPublicRooms lists the public rooms of a store written before it had
// public_rooms, once: Open runs it before any operation, so nothing writes
// meanwhile. It clears the table first, as buildRoomMembers does.
func (db *DB) buildPublicRooms() error {
	return db.onceOverRooms(publicRoomsBuilt(), tuple(tablePublicRooms), func(b *batch, row roomRow) { b.listRoom(row) })
}
