package embedded

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/killrchat/chatql/store"
)

// A post to a public room of at most store.InboxFanoutLimit participants
// moves the room in each participant's inbox order: it deletes the
// positions the room's previous move wrote and writes new ones, four keys
// per participant. Doing that on every post made the inbox order most of
// what a post wrote: 400 of its some 420 keys in a room of 100, and a
// quarter of the server's CPU in compacting them away (BENCHMARKS.md).
//
// So a room moves at most once per fanoutEvery. A post that comes sooner
// after the room's last move records only that the room has a newer
// activity to move to: one key, `room_inbox_pending | room | post id`
// (newest first), in the post's batch, so it is as durable as the post.
// The moves owed are made (flushRoom) by
//   - the store's flusher, every fanoutEvery, for the rooms posted to since
//     its last pass (db.fanout.rooms);
//   - InboxPage, before it reads, for the rooms its reader takes part in,
//     so a page always lists a room at its newest post: the deferral saves
//     writes, it never shows a reader an older order;
//   - the flusher again after a crash: Open queues the rooms whose keys
//     are left (startFlusher).
//
// A room posted to at 50 posts a second then writes its participants'
// positions about once a second instead of 50 times.
const (
	tableRoomPending = "room_inbox_pending"
	fanoutEvery      = time.Second
)

func pendingMovesPartition(room string) key { return tuple(tableRoomPending).str(room) }

// roomFanout is the set of rooms that may owe a move, and the flusher's
// lifetime.
type roomFanout struct {
	mu    sync.Mutex
	rooms map[string]struct{}
	stop  chan struct{}
	done  chan struct{}
	// moves counts the moves made, for tests.
	moves int
}

// owe notes that room may owe a move.
func (f *roomFanout) owe(room string) {
	f.mu.Lock()
	f.rooms[room] = struct{}{}
	f.mu.Unlock()
}

// owed returns the rooms that may owe a move; with forget it forgets them,
// and a post deferred after that notes its room again.
func (f *roomFanout) owed(forget bool) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	rooms := slices.Collect(maps.Keys(f.rooms))
	if forget {
		clear(f.rooms)
	}
	return rooms
}

func (f *roomFanout) countMove() {
	f.mu.Lock()
	f.moves++
	f.mu.Unlock()
}

// addRoomActivity adds the post m as an activity of its public room to b:
// the room's move in the order of each participant, or, if the room moved
// less than fanoutEvery before m, the pending key that owes it (deferred
// reports which). A post older than the room's last move (racing) adds
// nothing. The move reads up to store.InboxFanoutLimit participants and
// one more, and past the limit (a large room) writes no position. A post takes
// no lock: one joining meanwhile has the join as their activity, and a
// join that takes the room past the limit marks it large in every
// participant's order in the batch that adds the participant (markLarge).
func (db *DB) addRoomActivity(b *batch, m store.Message) (deferred bool, err error) {
	prev, _, err := getRow[store.MessageID](db, roomActivityKey(m.Room))
	if err != nil || prev.Compare(m.ID) > 0 {
		return false, err
	}
	if !prev.IsZero() && m.ID.Time().Sub(prev.Time()) < fanoutEvery {
		b.setEmpty(pendingMovesPartition(m.Room).desc(m.ID))
		return true, nil
	}
	return false, db.moveRoom(b, m.Room, prev, m.ID)
}

// moveRoom adds to b the move of room from its activity prev (zero: none)
// to activity in the order of each participant, if it has at most
// store.InboxFanoutLimit: each position replaces prev's, deleted rather
// than left for a page, so the positions a room leaves behind are those of
// other activities (joins) and of racing moves. A large room records the
// activity alone, so that its posts in the next fanoutEvery defer their
// reads of its members too.
func (db *DB) moveRoom(b *batch, room string, prev, activity store.MessageID) error {
	p := membersPartition(room)
	logins := make([]string, 0, store.InboxFanoutLimit+1)
	err := db.scan(context.Background(), p.next(), p.end(), false, func(k, _ []byte) (bool, error) {
		login, _, err := parseStr(k[len(p):])
		if err != nil {
			return false, fmt.Errorf("member key of room %q: %w", room, err)
		}
		logins = append(logins, login)
		return len(logins) <= store.InboxFanoutLimit, nil
	})
	if err != nil || len(logins) == 0 {
		return err // no one to move it for: a room deleted since the post
	}
	b.set(roomActivityKey(room), activity)
	if len(logins) > store.InboxFanoutLimit {
		return nil // a large room: its activity still defers the next posts' reads of its members
	}
	for _, login := range logins {
		if !prev.IsZero() {
			b.dropActivity(login, room, prev)
		}
		b.addActivity(login, room, activity)
	}
	db.fanout.countMove()
	return nil
}

