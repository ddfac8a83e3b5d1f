package embedded

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/killrchat/chatql/store"
)

// CreateRoom stores a new room unless its name is taken, and adds it to the
// creator's rooms in the same batch. The creator is the room's only
// participant (r.Participants is ignored) and must be a user: ErrNotFound
// otherwise, rather than a user row made up of nothing but a room list. A
// private group also gets its entry in the creator's inbox, with one window
// open from r.CreatedAt.
func (db *DB) CreateRoom(ctx context.Context, r store.Room) error {
	if r.Kind != store.PublicRoom && r.Kind != store.PrivateGroup {
		return store.Invalidf("room %q has the unknown kind %q", r.Name, r.Kind)
	}
	rk, uk := roomKey(r.Name), userKey(r.Creator.Login)
	end, err := db.beginLocked(ctx, rk, uk, inboxPartition(r.Creator.Login))
	if err != nil {
		return err
	}
	defer end()

	if _, found, err := getRow[roomRow](db, rk); err != nil {
		return fmt.Errorf("reading room %q: %w", r.Name, err)
	} else if found {
		return fmt.Errorf("room %q: %w", r.Name, store.ErrConflict)
	}
	creator, err := db.user(r.Creator.Login)
	if err != nil {
		return err
	}
	creator.addRoom(r.Name)

	row := newRoomRow(r)
	b := db.batch()
	b.set(rk, row)
	b.indexRoom(row)
	b.listRoom(row)
	b.set(membersPartition(r.Name), row.headerRow())
	b.addMember(row, r.Creator.Login)
	b.set(uk, creator)
	b.addActivity(r.Creator.Login, r.Name, store.MinMessageID(r.CreatedAt))
	if r.Kind == store.PrivateGroup {
		// A fresh entry, whatever a deleted group of that name left.
		k := conversationKey(r.Creator.Login, r.Name)
		entry := conversationRow{Kind: string(store.GroupConversation)}
		entry.open(r.CreatedAt)
		b.deleteRange(k)
		b.set(k, entry)
	}
	if err := b.commit(); err != nil {
		return fmt.Errorf("writing room %q: %w", r.Name, err)
	}
	return nil
}

// Room returns the room called name.
func (db *DB) Room(ctx context.Context, name string) (store.Room, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return store.Room{}, err
	}
	defer end()

	row, err := db.room(name)
	if err != nil {
		return store.Room{}, err
	}
	return row.room(), nil
}

// Membership answers from room_members (see membersPartition): one point
// read of login's member row, which repeats the room's kind and creator.
// Without one, login is no participant, or the room does not exist; the
// header row tells which, read together with the member row again from one
// iterator, a consistent view of the partition, so that a room created, or
// a join made, between the two reads is not taken for a room with a
// non-participant.
func (db *DB) Membership(ctx context.Context, room, login string) (store.RoomMembership, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return store.RoomMembership{}, err
	}
	defer end()

	row, found, err := getRow[memberRow](db, memberKey(room, login))
	if err != nil {
		return store.RoomMembership{}, fmt.Errorf("reading the membership of %q in room %q: %w", login, room, err)
	}
	if found {
		m := row.membership(room, login, true)
		header, _, err := getRow[memberRow](db, membersPartition(room))
		if err != nil {
			return store.RoomMembership{}, fmt.Errorf("reading the header of the members of room %q: %w", room, err)
		}
		m.SlowMode = header.SlowMode
		return m, nil
	}
	m, err := db.membershipAtOnce(ctx, room, login)
	if err == nil {
		m.Banned, err = db.has(banKey(room, login))
	}
	if err != nil {
		return store.RoomMembership{}, fmt.Errorf("reading the membership of %q in room %q: %w", login, room, err)
	}
	return m, nil
}

