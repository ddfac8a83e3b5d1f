package cassandra

import (
	"context"
	"fmt"
	"time"

	"github.com/gocql/gocql"
	"github.com/killrchat/chatql/store"
)

// listedPublic is chat_rooms.listed of a public room (null for a private
// group): the value the directory's SAI index finds.
const listedPublic = "public"

const (
	// The directory reads the rows of public rooms through the SAI index
	// on listed, in token order, with the reader's ban: one range read of
	// at most limit rows per page, however many private groups there are.
	selectPublicRooms      = `SELECT ` + roomColumns + `, banned[?] FROM chat_rooms WHERE listed = 'public' LIMIT ?`
	selectPublicRoomsAfter = `SELECT ` + roomColumns + `, banned[?] FROM chat_rooms WHERE listed = 'public' AND token(room_name) > token(?) LIMIT ?`
	// The conversion of version 26 lists the public rooms made before it.
	selectRoomKinds = `SELECT room_name, kind, creator_login FROM chat_rooms`
	listRoom        = `UPDATE chat_rooms SET listed = 'public' WHERE room_name = ? IF creator_login = ?`
)

// PublicRooms pages the public rooms in token order (see listed in
// schema_current.cql): a token cursor needs no state of the server's, and
// any name, even a deleted room's, is a place in the ring to go on from.
func (db *DB) PublicRooms(ctx context.Context, reader, after string, limit int) ([]store.ListedRoom, error) {
	rooms := []store.ListedRoom{}
	if limit <= 0 {
		return rooms, nil
	}
	q := db.query(ctx, selectPublicRooms, reader, limit)
	if after != "" {
		q = db.query(ctx, selectPublicRoomsAfter, reader, after, limit)
	}
	iter := q.Iter()
	var (
		r            store.Room
		creator      userUDT
		participants []userUDT
		moderators   map[string]userUDT
		icon         string
		slowMode     int
		banned       *time.Time
	)
	for iter.Scan(&r.Name, &creator, &r.CreatedAt, &r.Banner, &participants, &r.Kind, &moderators, &icon, &r.Title, &slowMode, &banned) {
		if creator.Login != "" && r.Kind == store.PublicRoom { // see readRoom
			r.Creator = store.UserRef(creator)
			r.Participants = fromUDTs(participants)
			r.Moderators = moderatorsOf(moderators)
			r.Icon = decodePicture(icon)
			r.SlowMode = time.Duration(slowMode) * time.Second
			rooms = append(rooms, store.ListedRoom{Room: r, ReaderBanned: banned != nil})
		}
		r, creator, participants, moderators, icon, slowMode, banned = store.Room{}, userUDT{}, nil, nil, "", 0, nil
	}
	if err := iter.Close(); err != nil {
		return nil, fmt.Errorf("cassandra: list public rooms after %q: %w", after, err)
	}
	return rooms, nil
}

// listPublicRooms is version 26's conversion: it sets listed on the public
// rooms made before it, each conditional on the room being there still (a
// plain update of a deleted room would write a row without a creator).
func listPublicRooms(ctx context.Context, session *gocql.Session) error {
	iter := session.Query(selectRoomKinds).WithContext(ctx).PageSize(1000).Iter()
	var name, kind, creator string
	for iter.Scan(&name, &kind, &creator) {
		if kind == "" && creator != "" {
			if _, err := session.Query(listRoom, name, creator).WithContext(ctx).MapScanCAS(map[string]any{}); err != nil {
				iter.Close()
				return fmt.Errorf("list public room %q: %w", name, err)
			}
		}
		name, kind, creator = "", "", ""
	}
	if err := iter.Close(); err != nil {
		return fmt.Errorf("read the rooms to list: %w", err)
	}
	return nil
}
