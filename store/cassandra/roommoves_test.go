package cassandra

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/killrchat/chatql/internal/testenv"

	"github.com/killrchat/chatql/store"
)

// fakeMoves records the moves roomMoves makes, as a store would write
// them: one at a time per room, each taking a while.
type fakeMoves struct {
	mu      sync.Mutex
	moving  map[string]int             // moves under way per room
	moved   map[string]store.MessageID // the newest move written per room
	moves   map[string]int
	overlap atomic.Bool // more than movesPerRoom moves of one room under way at once
	fail    error
	hold    chan struct{} // when set, every move waits for it
	panics  int           // how many moves to come panic
	calls   []moveCall
}

type moveCall struct {
	to         store.MessageID
	superseded []store.MessageID
}

func newFakeMoves() *fakeMoves {
	return &fakeMoves{moving: map[string]int{}, moved: map[string]store.MessageID{}, moves: map[string]int{}}
}

func (f *fakeMoves) move(ctx context.Context, room string, id store.MessageID, superseded []store.MessageID) error {
	f.mu.Lock()
	f.moving[room]++
	if f.moving[room] > movesPerRoom {
		f.overlap.Store(true)
	}
	hold, fail := f.hold, f.fail
	f.calls = append(f.calls, moveCall{id, superseded})
	if f.panics > 0 {
		f.panics--
		f.moving[room]--
		f.mu.Unlock()
		panic("gocql broke")
	}
	f.mu.Unlock()
	if hold != nil {
		<-hold
	} else {
		time.Sleep(100 * time.Microsecond)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.moving[room]--
	f.moves[room]++
	if fail == nil && id.Compare(f.moved[room]) > 0 {
		f.moved[room] = id
	}
	return fail
}

func (f *fakeMoves) movedTo(room string) store.MessageID {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.moved[room]
}

// TestRoomMovesCoverEveryPost: posts to rooms from many goroutines each
// return once their room moved to them or to a newer post, never with more
// than movesPerRoom moves of a room under way, and with fewer moves than
// posts.
func TestRoomMovesCoverEveryPost(t *testing.T) {
	f := newFakeMoves()
	m := newRoomMoves(f.move)
	const rooms, posters, posts = 3, 8, 50
	var wg sync.WaitGroup
	for p := range posters {
		wg.Go(func() {
			for i := range posts {
				room := fmt.Sprint("room", (p+i)%rooms)
				id := store.NewMessageID()
				if err := m.moveTo(t.Context(), room, id); err != nil {
					t.Error(err)
					return
				}
				if got := f.movedTo(room); got.Compare(id) < 0 {
					t.Errorf("post %v to %s returned with the room moved to %v only", id, room, got)
					return
				}
			}
		})
	}
	wg.Wait()
	if f.overlap.Load() {
		t.Errorf("more than %d moves of a room were under way at once", movesPerRoom)
	}
	total := 0
	for _, n := range f.moves {
		total += n
	}
	if total >= posters*posts {
		t.Errorf("%d moves for %d posts, want fewer", total, posters*posts)
	}
	// The last mover may still be ending its turn after its posts returned.
	testenv.WaitFor(t, 5*time.Second, func() bool { m.mu.Lock(); defer m.mu.Unlock(); return len(m.rooms) == 0 })
}

// TestRoomMovesOneForTheWaiting: the posts that come while movesPerRoom
// moves are under way wait for one more, to the newest of them, and a
// failed move fails each post it was for.
func TestRoomMovesOneForTheWaiting(t *testing.T) {
	f, m, first := movesUnderWay(t)

	const waiting = 5
	ids := make([]store.MessageID, waiting)
	errs := make(chan error, waiting)
	for i := range ids {
		ids[i] = store.NewMessageID()
	}
	for _, id := range ids {
		go func() { errs <- m.moveTo(t.Context(), "room", id) }()
	}
	testenv.WaitFor(t, 5*time.Second, func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.rooms["room"].next != nil && m.rooms["room"].next.posts == waiting
	})
	f.mu.Lock()
	f.fail = errors.New("cassandra down")
	f.mu.Unlock()
	close(f.hold) // the first moves succeed, having read fail before
	for range movesPerRoom {
		if err := <-first; err != nil {
			t.Fatalf("first post = %v", err)
		}
	}
	for range waiting {
		if err := <-errs; err == nil || err.Error() != "cassandra down" {
			t.Errorf("a post waiting for the failed move = %v, want its error", err)
		}
	}
	if f.moves["room"] != movesPerRoom+1 {
		t.Errorf("%d moves, want %d: the first posts', and one for the %d that waited", f.moves["room"], movesPerRoom+1, waiting)
	}
}