// membershipAtOnce reads the header row of the room's members partition and
// login's member row through one iterator. Returns ErrNotFound if the room
// has no header row: it does not exist.
func (db *DB) membershipAtOnce(ctx context.Context, room, login string) (m store.RoomMembership, err error) {
	p := membersPartition(room)
	it, err := db.pdb.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: p, UpperBound: p.end()})
	if err != nil {
		return m, err
	}
	defer func() { err = errors.Join(err, it.Close()) }()
	if !it.First() || !bytes.Equal(it.Key(), p) {
		if err := it.Error(); err != nil {
			return m, err
		}
		return m, fmt.Errorf("room %q: %w", room, store.ErrNotFound)
	}
	v, err := it.ValueAndErr()
	if err != nil {
		return m, err
	}
	header, err := decode[memberRow](v)
	if err != nil {
		return m, err
	}
	mk := memberKey(room, login)
	participant := it.SeekGE(mk) && bytes.Equal(it.Key(), mk)
	if err := it.Error(); err != nil {
		return m, err
	}
	return header.membership(room, login, participant), nil
}

// Rooms returns up to limit rooms named after after, in name order.
func (db *DB) Rooms(ctx context.Context, after string, limit int) ([]store.Room, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()

	table := tuple(tableChatRooms)
	lower := []byte(table)
	if after != "" {
		lower = roomKey(after).next()
	}
	rooms := []store.Room{}
	if limit <= 0 {
		return rooms, nil
	}
	err = db.scan(ctx, lower, table.end(), false, func(_, v []byte) (bool, error) {
		row, err := decode[roomRow](v)
		if err != nil {
			return false, err
		}
		rooms = append(rooms, row.room())
		return len(rooms) < limit, nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing rooms after %q: %w", after, err)
	}
	return rooms, nil
}

// JoinRoom adds u to the room's participants and the room to u's rooms,
// with the system message and event of the join, in one batch, if the room
// exists and u is not in it; a join never creates a room. u must be a user.
func (db *DB) JoinRoom(ctx context.Context, name string, u store.UserRef) (store.Room, store.Event, error) {
	rk, uk := roomKey(name), userKey(u.Login)
	end, err := db.beginLocked(ctx, rk, uk, largeRoomsPartition(u.Login)) // the last for the mark of u (markLarge, DropLargeInboxRooms)
	if err != nil {
		return store.Room{}, store.Event{}, err
	}
	defer end()

	room, err := db.room(name)
	if err != nil {
		return store.Room{}, store.Event{}, err
	}
	if room.hasParticipant(u.Login) {
		return room.room(), store.Event{}, nil
	}
	if err := db.notBanned(name, u.Login); err != nil {
		return store.Room{}, store.Event{}, err
	}
	user, err := db.user(u.Login)
	if err != nil {
		return store.Room{}, store.Event{}, err
	}
	room.addParticipant(u)
	user.addRoom(name)

	ev := systemEvent(store.ParticipantJoined, name, store.NewMessageID(), u, u.Login+" joined the room")
	b := db.batch()
	b.set(rk, room)
	b.addMember(room, u.Login)
	b.set(uk, user)
	b.addActivity(u.Login, name, ev.ID)
	b.markLarge(name, room.Participants, u, ev.ID.Time())
	if err := db.addLoggedMessage(b, ev); err != nil {
		b.Close()
		return store.Room{}, store.Event{}, err
	}
	if err := b.commit(); err != nil {
		return store.Room{}, store.Event{}, fmt.Errorf("writing %q joining room %q: %w", u.Login, name, err)
	}
	return room.room(), ev, nil
}

// LeaveRoom removes u from the room's participants and the room from u's
// rooms, with the system message and event of the leave, in one batch.
func (db *DB) LeaveRoom(ctx context.Context, name string, u store.UserRef) (store.Event, error) {
	rk, uk := roomKey(name), userKey(u.Login)
	end, err := db.beginLocked(ctx, rk, uk)
	if err != nil {
		return store.Event{}, err
	}
	defer end()

	room, err := db.room(name)
	if err != nil {
		return store.Event{}, err
	}
	if !room.removeParticipant(u.Login) {
		return store.Event{}, fmt.Errorf("user %q is not in room %q: %w", u.Login, name, store.ErrNotFound)
	}
	ev := systemEvent(store.ParticipantLeft, name, store.NewMessageID(), u, u.Login+" left the room")
	b := db.batch()
	b.set(rk, room)
	b.delete(memberKey(name, u.Login))
	if err := db.leave(b, uk, name); err != nil {
		b.Close()
		return store.Event{}, err
	}
	if err := db.addLoggedMessage(b, ev); err != nil {
		b.Close()
		return store.Event{}, err
	}
	if err := b.commit(); err != nil {
		return store.Event{}, fmt.Errorf("writing %q leaving room %q: %w", u.Login, name, err)
	}
	return ev, nil
}

// leave adds to b the removal of the room from the rooms of the user at uk,
// if there is one.
func (db *DB) leave(b *batch, uk key, room string) error {
	user, found, err := getRow[userRow](db, uk)
	if err != nil {
		return fmt.Errorf("reading user at %x: %w", []byte(uk), err)
	}
	if found {
		user.removeRoom(room)
		b.set(uk, user)
	}
	return nil
}

// DeleteRoom deletes the room, if by created it, with its messages (their
// copies by id and by author too), its listing of days and its log, and its
// place in its participants' rooms and, for a group, in the inboxes of its
// members and former members, all in one batch.
//
// It must hold the locks of the room and of every participant (user row
// and inbox). Who the participants are is known only from a read, and the
// locks must be taken all at once (see locks.go), so it reads, locks what
// it read, reads again under those locks and, if someone joined meanwhile,
// widens the set and repeats: the check Cassandra makes with IF
// participants = ?. The room's lock also keeps HideMessage from writing
// back a message being deleted.
func (db *DB) DeleteRoom(ctx context.Context, name string, by store.UserRef) (store.Room, store.Event, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return store.Room{}, store.Event{}, err
	}
	defer end()

	rk := roomKey(name)
	var held lockSet
	defer func() { db.locks.unlock(held) }()
	for {
		if err := ctx.Err(); err != nil {
			return store.Room{}, store.Event{}, err
		}
		room, err := db.room(name)
		if err != nil {
			return store.Room{}, store.Event{}, err
		}
		if room.Creator.Login != by.Login {
			return store.Room{}, store.Event{}, fmt.Errorf("room %q can only be deleted by its creator: %w", name, store.ErrForbidden)
		}
		partitions := []key{rk}
		for _, p := range room.Participants {
			partitions = append(partitions, userKey(p.Login), inboxPartition(p.Login))
		}
		for _, login := range room.Former {
			partitions = append(partitions, inboxPartition(login))
		}
		need := db.locks.of(partitions...)
		if !held.covers(need) {
			db.locks.unlock(held)
			held = need
			db.locks.lock(held)
			continue
		}

		b := db.batch()
		b.delete(rk)
		b.delete(publicRoomKey(name))
		b.indexName(roomEntry, name)
		b.deleteRange(membersPartition(name))
		for _, p := range room.Participants {
			if err := db.leave(b, userKey(p.Login), name); err != nil {
				b.Close()
				return store.Room{}, store.Event{}, err
			}
			if store.RoomKind(room.Kind) == store.PrivateGroup {
				b.deleteRange(conversationKey(p.Login, name))
			}
		}
		for _, login := range room.Former {
			b.deleteRange(conversationKey(login, name))
		}
		if err := db.deleteIndexed(ctx, b, name); err != nil {
			b.Close()
			return store.Room{}, store.Event{}, err
		}
		b.deleteRange(roomMessages(name))
		b.deleteRange(bucketPartition(name))
		b.deleteRange(roomEvents(name))
		b.deleteRange(roomReactions(name))
		b.deleteRange(roomReplies(name))
		b.deleteRange(roomReadsPartition(name))
		b.deleteRange(bansPartition(name))
		b.deleteRange(pinsPartition(name))
		b.deleteRange(postTurnsPartition(name))
		b.delete(roomActivityKey(name))
		b.deleteRange(pendingMovesPartition(name))
		if err := db.deleteRoomInvites(ctx, b, name); err != nil {
			b.Close()
			return store.Room{}, store.Event{}, err
		}
		if err := b.commit(); err != nil {
			return store.Room{}, store.Event{}, fmt.Errorf("deleting room %q: %w", name, err)
		}
		db.listed.forget(bucketPartition(name))
		ev := store.Event{ID: store.NewMessageID(), Kind: store.RoomDeleted, Room: name, User: by}
		return room.room(), ev, nil
	}
}

