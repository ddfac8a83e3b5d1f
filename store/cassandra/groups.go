package cassandra

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gocql/gocql"
	"github.com/killrchat/chatql/store"
)

// PostGroupMessage stores m in the group's stream and index with its
// MessagePosted event, and in every member's entry: as last message, as
// read for the author, and with UnreadChanged in the inbox log of every
// other member. The author's inbox writes go in one single-partition
// unlogged batch; the log rows one write each; the notices as noticeWrites
// groups them; fanoutParallelism at a time.
func (db *DB) PostGroupMessage(ctx context.Context, m store.Message, members []store.UserRef, notices ...store.Notice) error {
	ts, id := writeTime(m.ID), gocql.UUID(m.ID)
	extra, err := db.noticeWrites(ctx, m.ID, m.Room, notices)
	if err != nil {
		return err
	}
	files, err := attachmentsValue(m.Attachments)
	if err != nil {
		return fmt.Errorf("cassandra: post message to group %q: %w", m.Room, err)
	}
	stmt, lastOf := lastMessage(m, nil, files)
	ev := store.Event{ID: m.ID, Kind: store.UnreadChanged, Room: m.Room, User: m.Author, Message: &m}
	seen := make(map[string]bool, len(members))
	for _, u := range members {
		if seen[u.Login] {
			continue
		}
		seen[u.Login] = true
		last := lastOf(u.Login)
		extra = append(extra, db.activityWrite(ctx, u.Login, m.Room, m.ID))
		if u.Login == m.Author.Login {
			extra = append(extra, func() error {
				b := db.inboxBatch(ctx)
				b.Query(stmt, last...)
				b.Query(setReadMark, ts, id, u.Login, m.Room, sentinelID)
				return db.session.ExecuteBatch(b)
			})
			continue
		}
		extra = append(extra, func() error {
			b := db.inboxBatch(ctx)
			b.Query(stmt, last...)
			inboxListing(b, u.Login, ev.ID)
			return db.session.ExecuteBatch(b)
		}, db.inboxEventWrite(ctx, u.Login, ev))
	}
	if err := db.writeMessage(ctx, m, store.MessagePosted, extra); err != nil {
		return fmt.Errorf("cassandra: post message to group %q: %w", m.Room, err)
	}
	return nil
}

// openWindow adds a join at `at` to login's entry of the group.
func (db *DB) openWindow(ctx context.Context, group, login string, at time.Time) error {
	return db.query(ctx, openWindowStmt, []time.Time{at}, login, group, sentinelID).Exec()
}