// TestRoomMovesWaiterGivesUp: a post whose context ends stops waiting, and
// the move goes on for the others.
func TestRoomMovesWaiterGivesUp(t *testing.T) {
	f, m, first := movesUnderWay(t)
	ctx, cancel := context.WithCancel(t.Context())
	gaveUp := make(chan error, 1)
	go func() { gaveUp <- m.moveTo(ctx, "room", store.NewMessageID()) }()
	testenv.WaitFor(t, 5*time.Second, func() bool { m.mu.Lock(); defer m.mu.Unlock(); return m.rooms["room"].next != nil })
	other := store.NewMessageID()
	stayed := make(chan error, 1)
	go func() { stayed <- m.moveTo(t.Context(), "room", other) }()
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Errorf("the post that gave up = %v, want context.Canceled", err)
	}
	close(f.hold)
	for range movesPerRoom {
		if err := <-first; err != nil {
			t.Fatal(err)
		}
	}
	if err := <-stayed; err != nil {
		t.Fatal(err)
	}
	if got := f.movedTo("room"); got != other {
		t.Errorf("room moved to %v, want %v, the newest post", got, other)
	}
}

// movesUnderWay starts movesPerRoom posts to "room", whose moves wait for
// f.hold to close; each post's result comes on first.
func movesUnderWay(t *testing.T) (f *fakeMoves, m *roomMoves, first chan error) {
	t.Helper()
	f = newFakeMoves()
	f.hold = make(chan struct{})
	m = newRoomMoves(f.move)
	first = make(chan error, movesPerRoom)
	for range movesPerRoom {
		go func() { first <- m.moveTo(t.Context(), "room", store.NewMessageID()) }()
	}
	testenv.WaitFor(t, 5*time.Second, func() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.moving["room"] == movesPerRoom })
	return f, m, first
}

// TestRoomMovesSupersede: a move goes to the newest post of the moves under
// way, and replaces the positions of the older ones.
func TestRoomMovesSupersede(t *testing.T) {
	older, newer := store.NewMessageID(), store.NewMessageID()
	for _, order := range [][]store.MessageID{{older, newer}, {newer, older}} {
		f := newFakeMoves()
		f.hold = make(chan struct{})
		m := newRoomMoves(f.move)
		errs := make(chan error, 2)
		for i, id := range order {
			go func() { errs <- m.moveTo(t.Context(), "room", id) }()
			testenv.WaitFor(t, 5*time.Second, func() bool { f.mu.Lock(); defer f.mu.Unlock(); return len(f.calls) == i+1 })
		}
		close(f.hold)
		for range order {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		second := f.calls[1]
		if second.to != newer {
			t.Errorf("posts %v: the second move went to %v, want the newer post %v", order, second.to, newer)
		}
		if order[0] == older && !slices.Equal(second.superseded, []store.MessageID{older}) {
			t.Errorf("posts %v: the second move superseded %v, want the older post's", order, second.superseded)
		}
		if order[0] == newer && len(second.superseded) != 0 {
			t.Errorf("posts %v: the second move, to the same post as the first, superseded %v", order, second.superseded)
		}
	}
}

// TestRoomMovesPanicHandsOn: a move that panics fails its posts, the one
// that made it and those waiting, and leaves the room to the next post.
func TestRoomMovesPanicHandsOn(t *testing.T) {
	f, m, first := movesUnderWay(t)
	f.mu.Lock()
	f.panics = 1
	f.mu.Unlock()
	waiting := make(chan error, 1)
	go func() { waiting <- m.moveTo(t.Context(), "room", store.NewMessageID()) }()
	testenv.WaitFor(t, 5*time.Second, func() bool { m.mu.Lock(); defer m.mu.Unlock(); return m.rooms["room"].next != nil })
	close(f.hold)
	for range movesPerRoom {
		if err := <-first; err != nil {
			t.Fatal(err)
		}
	}
	if err := <-waiting; err == nil || !strings.Contains(err.Error(), "gocql broke") {
		t.Errorf("a post waiting for the move that panicked = %v, want its panic as an error", err)
	}
	f.mu.Lock()
	f.hold = nil
	f.mu.Unlock()
	id := store.NewMessageID()
	if err := m.moveTo(t.Context(), "room", id); err != nil {
		t.Fatalf("the next post = %v", err)
	}
	if got := f.movedTo("room"); got != id {
		t.Errorf("room moved to %v, want %v", got, id)
	}
	testenv.WaitFor(t, 5*time.Second, func() bool { m.mu.Lock(); defer m.mu.Unlock(); return len(m.rooms) == 0 })
}