// room reads the row of the room, or fails with ErrNotFound.
func (db *DB) room(name string) (roomRow, error) {
	row, found, err := getRow[roomRow](db, roomKey(name))
	if err != nil {
		return row, fmt.Errorf("reading room %q: %w", name, err)
	}
	if !found {
		return row, fmt.Errorf("room %q: %w", name, store.ErrNotFound)
	}
	return row, nil
}

// buildRoomMembers builds room_members from the rooms of a store written
// before it had that index, once: Open runs it before any operation, so
// nothing writes meanwhile. It clears the table first, so that an earlier
// build cut short (and anything written since by a version of this store
// that did not keep the index) leaves nothing behind, and marks the index
// built in the batch of the last rooms. (Opening a store with an older
// version after this one built the index, and then with this one again,
// would keep an index that the older version let go stale: delete the
// store_meta row to have it rebuilt.) Its batches are synced, as every
// write is, though only the marker's sync matters: a build cut short is
// started over, and syncing the marker's batch syncs the log before it.
func (db *DB) buildRoomMembers() error {
	err := db.onceOverRooms(roomMembersBuilt(), tuple(tableRoomMembers), func(b *batch, row roomRow) {
		b.set(membersPartition(row.Name), row.headerRow())
		for _, p := range row.Participants {
			b.addMember(row, p.Login)
		}
	})
	if err != nil {
		return fmt.Errorf("indexing the rooms: %w", err)
	}
	return nil
}

