package embedded

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/killrchat/chatql/store"
)

// PostGroupMessage stores m in the group's stream, with its copies and
// listings (see addMessage), and records it in the inbox entry of every
// member, read by its author, with its notices (see addNotices), in one
// batch. It holds the locks
// of the members' inboxes, for the last-message comparisons, and of the
// group, whose existence it checks: a post racing DeleteRoom either lands
// before it, and is deleted with the group, or fails with ErrNotFound
// instead of leaving entries of a deleted group in the inboxes. (The
// members' locks already serialize the posts of a group, so the group's
// costs nothing more.)
func (db *DB) PostGroupMessage(ctx context.Context, m store.Message, members []store.UserRef, notices ...store.Notice) error {
	partitions := []key{roomKey(m.Room)}
	for _, u := range members {
		partitions = append(partitions, inboxPartition(u.Login))
	}
	end, err := db.beginLocked(ctx, partitions...)
	if err != nil {
		return err
	}
	defer end()

	if room, err := db.room(m.Room); err != nil {
		return err
	} else if store.RoomKind(room.Kind) != store.PrivateGroup {
		return store.Invalidf("room %q is public: its messages are posted, not sent to members", m.Room)
	}
	b := db.batch()
	err = db.addLoggedMessage(b, store.PostedEvent(m))
	unread := store.Event{ID: m.ID, Kind: store.UnreadChanged, Room: m.Room, User: m.Author, Message: &m}
	recorded := map[string]bool{}
	for _, u := range members {
		if err != nil {
			break
		}
		if !recorded[u.Login] {
			recorded[u.Login] = true
			others := u.Login != m.Author.Login
			err = db.record(b, u.Login, m, store.GroupConversation, nil)
			if err == nil && others {
				err = db.logInboxEvent(b, u.Login, unread)
			}
		}
	}
	if err == nil {
		err = db.addNotices(b, m.ID, m.Room, notices)
	}
	if err != nil {
		b.Close()
		return err
	}
	if err := b.commit(); err != nil {
		return fmt.Errorf("writing message to group %q: %w", m.Room, err)
	}
	return nil
}

// AddGroupMember adds u to the private group's participants and the group
// to u's rooms, as JoinRoom does, opens a window at `at` in u's entry of the
// group, making the entry if u has none, and stores the system message and
// events of the addition and the notices (with the message's id), all in
// one batch under the locks of the room, u's user row and u's inbox. Adding
// a participant changes nothing.
func (db *DB) AddGroupMember(ctx context.Context, group string, by store.UserRef, u store.UserRef, at time.Time, notices ...store.Notice) (store.Room, store.Event, error) {
	rk, uk, ik := roomKey(group), userKey(u.Login), inboxPartition(u.Login)
	end, err := db.beginLocked(ctx, rk, uk, ik)
	if err != nil {
		return store.Room{}, store.Event{}, err
	}
	defer end()

	room, err := db.room(group)
	if err != nil {
		return store.Room{}, store.Event{}, err
	}
	if store.RoomKind(room.Kind) != store.PrivateGroup {
		return store.Room{}, store.Event{}, store.Invalidf("room %q is public: public rooms are joined with joinRoom, not added to", group)
	}
	if !room.hasParticipant(by.Login) {
		return store.Room{}, store.Event{}, fmt.Errorf("%q is not a member of group %q, so may not add members: %w", by.Login, group, store.ErrForbidden)
	}
	if room.hasParticipant(u.Login) {
		return room.room(), store.Event{}, nil
	}
	if err := db.notBanned(group, u.Login); err != nil {
		return store.Room{}, store.Event{}, err
	}
	user, err := db.user(u.Login)
	if err != nil {
		return store.Room{}, store.Event{}, err
	}
	room.addParticipant(u)
	user.addRoom(group)

	joined := systemEvent(store.ParticipantJoined, group, store.MessageIDAt(at), u, by.Login+" added "+u.Login+" to the group")
	added := joined
	added.Kind, added.User = store.AddedToGroup, by
	b := db.batch()
	b.set(rk, room)
	b.addMember(room, u.Login)
	b.set(uk, user)
	err = db.openWindow(b, u.Login, group, at)
	b.addActivity(u.Login, group, joined.ID)
	if err == nil {
		err = db.addLoggedMessage(b, joined)
	}
	if err == nil {
		err = db.logInboxEvent(b, u.Login, added)
	}
	if err == nil {
		err = db.addNotices(b, joined.ID, group, notices)
	}
	if err != nil {
		b.Close()
		return store.Room{}, store.Event{}, err
	}
	if err := b.commit(); err != nil {
		return store.Room{}, store.Event{}, fmt.Errorf("writing %q added to group %q: %w", u.Login, group, err)
	}
	return room.room(), joined, nil
}

