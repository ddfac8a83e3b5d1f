package cassandra

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

// TestRoomPositionsReplaced: a post to a small room deletes the positions
// the room's previous post left in its participants' orders, so posting
// leaves none behind for a page to drop (the room keeps its creation's or
// join's, another kind of activity, and the last post's); a retried post
// keeps its own.
func TestRoomPositionsReplaced(t *testing.T) {
	db := mustOpen(t, testConfig(t))
	ctx := t.Context()
	var users []store.UserRef
	for _, prefix := range []string{"host", "guest"} {
		a := store.Account{User: store.User{UserRef: store.UserRef{Login: unique(prefix), Firstname: "R", Lastname: "P"}}, PassHash: []byte("h")}
		if err := db.CreateUser(ctx, a); err != nil {
			t.Fatal(err)
		}
		users = append(users, a.UserRef)
	}
	room := store.Room{Name: unique("replaced"), Creator: users[0], CreatedAt: time.Now()}
	if err := db.CreateRoom(ctx, room); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.JoinRoom(ctx, room.Name, users[1]); err != nil {
		t.Fatal(err)
	}
	var last store.Message
	for range 5 {
		last = store.Message{Room: room.Name, ID: store.NewMessageID(), Author: users[1], Content: "post"}
		if err := db.PostMessage(ctx, last); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.PostMessage(ctx, last); err != nil { // a retry
		t.Fatal(err)
	}
	for _, u := range users {
		var n int
		if err := db.query(ctx, `SELECT count(*) FROM inbox_order WHERE login = ? AND section = 0`, u.Login).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 2 {
			t.Errorf("positions of %s = %d, want 2 (the creation or join, the last post)", u.Login, n)
		}
		page, err := db.InboxPage(ctx, u.Login, store.InboxPosition{}, 5)
		if err != nil || len(page) != 1 || page[0].Activity != last.ID {
			t.Errorf("InboxPage(%s) = %v, %v, want the last post alone", u.Login, page, err)
		}
	}
}

// TestCountParticipants: schema version 25's conversion counts the
// participants of rooms made before it and marks the large ones in every
// participant's order.
func TestCountParticipants(t *testing.T) {
	db := mustOpen(t, testConfig(t))
	ctx := t.Context()
	creator := store.Account{User: store.User{UserRef: store.UserRef{Login: unique("counted"), Firstname: "C", Lastname: "P"}}, PassHash: []byte("h")}
	if err := db.CreateUser(ctx, creator); err != nil {
		t.Fatal(err)
	}
	small, large := unique("small"), unique("large")
	var crowd []userUDT
	for i := range store.InboxFanoutLimit {
		crowd = append(crowd, userUDT{Login: fmt.Sprintf("%s-%03d", large, i), Firstname: "C", Lastname: "P"})
	}
	for _, name := range []string{small, large} {
		if err := db.CreateRoom(ctx, store.Room{Name: name, Creator: creator.UserRef, CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	// What a version before 25 left: participants added without a count.
	if err := db.query(ctx, `UPDATE chat_rooms SET participants = participants + ? WHERE room_name = ?`, crowd, large).Exec(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{small, large} {
		if err := db.query(ctx, `UPDATE chat_rooms SET participant_count = null, inbox_fanout = null WHERE room_name = ?`, name).Exec(); err != nil {
			t.Fatal(err)
		}
	}
	if err := countParticipants(ctx, db.session); err != nil {
		t.Fatalf("countParticipants = %v", err)
	}
	for _, c := range []struct {
		room   string
		count  int
		fanout []string
	}{{small, 1, []string{creator.Login}}, {large, store.InboxFanoutLimit + 1, nil}} {
		var count *int
		var fanout []string
		if err := db.query(ctx, selectRoomFanout, c.room).Scan(&count, &fanout); err != nil {
			t.Fatal(err)
		}
		if count == nil || *count != c.count || !slices.Equal(fanout, c.fanout) {
			t.Errorf("room %s counted %v, fan-out %v; want %d, %v", c.room, count, fanout, c.count, c.fanout)
		}
	}
	for _, login := range []string{creator.Login, crowd[0].Login} {
		rooms, err := db.LargeInboxRooms(ctx, login)
		if err != nil || !slices.Equal(rooms, []string{large}) {
			t.Errorf("LargeInboxRooms(%s) = %v, %v; want [%s]", login, rooms, err, large)
		}
	}
}

// TestConcurrentPostsMoveTheRoom: posts to one room from many goroutines,
// which share moves (roomMoves), each return with the room at that post
// or a newer one in its participants' orders, and leave it at the newest,
// with no position of an older move behind.
func TestConcurrentPostsMoveTheRoom(t *testing.T) {
	db := mustOpen(t, testConfig(t))
	ctx := t.Context()
	var users []store.UserRef
	for i := range 4 {
		a := store.Account{User: store.User{UserRef: store.UserRef{Login: unique(fmt.Sprint("mover", i)), Firstname: "M", Lastname: "P"}}, PassHash: []byte("h")}
		if err := db.CreateUser(ctx, a); err != nil {
			t.Fatal(err)
		}
		users = append(users, a.UserRef)
	}
	room := store.Room{Name: unique("moved"), Creator: users[0], CreatedAt: time.Now()}
	if err := db.CreateRoom(ctx, room); err != nil {
		t.Fatal(err)
	}
	for _, u := range users[1:] {
		if _, _, err := db.JoinRoom(ctx, room.Name, u); err != nil {
			t.Fatal(err)
		}
	}
	const posters, posts = 8, 10
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		newest store.MessageID
	)
	for p := range posters {
		wg.Go(func() {
			for range posts {
				m := store.Message{Room: room.Name, ID: store.NewMessageID(), Author: users[p%len(users)], Content: "post"}
				if err := db.PostMessage(ctx, m); err != nil {
					t.Error(err)
					return
				}
				page, err := db.InboxPage(ctx, users[(p+1)%len(users)].Login, store.InboxPosition{}, 1)
				if err != nil || len(page) != 1 || page[0].Activity.Compare(m.ID) < 0 {
					t.Errorf("InboxPage after post %v returned = %v, %v; want the room at it or newer", m.ID, page, err)
					return
				}
				mu.Lock()
				if m.ID.Compare(newest) > 0 {
					newest = m.ID
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for _, u := range users {
		var n int
		if err := db.query(ctx, `SELECT count(*) FROM inbox_order WHERE login = ? AND section = 0`, u.Login).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 2 {
			t.Errorf("positions of %s = %d, want 2 (the creation or join, the newest post)", u.Login, n)
		}
		page, err := db.InboxPage(ctx, u.Login, store.InboxPosition{}, 5)
		if err != nil || len(page) != 1 || page[0].Activity != newest {
			t.Errorf("InboxPage(%s) = %v, %v, want the room at the newest post %v", u.Login, page, err, newest)
		}
	}
}
