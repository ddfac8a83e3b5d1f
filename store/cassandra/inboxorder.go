package cassandra

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gocql/gocql"
	"github.com/killrchat/chatql/store"
)

// The inbox in the order of last activity lives in inbox_order
// (schema_v25.cql): section positionsSection holds the positions, newest
// first, section newestSection each conversation's newest activity, at
// sentinelID, section largeSection the user's large rooms, at sentinelID. An activity writes both in one single-partition batch, USING
// TIMESTAMP of the activity, so that the newest activity of a conversation
// is the one its newest cell holds whatever order racing writes land in.
const (
	positionsSection = 0
	newestSection    = 1
	largeSection     = 2

	insertPosition       = `INSERT INTO inbox_order (login, section, activity, conversation_id) VALUES (?, 0, ?, ?) USING TIMESTAMP ?`
	setNewest            = `UPDATE inbox_order USING TIMESTAMP ? SET newest = ? WHERE login = ? AND section = 1 AND activity = ? AND conversation_id = ?`
	deletePosition       = `DELETE FROM inbox_order USING TIMESTAMP ? WHERE login = ? AND section = 0 AND activity = ? AND conversation_id = ?`
	selectFirstPositions = `SELECT activity, conversation_id FROM inbox_order WHERE login = ? AND section = 0 LIMIT ?`
	selectPositionsAfter = `SELECT activity, conversation_id FROM inbox_order WHERE login = ? AND section = 0
		AND (activity, conversation_id) < (?, ?) LIMIT ?`
	selectNewestActivities = `SELECT conversation_id, newest FROM inbox_order WHERE login = ? AND section = 1 AND activity = ? AND conversation_id IN ?`
	selectOrdered          = `SELECT ordered FROM inbox_order WHERE login = ? LIMIT 1`
	setOrdered             = `UPDATE inbox_order SET ordered = true WHERE login = ?`
	insertLargeRoom        = `INSERT INTO inbox_order (login, section, activity, conversation_id) VALUES (?, 2, ?, ?)`
	selectLargeRooms       = `SELECT conversation_id FROM inbox_order WHERE login = ? AND section = 2`
	deleteLargeRoom        = `DELETE FROM inbox_order USING TIMESTAMP ? WHERE login = ? AND section = 2 AND activity = ? AND conversation_id = ?`
	selectRoomFanout       = `SELECT participant_count, inbox_fanout FROM chat_rooms WHERE room_name = ?`
	selectRoomActivity     = `SELECT activity FROM room_inbox_activity WHERE room_name = ?`
	setRoomActivity        = `UPDATE room_inbox_activity USING TIMESTAMP ? SET activity = ? WHERE room_name = ?`
)

// positionBatchSize bounds how many positions OrderInbox writes in one
// batch: one partition, but a batch of thousands of rows trips Cassandra's
// batch size warnings.
const positionBatchSize = 50

// addActivity adds to b the activity of conversation in login's order: its
// position and its newest activity.
func addActivity(b *gocql.Batch, login, conversation string, activity store.MessageID) {
	ts, id := writeTime(activity), gocql.UUID(activity)
	b.Query(insertPosition, login, id, conversation, ts)
	b.Query(setNewest, ts, id, login, sentinelID, conversation)
}

// activityWrite returns the write of conversation's activity in login's
// order, for the extra writes of a message (see writeMessage).
func (db *DB) activityWrite(ctx context.Context, login, conversation string, activity store.MessageID) func() error {
	return db.activityReplacing(ctx, login, conversation, activity)
}

// activityReplacing is activityWrite that also deletes, in the same
// single-partition batch, the positions at prevs (but zero ones): those the
// activity replaces. A deletion is written at the time of the position it
// deletes, which wins the tie against the position's own write, so it holds
// even if that write lands after it.
func (db *DB) activityReplacing(ctx context.Context, login, conversation string, activity store.MessageID, prevs ...store.MessageID) func() error {
	return func() error {
		b := db.inboxBatch(ctx)
		addActivity(b, login, conversation, activity)
		for _, prev := range prevs {
			if !prev.IsZero() {
				b.Query(deletePosition, writeTime(prev), login, gocql.UUID(prev), conversation)
			}
		}
		if err := db.session.ExecuteBatch(b); err != nil {
			return fmt.Errorf("cassandra: the inbox order of %q: %w", login, err)
		}
		return nil
	}
}