// AddGroupMember adds u to a private group on behalf of the member by. As
// JoinRoom, it writes everything outside the group's row first: the group
// in u's rooms, a window opened at `at` in u's entry, the system message
// "<by> added <u> to the group" at `at` with its ParticipantJoined event in
// the group's log and AddedToGroup in u's inbox log, and the notices, with
// the message's id, joining the message's fan-out. Then it adds the
// participant by a compare-and-set of the participant set
// (addParticipant), and takes back what it wrote if that does not apply:
// everything if the group is gone (a delete racing the add either sees u
// and deletes them, or makes the add fail), or the message and events if a
// concurrent add of u won (u's window and rooms stay: they are u's; the
// notices go, the winner wrote its own). Adding
// a participant again opens no window; but a participant whose entry has no
// window at all, which only a CreateRoom that failed half-way leaves, gets
// one.
func (db *DB) AddGroupMember(ctx context.Context, group string, by store.UserRef, u store.UserRef, at time.Time, notices ...store.Notice) (store.Room, store.Event, error) {
	r, err := db.Room(ctx, group)
	if err != nil {
		return store.Room{}, store.Event{}, err
	}
	if r.Kind != store.PrivateGroup {
		return store.Room{}, store.Event{}, store.Invalidf("room %q is public: members are added to private groups only, and public rooms are joined with joinRoom", group)
	}
	forbidden := fmt.Errorf("group %q: only its members may add members: %w", group, store.ErrForbidden)
	if !r.HasParticipant(by.Login) {
		return store.Room{}, store.Event{}, forbidden
	}
	m := systemMessage(group, store.MessageIDAt(at), u, by.Login+" added "+u.Login+" to the group")
	at = at.Truncate(time.Millisecond)
	if r.HasParticipant(u.Login) {
		c, err := db.Conversation(ctx, u.Login, group)
		switch {
		case err == nil && len(c.Windows) > 0:
			return r, store.Event{}, nil
		case err != nil && !errors.Is(err, store.ErrNotFound):
			return store.Room{}, store.Event{}, err
		}
		if err := db.openWindow(ctx, group, u.Login, at); err != nil {
			return store.Room{}, store.Event{}, fmt.Errorf("cassandra: open the window of %q in group %q: %w", u.Login, group, err)
		}
		return r, store.Event{}, nil
	}

	added := store.Event{ID: m.ID, Kind: store.AddedToGroup, Room: group, User: by, Message: &m}
	writes, err := db.noticeWrites(ctx, m.ID, group, notices)
	if err != nil {
		return store.Room{}, store.Event{}, err
	}
	takeBack := func(err error, copies bool) error {
		ctx, cancel := detached(ctx)
		defer cancel()
		fo := newFanout(4)
		fo.Go(func() error { return db.unwriteMessage(ctx, m, true) })
		fo.Go(func() error { return db.unwriteNotices(ctx, m.ID, group, notices) })
		fo.Go(func() error {
			return db.query(ctx, deleteInboxEvent, u.Login, int(store.BucketOf(m.ID.Time())), gocql.UUID(m.ID)).Exec()
		})
		if copies {
			fo.Go(func() error { return db.query(ctx, removeUserRoom, []string{group}, u.Login).Exec() })
			fo.Go(func() error { return db.query(ctx, undoWindowStmt, []time.Time{at}, u.Login, group, sentinelID).Exec() })
		}
		if uerr := fo.Wait(); uerr != nil {
			err = errors.Join(err, fmt.Errorf("take back the writes of adding %q: %w", u.Login, uerr))
		}
		return err
	}
	fo := newFanout(4)
	fo.Go(func() error { return db.query(ctx, addUserRoom, []string{group}, u.Login).Exec() })
	fo.Go(db.activityWrite(ctx, u.Login, group, m.ID))
	fo.Go(func() error {
		b := db.inboxBatch(ctx)
		b.Query(openWindowStmt, []time.Time{at}, u.Login, group, sentinelID)
		inboxListing(b, u.Login, added.ID)
		return db.session.ExecuteBatch(b)
	})
	fo.Go(func() error {
		return db.writeMessage(ctx, m, store.ParticipantJoined, append(writes, db.inboxEventWrite(ctx, u.Login, added)))
	})
	if err := fo.Wait(); err != nil {
		err = fmt.Errorf("cassandra: add %q to group %q: %w", u.Login, group, err)
		return store.Room{}, store.Event{}, takeBack(err, true)
	}
	check := func(cur roomState) error {
		if !hasLogin(cur.participants, by.Login) {
			return forbidden
		}
		return nil
	}
	r, outcome, err := db.addParticipant(ctx, r, u, check)
	switch {
	case errors.Is(err, errOutcomeUnknown):
		// u may be a member: keep the writes, which a delete cleans up.
		// Adding again settles it.
		return store.Room{}, store.Event{}, fmt.Errorf("cassandra: add %q to group %q: %w", u.Login, group, err)
	case errors.Is(err, store.ErrForbidden):
		return store.Room{}, store.Event{}, takeBack(err, true)
	case err != nil:
		err = fmt.Errorf("cassandra: add %q to group %q: %w", u.Login, group, err)
		return store.Room{}, store.Event{}, takeBack(err, true)
	case outcome == roomGone:
		return store.Room{}, store.Event{}, takeBack(fmt.Errorf("group %q: %w", group, store.ErrNotFound), true)
	case outcome == unchanged:
		if err := takeBack(nil, false); err != nil {
			return store.Room{}, store.Event{}, err
		}
		return r, store.Event{}, nil
	}
	return r, eventOf(store.ParticipantJoined, m), nil
}