// openWindow adds to b a window opened at `at` in login's entry of the
// group, making the entry if login has none. The caller holds the lock of
// login's inbox.
func (db *DB) openWindow(b *batch, login, group string, at time.Time) error {
	k := conversationKey(login, group)
	row, found, err := getRow[conversationRow](db, k)
	if err != nil {
		return fmt.Errorf("reading the inbox of %q: %w", login, err)
	}
	if !found {
		row = conversationRow{Kind: string(store.GroupConversation)}
	}
	if row.open(at) || !found {
		b.set(k, row)
	}
	return nil
}

// LeaveGroup removes u from the group's participants and the group from
// u's rooms, remembers u as a former member, closes u's open window at `at`
// and stores the system message and event of the leave, in one batch under
// the locks of the room, u's user row and u's inbox. The entry stays.
func (db *DB) LeaveGroup(ctx context.Context, group string, u store.UserRef, at time.Time) (store.Event, error) {
	rk, uk, ik := roomKey(group), userKey(u.Login), inboxPartition(u.Login)
	end, err := db.beginLocked(ctx, rk, uk, ik)
	if err != nil {
		return store.Event{}, err
	}
	defer end()

	room, err := db.room(group)
	if err != nil {
		return store.Event{}, err
	}
	if store.RoomKind(room.Kind) != store.PrivateGroup {
		return store.Event{}, store.Invalidf("room %q is public: public rooms are left with leaveRoom", group)
	}
	if !room.removeParticipant(u.Login) {
		return store.Event{}, fmt.Errorf("user %q is not in group %q: %w", u.Login, group, store.ErrNotFound)
	}
	room.addFormer(u.Login)
	left := systemEvent(store.ParticipantLeft, group, store.MessageIDAt(at), u, u.Login+" left the room")
	b := db.batch()
	b.set(rk, room)
	b.delete(memberKey(group, u.Login))
	err = db.leave(b, uk, group)
	if err == nil {
		err = db.addLoggedMessage(b, left)
	}
	k := conversationKey(u.Login, group)
	if entry, found, rerr := getRow[conversationRow](db, k); rerr != nil {
		err = errors.Join(err, fmt.Errorf("reading the inbox of %q: %w", u.Login, rerr))
	} else if found && entry.close(at) {
		b.set(k, entry)
	}
	if err != nil {
		b.Close()
		return store.Event{}, err
	}
	if err := b.commit(); err != nil {
		return store.Event{}, fmt.Errorf("writing %q leaving group %q: %w", u.Login, group, err)
	}
	return left, nil
}

// GroupMessages reads the group's messages in the windows, newest first,
// along the plan of store.PlanSegments: one bounded range read per bucket
// and window that may hold a match.
func (db *DB) GroupMessages(ctx context.Context, group string, windows []store.Window, before store.MessageID, limit int) ([]store.Message, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	page, err := db.stream(group).Page(ctx, windows, before, limit)
	return nonNil(page), err
}

// GroupMessagesAfter reads the group's messages in the windows, oldest
// first, along the plan of store.PlanSegmentsAfter.
func (db *DB) GroupMessagesAfter(ctx context.Context, group string, windows []store.Window, after store.MessageID, limit int) ([]store.Message, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	page, err := db.stream(group).PageAfter(ctx, windows, after, limit)
	return nonNil(page), err
}