// InboxPage reads login's positions a slice at a time from after, checks
// each slice's conversations against their newest activity (one read of
// the same partition), and deletes those an older activity left behind.
func (db *DB) InboxPage(ctx context.Context, login string, after store.InboxPosition, limit int) ([]store.InboxPosition, error) {
	if limit <= 0 {
		return nil, nil
	}
	var page []store.InboxPosition
	for len(page) < limit {
		var q *gocql.Query
		if after.Conversation == "" {
			q = db.query(ctx, selectFirstPositions, login, limit)
		} else {
			q = db.query(ctx, selectPositionsAfter, login, gocql.UUID(after.Activity), after.Conversation, limit)
		}
		iter := q.Iter()
		var slice []store.InboxPosition
		var activity gocql.UUID
		var conversation string
		for iter.Scan(&activity, &conversation) {
			slice = append(slice, store.InboxPosition{Activity: store.MessageID(activity), Conversation: conversation})
		}
		if err := iter.Close(); err != nil {
			return nil, fmt.Errorf("cassandra: inbox order of %q: %w", login, err)
		}
		current, stale, err := db.currentPositions(ctx, login, slice, after)
		if err != nil {
			return nil, err
		}
		if err := db.DropInboxPositions(ctx, login, stale); err != nil {
			return nil, err
		}
		page = append(page, current[:min(len(current), limit-len(page))]...)
		if len(slice) < limit {
			break
		}
		after = slice[len(slice)-1]
	}
	return page, nil
}

// currentPositions splits the positions, read after the page's cursor,
// into those at their conversation's newest activity, or newer (a write
// whose newest has not landed yet), and those an older activity left
// behind. A conversation with two positions at its newest activity (which
// only OrderInbox racing an activity of the same instant can leave) is
// listed at the first. A conversation whose newest activity came after
// the positions were read is listed at it, if that is still after the
// cursor: the read missed its new position, and the next one of the page,
// which starts after the last position read, older, would too.
func (db *DB) currentPositions(ctx context.Context, login string, positions []store.InboxPosition, cursor store.InboxPosition) (current, stale []store.InboxPosition, err error) {
	if len(positions) == 0 {
		return nil, nil, nil
	}
	ids := make([]string, 0, len(positions))
	for _, p := range positions {
		ids = append(ids, p.Conversation)
	}
	newest := make(map[string]store.MessageID, len(ids))
	iter := db.query(ctx, selectNewestActivities, login, sentinelID, ids).Iter()
	var id string
	var at gocql.UUID
	for iter.Scan(&id, &at) {
		newest[id] = store.MessageID(at)
	}
	if err := iter.Close(); err != nil {
		return nil, nil, fmt.Errorf("cassandra: newest activities of %q: %w", login, err)
	}
	listed := make(map[string]bool, len(positions))
	var moved []store.InboxPosition
	for _, p := range positions {
		if p.Activity.Compare(newest[p.Conversation]) < 0 || listed[p.Conversation] {
			stale = append(stale, p)
			moved = append(moved, store.InboxPosition{Activity: newest[p.Conversation], Conversation: p.Conversation})
			continue
		}
		listed[p.Conversation] = true
		current = append(current, p)
	}
	for _, p := range moved {
		if !listed[p.Conversation] && (cursor.Conversation == "" || store.ComparePositions(p, cursor) > 0) {
			listed[p.Conversation] = true
			current = append(current, p)
		}
	}
	slices.SortFunc(current, store.ComparePositions)
	return current, stale, nil
}

// InboxOrdered reads the partition's ordered flag.
func (db *DB) InboxOrdered(ctx context.Context, login string) (bool, error) {
	var ordered bool
	err := db.query(ctx, selectOrdered, login).Scan(&ordered)
	if err != nil && err != gocql.ErrNotFound {
		return false, fmt.Errorf("cassandra: whether the inbox of %q is ordered: %w", login, err)
	}
	return ordered, nil
}