// LeaveGroup closes u's window at `at` and writes the system message "<login>
// left the room" at `at` with its ParticipantLeft event, then removes u
// from the group as LeaveRoom does, recording u among the group's former
// members in the same conditional update. The window closes before the
// removal: if the removal fails, u is still a member and leaving again
// succeeds (a second leave while not a member is ignored by windowsOf); the
// other order could leave a former member with an open window and no way
// to close it. For the same reason the window stays closed when the leave
// does not apply.
func (db *DB) LeaveGroup(ctx context.Context, group string, u store.UserRef, at time.Time) (store.Event, error) {
	r, err := db.Room(ctx, group)
	if err != nil {
		return store.Event{}, err
	}
	if r.Kind != store.PrivateGroup {
		return store.Event{}, store.Invalidf("room %q is public: public rooms are left with leaveRoom", group)
	}
	if !r.HasParticipant(u.Login) {
		return store.Event{}, fmt.Errorf("user %q in group %q: %w", u.Login, group, store.ErrNotFound)
	}
	m := systemMessage(group, store.MessageIDAt(at), u, u.Login+" left the room")
	at = at.Truncate(time.Millisecond)
	closeWindow := func() error {
		if err := db.query(ctx, closeWindowStmt, []time.Time{at}, u.Login, group, sentinelID).Exec(); err != nil {
			return fmt.Errorf("close the window of %q in group %q: %w", u.Login, group, err)
		}
		return nil
	}
	return db.leave(ctx, r, u, m, []func() error{closeWindow})
}

// GroupMessages returns a page of the group's messages, newest first, older
// than before, in the windows: store.PlanSegments chooses the bounded reads
// of the listed buckets, one query each, until the page is full.
func (db *DB) GroupMessages(ctx context.Context, group string, windows []store.Window, before store.MessageID, limit int) ([]store.Message, error) {
	msgs, err := db.stream(group).Page(ctx, windows, before, limit)
	if err != nil {
		return nil, fmt.Errorf("cassandra: messages of group %q: %w", group, err)
	}
	return msgs, nil
}

// GroupMessagesAfter returns a page of the group's messages, oldest first,
// newer than after, in the windows: store.PlanSegmentsAfter chooses the
// reads.
func (db *DB) GroupMessagesAfter(ctx context.Context, group string, windows []store.Window, after store.MessageID, limit int) ([]store.Message, error) {
	msgs, err := db.stream(group).PageAfter(ctx, windows, after, limit)
	if err != nil {
		return nil, fmt.Errorf("cassandra: messages of group %q: %w", group, err)
	}
	return msgs, nil
}

// stream is the conversation's stream: its listed buckets, and one query
// per segment.
func (db *DB) stream(id string) store.Stream {
	return store.Stream{
		Listed: func(ctx context.Context) ([]store.Bucket, error) { return db.listedBuckets(ctx, roomBuckets, id) },
		Read: func(ctx context.Context, s store.Segment, limit int) ([]store.Message, error) {
			b := int(s.Bucket)
			return readLive(s.Before, limit, func(before store.MessageID, limit int) *gocql.Query {
				switch {
				case s.From.IsZero() && before.IsZero():
					return db.query(ctx, selectSegment, id, b, limit)
				case before.IsZero():
					return db.query(ctx, selectSegmentFrom, id, b, gocql.UUID(s.From), limit)
				case s.From.IsZero():
					return db.query(ctx, selectSegmentBefore, id, b, gocql.UUID(before), limit)
				}
				return db.query(ctx, selectSegmentWithin, id, b, gocql.UUID(s.From), gocql.UUID(before), limit)
			}, roomRows(id))
		},
		ReadOldestFirst: func(ctx context.Context, s store.Segment, limit int) ([]store.Message, error) {
			b := int(s.Bucket)
			// readLive moves the lower bound: once a row is read it is
			// the cursor, which replaces From.
			return readLive(s.After, limit, func(after store.MessageID, limit int) *gocql.Query {
				switch {
				case !after.IsZero() && !s.Before.IsZero():
					return db.query(ctx, selectOldestAfterBefore, id, b, gocql.UUID(after), gocql.UUID(s.Before), limit)
				case !after.IsZero():
					return db.query(ctx, selectOldestAfter, id, b, gocql.UUID(after), limit)
				case !s.From.IsZero() && !s.Before.IsZero():
					return db.query(ctx, selectOldestFromBefore, id, b, gocql.UUID(s.From), gocql.UUID(s.Before), limit)
				case !s.From.IsZero():
					return db.query(ctx, selectOldestFrom, id, b, gocql.UUID(s.From), limit)
				case !s.Before.IsZero():
					return db.query(ctx, selectOldestBefore, id, b, gocql.UUID(s.Before), limit)
				}
				return db.query(ctx, selectOldest, id, b, limit)
			}, roomRows(id))
		},
	}
}
