package cassandra

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/killrchat/chatql/store"
)

// roomMoves makes the moves of public rooms in their participants' inbox
// orders (roomActivityWrites) at most movesPerRoom at a time per room on
// this instance; the posts that come while as many are under way wait for
// one more, to the newest of them. A move is two reads and a write per
// participant whatever the number of posts it covers, so a room posted to
// faster than its moves take (about two round trips each) moves once for
// several posts instead of once for each (BenchmarkCassandraPostMessage).
//
// Two moves of a room under way at once would each replace the position the
// room's last move left and not the other's, leaving one for a page to drop;
// so a move goes to the newest post of the moves under way, if newer than
// its own, and replaces the positions of the older ones.
//
// Nothing is weakened: a post returns once a move to it or to a newer post
// of its room is written, as when it moved the room itself, so an
// acknowledged post is where a page of the order finds it; and a move that
// fails fails every post it was for. Instances do not coordinate: two
// moving a room at once write what two racing posts did before (see
// roomActivityWrites: an older move writes nothing once a newer one is
// recorded).
type roomMoves struct {
	mu    sync.Mutex
	rooms map[string]*roomMoving
	// move writes the move of room to the post id, replacing the
	// positions of the superseded moves' posts.
	move func(ctx context.Context, room string, id store.MessageID, superseded []store.MessageID) error
}

// movesPerRoom is how many moves of one room an instance makes at once:
// two, so that a post to a room another post is moving need not wait for
// that move to end (two posters, each a post at a time, would otherwise take
// turns); beyond that, posts wait and share.
const movesPerRoom = 2

// roomMoving is a room whose moves are under way, and the posts waiting for
// the next one.
type roomMoving struct {
	running int
	next    *moveGroup        // nil: none waits; else running is movesPerRoom
	moving  []store.MessageID // the posts of the moves under way
}

// A moveGroup is the posts one move is for.
type moveGroup struct {
	newest store.MessageID
	posts  int             // how many, the first's included
	ctx    context.Context // the first post's, without its cancel
	done   chan struct{}
	err    error // set before done is closed
}

func newRoomMoves(move func(ctx context.Context, room string, id store.MessageID, superseded []store.MessageID) error) *roomMoves {
	return &roomMoves{rooms: make(map[string]*roomMoving), move: move}
}

// moveTo returns once room has moved to id or to a newer post (or the move
// failed, or ctx ended: the move goes on for the others).
func (m *roomMoves) moveTo(ctx context.Context, room string, id store.MessageID) error {
	m.mu.Lock()
	r := m.rooms[room]
	if r == nil {
		r = &roomMoving{}
		m.rooms[room] = r
	}
	if r.running < movesPerRoom {
		// This post moves the room, and then for the posts that came
		// meanwhile.
		r.running++
		m.mu.Unlock()
		g := &moveGroup{newest: id, posts: 1, ctx: context.WithoutCancel(ctx), done: make(chan struct{})}
		m.run(room, g)
		return g.err
	}
	g := r.next
	if g == nil {
		g = &moveGroup{newest: id, ctx: context.WithoutCancel(ctx), done: make(chan struct{})}
		r.next = g
	} else if id.Compare(g.newest) > 0 {
		g.newest = id
	}
	g.posts++
	m.mu.Unlock()
	select {
	case <-g.done:
		return g.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run makes the move of g, then of each group that waited meanwhile, on a
// goroutine of its own so that g's post returns as soon as its move is
// written.
func (m *roomMoves) run(room string, g *moveGroup) {
	m.moveGroup(room, g)
	if next := m.following(room); next != nil {
		go func() {
			for g := next; g != nil; g = m.following(room) {
				m.moveGroup(room, g)
			}
		}()
	}
}

// moveGroup moves room for the posts of g and tells them. No post joins g
// once it is taken (following). It moves the room to the newest of g's
// posts and of the moves under way, so that it supersedes every other.
func (m *roomMoves) moveGroup(room string, g *moveGroup) {
	m.mu.Lock()
	r := m.rooms[room]
	to := g.newest
	for _, id := range r.moving {
		if id.Compare(to) > 0 {
			to = id
		}
	}
	var superseded []store.MessageID
	for _, id := range r.moving {
		if id.Compare(to) < 0 {
			superseded = append(superseded, id)
		}
	}
	r.moving = append(r.moving, to)
	m.mu.Unlock()
	defer func() {
		// A move that panics fails its posts, as an error would: it
		// runs for several, maybe on a goroutine of its own, and the
		// room must go on to the next.
		if p := recover(); p != nil {
			g.err = fmt.Errorf("cassandra: moving room %q in its participants' inbox orders: panic: %v", room, p)
		}
		m.mu.Lock()
		i := slices.Index(r.moving, to)
		r.moving = slices.Delete(r.moving, i, i+1)
		m.mu.Unlock()
		close(g.done)
	}()
	g.err = m.move(g.ctx, room, to, superseded)
}

// following takes the group waiting for room's next move, or, if none
// waits, ends one of the room's moves.
func (m *roomMoves) following(room string) *moveGroup {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.rooms[room]
	g := r.next
	if g == nil {
		if r.running--; r.running == 0 {
			delete(m.rooms, room)
		}
		return nil
	}
	r.next = nil
	return g
}