// OrderInbox writes the positions in batches of positionBatchSize, then the
// ordered flag.
func (db *DB) OrderInbox(ctx context.Context, login string, positions []store.InboxPosition) error {
	for len(positions) > 0 {
		n := min(len(positions), positionBatchSize)
		b := db.inboxBatch(ctx)
		for _, p := range positions[:n] {
			addActivity(b, login, p.Conversation, p.Activity)
		}
		if err := db.session.ExecuteBatch(b); err != nil {
			return fmt.Errorf("cassandra: order the inbox of %q: %w", login, err)
		}
		positions = positions[n:]
	}
	if err := db.query(ctx, setOrdered, login).Exec(); err != nil {
		return fmt.Errorf("cassandra: order the inbox of %q: %w", login, err)
	}
	return nil
}

// DropInboxPositions deletes each position at the time its activity wrote
// it, so that the tombstone wins the tie and no later activity's cell is
// shadowed.
func (db *DB) DropInboxPositions(ctx context.Context, login string, positions []store.InboxPosition) error {
	for len(positions) > 0 {
		n := min(len(positions), positionBatchSize)
		b := db.inboxBatch(ctx)
		for _, p := range positions[:n] {
			b.Query(deletePosition, writeTime(p.Activity), login, gocql.UUID(p.Activity), p.Conversation)
		}
		if err := db.session.ExecuteBatch(b); err != nil {
			return fmt.Errorf("cassandra: drop positions of the inbox of %q: %w", login, err)
		}
		positions = positions[n:]
	}
	return nil
}

