package embedded

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

// hallOfTwo makes alice, bob and the room hall they both take part in.
func hallOfTwo(t *testing.T, db *DB) (alice, bob store.UserRef) {
	t.Helper()
	ctx := context.Background()
	alice = store.UserRef{Login: "alice", Firstname: "Alice", Lastname: "L"}
	bob = store.UserRef{Login: "bob", Firstname: "Bob", Lastname: "B"}
	for _, u := range []store.UserRef{alice, bob} {
		if err := db.CreateUser(ctx, store.Account{User: store.User{UserRef: u}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.CreateRoom(ctx, store.Room{Name: "hall", Creator: alice, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.JoinRoom(ctx, "hall", bob); err != nil {
		t.Fatal(err)
	}
	return alice, bob
}

// postEvery posts n messages by author to hall, their ids step apart from
// the first, and returns the last id.
func postEvery(t *testing.T, db *DB, author store.UserRef, n int, step time.Duration) store.MessageID {
	t.Helper()
	at := time.Now()
	var id store.MessageID
	for i := range n {
		id = store.MessageIDAt(at.Add(time.Duration(i) * step))
		if err := db.PostMessage(context.Background(), store.Message{Room: "hall", ID: id, Author: author, Content: "post"}); err != nil {
			t.Fatal(err)
		}
	}
	return id
}

func movesOf(db *DB) int {
	db.fanout.mu.Lock()
	defer db.fanout.mu.Unlock()
	return db.fanout.moves
}

// wantHallAt reads login's first page and wants hall first, at activity.
func wantHallAt(t *testing.T, db *DB, login string, activity store.MessageID) {
	t.Helper()
	page, err := db.InboxPage(context.Background(), login, store.InboxPosition{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(page) == 0 || page[0].Conversation != "hall" || page[0].Activity != activity {
		t.Fatalf("InboxPage(%s) = %v, want hall first at %v", login, page, activity)
	}
}

// TestRoomMovesDeferred: posts less than fanoutEvery after the room's last
// move write no positions, yet a page read then lists the room at its
// newest post, making the one move the posts owed.
func TestRoomMovesDeferred(t *testing.T) {
	db := open(t, t.TempDir())
	defer db.Close()
	db.closeFlusher.Do(db.stopFlusher) // only the page makes the move owed
	alice, bob := hallOfTwo(t, db)

	last := postEvery(t, db, bob, 50, 10*time.Millisecond)
	if got := movesOf(db); got != 1 {
		t.Fatalf("50 posts within half a second moved the room %d times, want 1 (the first)", got)
	}
	wantHallAt(t, db, alice.Login, last)
	if got := movesOf(db); got != 2 {
		t.Fatalf("after the page the room moved %d times, want 2", got)
	}
	wantHallAt(t, db, bob.Login, last) // bob's order moved with alice's
	if got := movesOf(db); got != 2 {
		t.Fatalf("the second page moved the room again: %d moves, want 2", got)
	}
	for _, u := range []store.UserRef{alice, bob} {
		if got := positionsOf(t, db, u.Login); got["hall"] != 1 {
			t.Errorf("positions of %s = %v, want 1 of hall (the last move's: the page dropped the join's)", u.Login, got)
		}
	}
	p := pendingMovesPartition("hall")
	if err := db.scan(context.Background(), p, p.end(), false, func(k, _ []byte) (bool, error) {
		t.Errorf("a pending key is left after the move: %x", k)
		return false, nil
	}); err != nil {
		t.Fatal(err)
	}

	// A post fanoutEvery after the last move moves the room at once.
	next := store.MessageIDAt(last.Time().Add(fanoutEvery))
	if err := db.PostMessage(context.Background(), store.Message{Room: "hall", ID: next, Author: bob, Content: "later"}); err != nil {
		t.Fatal(err)
	}
	if got := movesOf(db); got != 3 {
		t.Fatalf("a post %v after the last move made %d moves in all, want 3", fanoutEvery, got)
	}
}

// TestRoomMovesDeleteTheirKeysOneByOne: each flush deletes the pending
// keys it moves past, leaving none and no range tombstone (which every read
// of the store would pay for until the memtable is flushed).
func TestRoomMovesDeleteTheirKeysOneByOne(t *testing.T) {
	db := open(t, t.TempDir())
	defer db.Close()
	db.closeFlusher.Do(db.stopFlusher) // the flushes are the test's
	_, bob := hallOfTwo(t, db)
	p := pendingMovesPartition("hall")
	at := time.Now()
	for round := range 5 {
		for i := range 10 {
			id := store.MessageIDAt(at.Add(time.Duration(round)*(fanoutEvery+10*time.Millisecond) + time.Duration(i)*time.Millisecond))
			if err := db.PostMessage(context.Background(), store.Message{Room: "hall", ID: id, Author: bob, Content: "post"}); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.flushOwed(); err != nil {
			t.Fatal(err)
		}
		var left int
		if err := db.scan(context.Background(), p, p.end(), false, func(_, _ []byte) (bool, error) { left++; return true, nil }); err != nil {
			t.Fatal(err)
		}
		if left != 0 {
			t.Fatalf("round %d: %d pending keys left after the flush, want none", round, left)
		}
	}
	if got := movesOf(db); got != 10 {
		t.Fatalf("five rounds of ten posts made %d moves, want 10 (each round's first post and its flush)", got)
	}
	if n := rangeDeletions(t, db, p, p.end()); n != 0 {
		t.Fatalf("the flushes left %d range tombstones, want none", n)
	}
}

// TestRoomMovesFlushed: the flusher makes the move owed with no page read.
func TestRoomMovesFlushed(t *testing.T) {
	db := open(t, t.TempDir())
	defer db.Close()
	alice, bob := hallOfTwo(t, db)
	last := postEvery(t, db, bob, 3, time.Millisecond)
	deadline := time.Now().Add(10 * fanoutEvery)
	for {
		moved, _, err := getRow[store.MessageID](db, roomActivityKey("hall"))
		if err != nil {
			t.Fatal(err)
		}
		if moved == last {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the room's last move is %v after %v, want the last post %v", moved, 10*fanoutEvery, last)
		}
		time.Sleep(fanoutEvery / 10)
	}
	wantHallAt(t, db, alice.Login, last)
}

// TestRoomMoveOwedSurvivesCrash: the pending keys are in the posts' batches,
// so a crash before the move leaves it owed, and the store after the crash
// lists the room at its newest post.
func TestRoomMoveOwedSurvivesCrash(t *testing.T) {
	db, fs := openCrashable(t)
	db.closeFlusher.Do(db.stopFlusher)
	alice, bob := hallOfTwo(t, db)
	last := postEvery(t, db, bob, 5, time.Millisecond)
	if got := movesOf(db); got != 1 {
		t.Fatalf("5 posts moved the room %d times, want 1", got)
	}
	crashed := afterCrash(t, fs)
	crashed.closeFlusher.Do(crashed.stopFlusher)
	if owed := crashed.fanout.owed(false); len(owed) != 1 || owed[0] != "hall" {
		t.Fatalf("rooms owing a move after the crash = %v, want [hall]", owed)
	}
	wantHallAt(t, crashed, alice.Login, last)
	wantHallAt(t, crashed, bob.Login, last)
}

// TestRoomMovesRacingPosts: posts racing each other, the flusher and pages
// leave no move owed unmade: once they end, a page lists the room at the
// newest post.
func TestRoomMovesRacingPosts(t *testing.T) {
	db := open(t, t.TempDir())
	defer db.Close()
	alice, bob := hallOfTwo(t, db)
	ctx := context.Background()
	const posters, posts = 4, 50
	ids := make(chan store.MessageID, posters*posts)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range posters {
		wg.Go(func() {
			for range posts {
				id := store.NewMessageID()
				if err := db.PostMessage(ctx, store.Message{Room: "hall", ID: id, Author: bob, Content: "post"}); err != nil {
					t.Error(err)
					return
				}
				ids <- id
			}
		})
	}
	pages := make(chan error, 1)
	go func() {
		for {
			select {
			case <-done:
				pages <- nil
				return
			default:
			}
			if _, err := db.InboxPage(ctx, alice.Login, store.InboxPosition{}, 10); err != nil {
				pages <- err
				return
			}
		}
	}()
	wg.Wait()
	close(done)
	if err := <-pages; err != nil {
		t.Fatal(err)
	}
	close(ids)
	var newest store.MessageID
	for id := range ids {
		if id.Compare(newest) > 0 {
			newest = id
		}
	}
	wantHallAt(t, db, alice.Login, newest)
	wantHallAt(t, db, bob.Login, newest)
}

// TestRoomMoveOwedByDeletedRoom: deleting a room forgets its last move and
// the moves it owes, and a flush after it writes nothing back.
func TestRoomMoveOwedByDeletedRoom(t *testing.T) {
	db := open(t, t.TempDir())
	defer db.Close()
	db.closeFlusher.Do(db.stopFlusher)
	alice, bob := hallOfTwo(t, db)
	postEvery(t, db, bob, 3, time.Millisecond)
	if _, _, err := db.DeleteRoom(context.Background(), "hall", alice); err != nil {
		t.Fatal(err)
	}
	if err := db.flushOwed(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []key{roomActivityKey("hall"), pendingMovesPartition("hall")} {
		if err := db.scan(context.Background(), p, p.end(), false, func(k, _ []byte) (bool, error) {
			t.Errorf("a key of the deleted room's moves is left: %q", k)
			return true, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
}