// onceOverRooms makes, once per store, a pass over every room: it deletes
// the rows under clear (unless nil: so a pass cut short starts over),
// writes what add makes of each room in batches of a few hundred rooms,
// and sets marker in the last batch, so the pass is not made again. Open
// runs the passes before any operation, so nothing writes meanwhile.
func (db *DB) onceOverRooms(marker, clear key, add func(*batch, roomRow)) error {
	if done, err := db.has(marker); err != nil || done {
		return err
	}
	const roomsPerBatch = 256
	b := db.batch()
	if clear != nil {
		b.deleteRange(clear)
	}
	n := 0
	table := tuple(tableChatRooms)
	err := db.scan(context.Background(), table, table.end(), false, func(_, v []byte) (bool, error) {
		row, err := decode[roomRow](v)
		if err != nil {
			return false, err
		}
		add(b, row)
		if n++; n%roomsPerBatch == 0 {
			err := b.commit() // closes b
			b = db.batch()
			return err == nil, err
		}
		return true, nil
	})
	if err != nil {
		b.Close()
		return err
	}
	b.setEmpty(marker)
	return b.commit()
}

// addMember adds to b the member row of login in room_members, for the
// room as row holds it. The caller writes row in the same batch.
func (b *batch) addMember(row roomRow, login string) {
	m := row.memberRow()
	m.Moderator = row.moderates(login)
	b.set(memberKey(row.Name, login), m)
}

// deleteIndexed adds to b the deletion of the copies by id and by author of
// every message of the room, and of its search index. The author's listing
// of a day may outlive its messages; readers skip empty days.
func (db *DB) deleteIndexed(ctx context.Context, b *batch, room string) error {
	b.unindexRoom(room)
	p := roomMessages(room)
	err := db.scan(ctx, p, p.end(), false, func(k, v []byte) (bool, error) {
		if len(k) < len(p)+8+descIDLen {
			return false, fmt.Errorf("message key %x is too short", k)
		}
		id, err := parseDesc(k[len(k)-descIDLen:])
		if err != nil {
			return false, err
		}
		row, err := decode[messageRow](v)
		if err != nil {
			return false, err
		}
		b.delete(messageByIDKey(id))
		b.delete(authorMessageKey(row.Author.Login, id))
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("reading the messages of room %q to delete: %w", room, err)
	}
	return nil
}