// roomActivityWrites returns the writes of the post m in the inbox orders
// of its room's participants: from one read of the room's
// participant_count and inbox_fanout, at most store.InboxFanoutLimit
// participants, none past it. A room whose count no join or leave has set
// since schema version 25 is read whole, and each of its participants
// told: it has no large marks to tell them otherwise. A room deleted
// meanwhile has no one to tell.
//
// Each position replaces the one of the room's last post that wrote
// positions (room_inbox_activity, read alongside), deleted in the same
// batch rather than left for a page; that post's id is then m's. A post
// older than it (racing) writes none. The positions of the superseded posts
// (older moves under way: see roomMoves) are deleted too.
func (db *DB) roomActivityWrites(ctx context.Context, m store.Message, superseded ...store.MessageID) ([]func() error, error) {
	var (
		count  *int
		fanout []string
		prev   gocql.UUID
	)
	fo := newFanout(2)
	fo.Go(func() error {
		err := db.query(ctx, selectRoomFanout, m.Room).Scan(&count, &fanout)
		if errors.Is(err, gocql.ErrNotFound) {
			return nil
		}
		return err
	})
	fo.Go(func() error {
		err := db.query(ctx, selectRoomActivity, m.Room).Scan(&prev)
		if errors.Is(err, gocql.ErrNotFound) {
			return nil
		}
		return err
	})
	if err := fo.Wait(); err != nil {
		return nil, err
	}
	last := store.MessageID(prev)
	switch last.Compare(m.ID) {
	case 1:
		return nil, nil
	case 0:
		last = store.MessageID{} // m again (a retry): its own position stays
	}
	if count == nil {
		r, err := db.Room(ctx, m.Room)
		if errors.Is(err, store.ErrNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		for _, p := range r.Participants {
			fanout = append(fanout, p.Login)
		}
	}
	if len(fanout) == 0 {
		return nil, nil
	}
	writes := []func() error{func() error {
		return db.query(ctx, setRoomActivity, writeTime(m.ID), gocql.UUID(m.ID), m.Room).Exec()
	}}
	replaced := append(slices.Clone(superseded), last)
	for _, login := range fanout {
		writes = append(writes, db.activityReplacing(ctx, login, m.Room, m.ID, replaced...))
	}
	return writes, nil
}

// markLarge marks the room in the orders of whom u's join concerns, given
// the participants the join left, if they are past store.InboxFanoutLimit:
// every participant when the join took the room past it, else u.
func (db *DB) markLarge(ctx context.Context, room string, participants []store.UserRef, u store.UserRef) error {
	n := len(participants)
	if n <= store.InboxFanoutLimit {
		return nil
	}
	logins := []string{u.Login}
	if n == store.InboxFanoutLimit+1 {
		logins = logins[:0]
		for _, p := range participants {
			logins = append(logins, p.Login)
		}
	}
	fo := newFanout(fanoutParallelism)
	for _, login := range logins {
		fo.Go(func() error { return db.query(ctx, insertLargeRoom, login, sentinelID, room).Exec() })
	}
	return fo.Wait()
}

// LargeInboxRooms reads section largeSection of login's partition.
func (db *DB) LargeInboxRooms(ctx context.Context, login string) ([]string, error) {
	iter := db.query(ctx, selectLargeRooms, login).Iter()
	var rooms []string
	var room string
	for iter.Scan(&room) {
		rooms = append(rooms, room)
	}
	if err := iter.Close(); err != nil {
		return nil, fmt.Errorf("cassandra: large rooms of the inbox of %q: %w", login, err)
	}
	return rooms, nil
}

// DropLargeInboxRooms deletes the marks at the timestamp `before`: a mark
// written after it stays.
func (db *DB) DropLargeInboxRooms(ctx context.Context, login string, rooms []string, before time.Time) error {
	for len(rooms) > 0 {
		n := min(len(rooms), positionBatchSize)
		b := db.inboxBatch(ctx)
		for _, room := range rooms[:n] {
			b.Query(deleteLargeRoom, before.UnixMicro(), login, sentinelID, room)
		}
		if err := db.session.ExecuteBatch(b); err != nil {
			return fmt.Errorf("cassandra: drop large rooms of the inbox of %q: %w", login, err)
		}
		rooms = rooms[n:]
	}
	return nil
}

const (
	selectRoomCounts = `SELECT room_name, creator_login, kind, participants, participant_count FROM chat_rooms`
	setRoomCount     = `UPDATE chat_rooms SET participant_count = ?, inbox_fanout = ? WHERE room_name = ? IF participants = ? AND participant_count = null`
)

// countParticipants sets, once (schema version 25), the participant count
// and fan-out of every room no join or leave has set them of, each by a
// compare-and-set of the participant set it read, and marks each public
// room past store.InboxFanoutLimit large in every participant's order:
// its posts wrote positions for everyone until now. A compare-and-set
// that does not apply lost to a join or leave, which set them. Rooms made
// meanwhile by a server of an older version have no count until their
// first join or leave: their posts read the participants (see
// roomActivityWrites).
func countParticipants(ctx context.Context, session *gocql.Session) error {
	iter := session.Query(selectRoomCounts).WithContext(ctx).PageSize(500).Iter()
	var (
		name, creator, kind string
		participants        []userUDT
		count               *int
	)
	for iter.Scan(&name, &creator, &kind, &participants, &count) {
		if count != nil || creator == "" {
			continue
		}
		n, fanout := fanoutOf(participants)
		if _, err := session.Query(setRoomCount, n, fanout, name, participants).WithContext(ctx).MapScanCAS(map[string]any{}); err != nil {
			return errors.Join(fmt.Errorf("counting the participants of room %q: %w", name, err), iter.Close())
		}
		if kind != "" || n <= store.InboxFanoutLimit {
			continue
		}
		for _, p := range participants {
			if err := session.Query(insertLargeRoom, p.Login, sentinelID, name).WithContext(ctx).Exec(); err != nil {
				return errors.Join(fmt.Errorf("marking room %q large: %w", name, err), iter.Close())
			}
		}
	}
	if err := iter.Close(); err != nil {
		return fmt.Errorf("reading chat_rooms: %w", err)
	}
	return nil
}

// moveRoom moves room in its participants' inbox orders to its post id
// (roomActivityWrites), replacing the positions of the superseded moves,
// for roomMoves.
func (db *DB) moveRoom(ctx context.Context, room string, id store.MessageID, superseded []store.MessageID) error {
	writes, err := db.roomActivityWrites(ctx, store.Message{Room: room, ID: id}, superseded...)
	if err != nil {
		return err
	}
	fo := newFanout(fanoutParallelism)
	for _, w := range writes {
		fo.Go(w)
	}
	return fo.Wait()
}