// flushRoom makes the move room owes, if any: to its newest pending post
// after its last move, deleting the pending keys of the posts it moves
// past one by one, in the same batch. A post deferred meanwhile keeps its
// key. It runs inside an operation (begin), under the lock of the room's
// pending keys, so two flushes of a room do not both move it.
//
// It reads only the keys after the room's last move, and deletes each,
// not their range: a range tombstone per move (a second) of each room
// posted to made pebble fragment a memtable's tombstones again for the
// next read of the store, and the deleted keys are before the next
// flush's bound, so it never walks their tombstones. A post racing a
// flush that moved past it keeps its key, never read again (the room is
// at a newer activity); deleting the room deletes them all.
func (db *DB) flushRoom(room string) error {
	p := pendingMovesPartition(room)
	set := db.locks.of(p)
	db.locks.lock(set)
	defer db.locks.unlock(set)

	prev, _, err := getRow[store.MessageID](db, roomActivityKey(room))
	if err != nil {
		return err
	}
	upper := p.end()
	if !prev.IsZero() {
		upper = p.desc(prev) // keys sort newest first
	}
	var pending [][]byte
	err = db.scan(context.Background(), p, upper, false, func(k, _ []byte) (bool, error) {
		pending = append(pending, slices.Clone(k))
		return true, nil
	})
	if err != nil || len(pending) == 0 {
		return err
	}
	newest, err := parseDesc(pending[0][len(p):])
	if err != nil {
		return fmt.Errorf("pending move key of room %q: %w", room, err)
	}
	b := db.batch()
	if err := db.moveRoom(b, room, prev, newest); err != nil {
		b.Close()
		return err
	}
	for _, k := range pending {
		if b.err == nil {
			b.err = b.Delete(k, nil)
		}
	}
	if err := b.commit(); err != nil {
		return fmt.Errorf("moving room %q in its participants' inboxes: %w", room, err)
	}
	return nil
}

// flushRoomsOf makes the moves owed by the rooms login takes part in,
// before a page of login's order is read.
func (db *DB) flushRoomsOf(login string) error {
	for _, room := range db.fanout.owed(false) {
		member, err := db.has(memberKey(room, login))
		if err == nil && member {
			err = db.flushRoom(room)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// startFlusher loads the moves a crash left owed and starts the flusher:
// every fanoutEvery, it makes the moves owed by the rooms posted to since
// its last pass. stopFlusher ends it.
func (db *DB) startFlusher() error {
	db.fanout.rooms = map[string]struct{}{}
	db.fanout.stop, db.fanout.done = make(chan struct{}), make(chan struct{})
	p := tuple(tableRoomPending)
	var last string
	err := db.scan(context.Background(), p, p.end(), false, func(k, _ []byte) (bool, error) {
		room, _, err := parseStr(k[len(p):])
		if err == nil && room != last {
			db.fanout.owe(room)
			last = room
		}
		return err == nil, err
	})
	if err != nil {
		return fmt.Errorf("reading the rooms owing a move in the inbox order: %w", err)
	}
	go db.flushEvery(fanoutEvery)
	return nil
}

func (db *DB) flushEvery(period time.Duration) {
	defer close(db.fanout.done)
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-db.fanout.stop:
			return
		case <-tick.C:
		}
		if err := db.flushOwed(); err != nil {
			slog.Error("moving rooms in their participants' inbox order", "err", err)
		}
	}
}

// flushOwed makes the moves owed by every room that may owe one. A room
// whose flush fails is noted again, for the next pass.
func (db *DB) flushOwed() error {
	end, err := db.begin(context.Background())
	if err != nil {
		return err
	}
	defer end()
	var errs []error
	for _, room := range db.fanout.owed(true) {
		if err := db.flushRoom(room); err != nil {
			db.fanout.owe(room)
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (db *DB) stopFlusher() {
	if db.fanout.stop != nil {
		close(db.fanout.stop)
		<-db.fanout.done
	}
}