// stream is the conversation's stream, to be read within an operation
// begun already.
func (db *DB) stream(id string) store.Stream {
	return store.Stream{
		Listed: func(ctx context.Context) ([]store.Bucket, error) { return db.buckets(ctx, id) },
		Read: func(ctx context.Context, s store.Segment, limit int) ([]store.Message, error) {
			// Keys are newest first: Before (exclusive) bounds the range
			// below, From (inclusive) above.
			p := messagePartition(id, s.Bucket)
			lower, upper := []byte(p), p.end()
			if !s.Before.IsZero() {
				lower = p.desc(s.Before).next()
			}
			if !s.From.IsZero() {
				upper = p.desc(s.From).next()
			}
			if bytes.Compare(lower, upper) >= 0 {
				return nil, nil
			}
			return db.readMessages(ctx, id, p, lower, upper, false, limit)
		},
		ReadOldestFirst: func(ctx context.Context, s store.Segment, limit int) ([]store.Message, error) {
			// The same range, whose upper end After (exclusive) may also
			// bound, read backwards.
			p := messagePartition(id, s.Bucket)
			lower, upper := []byte(p), p.end()
			if !s.Before.IsZero() {
				lower = p.desc(s.Before).next()
			}
			if !s.From.IsZero() {
				upper = p.desc(s.From).next()
			}
			if !s.After.IsZero() {
				upper = p.desc(s.After)
			}
			if bytes.Compare(lower, upper) >= 0 {
				return nil, nil
			}
			return db.readMessages(ctx, id, p, lower, upper, true, limit)
		},
	}
}

// buildFormerMembers records, once, the former members of every private
// group: a store written before groups remembered them (see roomRow.Former)
// has them only as inbox entries of groups they no longer take part in.
// Every group entry of a login that is no participant of the group makes
// the login a former member, so that deleting the group deletes the entry.
// An entry of a group that no longer exists, or whose name is now a public
// room's, is what a delete by those versions left in the inbox of a member
// who had left: it is deleted. Open runs it before any operation, so
// nothing writes meanwhile. The deletions are committed as they are found
// and the groups' rows at the end, with the marker: a build cut short
// starts over and finds the same. (As for buildRoomMembers: an older
// version run on the directory afterwards drops Former from the rows it
// rewrites; delete the store_meta row to have them recorded again.)
func (db *DB) buildFormerMembers() error {
	if built, err := db.has(formerMembersBuilt()); err != nil || built {
		return err
	}
	const deletesPerBatch = 1024
	groups := map[string]*roomRow{} // by name; nil: no such group
	changed := map[string]bool{}
	b := db.batch()
	deletes := 0
	p := tuple(tableConversations)
	err := db.scan(context.Background(), p, p.end(), false, func(k, v []byte) (bool, error) {
		login, rest, err := parseStr(k[len(p):])
		if err != nil {
			return false, err
		}
		id, rest, err := parseStr(rest)
		if err != nil || len(rest) > 0 || store.IsDirectConversation(id) {
			return err == nil, err // an unread row, or a direct conversation
		}
		entry, err := decode[conversationRow](v)
		if err != nil || store.ConversationKind(entry.Kind) != store.GroupConversation {
			return err == nil, err
		}
		g, read := groups[id]
		if !read {
			row, found, err := getRow[roomRow](db, roomKey(id))
			if err != nil {
				return false, err
			}
			if found && store.RoomKind(row.Kind) == store.PrivateGroup {
				g = &row
			}
			groups[id] = g
		}
		switch {
		case g == nil:
			b.deleteRange(conversationKey(login, id))
			if deletes++; deletes%deletesPerBatch == 0 {
				err := b.commit() // closes b
				b = db.batch()
				return err == nil, err
			}
		case !g.hasParticipant(login) && !slices.Contains(g.Former, login):
			g.addFormer(login)
			changed[id] = true
		}
		return true, nil
	})
	if err != nil {
		b.Close()
		return fmt.Errorf("reading the inboxes: %w", err)
	}
	for id := range changed {
		b.set(roomKey(id), *groups[id])
	}
	b.setEmpty(formerMembersBuilt())
	return b.commit()
}
