package embedded

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/killrchat/chatql/store"
)

// positionsOf counts the positions of each conversation in login's order,
// stale ones included (InboxPage would drop those it passes).
func positionsOf(t *testing.T, db *DB, login string) map[string]int {
	t.Helper()
	p := positionsPartition(login)
	counts := map[string]int{}
	err := db.scan(context.Background(), p, p.end(), false, func(k, _ []byte) (bool, error) {
		pos, err := parsePosition(k[len(p):])
		counts[pos.Conversation]++
		return err == nil, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return counts
}

// TestInboxPositionsReplaced: a post to a small room and a direct message
// each delete the position their conversation's last message left, so
// posting leaves no positions behind for a page to drop: the room keeps
// its creation's (another kind of activity) and the last post's.
func TestInboxPositionsReplaced(t *testing.T) {
	db := open(t, t.TempDir())
	defer db.Close()
	ctx := context.Background()
	var users []store.UserRef
	for _, login := range []string{"alice", "bob"} {
		u := store.UserRef{Login: login, Firstname: "F", Lastname: "L"}
		if err := db.CreateUser(ctx, store.Account{User: store.User{UserRef: u}}); err != nil {
			t.Fatal(err)
		}
		users = append(users, u)
	}
	alice, bob := users[0], users[1]
	if err := db.CreateRoom(ctx, store.Room{Name: "hall", Creator: alice, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.JoinRoom(ctx, "hall", bob); err != nil {
		t.Fatal(err)
	}
	dm := store.DirectConversationID(alice.Login, bob.Login)
	for range 5 {
		if err := db.PostMessage(ctx, store.Message{Room: "hall", ID: store.NewMessageID(), Author: bob, Content: "post"}); err != nil {
			t.Fatal(err)
		}
		if err := db.SendDirect(ctx, store.Message{Room: dm, ID: store.NewMessageID(), Author: alice, Content: "dm"}, bob); err != nil {
			t.Fatal(err)
		}
	}
	for _, u := range users {
		got := positionsOf(t, db, u.Login)
		if got["hall"] != 2 || got[dm] != 1 {
			t.Errorf("positions of %s = %v, want 2 of hall (its creation or join, the last post) and 1 of %s", u.Login, got, dm)
		}
	}
}

// TestLargeRoomsMarkedOnOpen: a store written before large rooms, whose
// large rooms are marked nowhere, has them marked in every participant's
// order when opened, once.
func TestLargeRoomsMarkedOnOpen(t *testing.T) {
	dir := t.TempDir()
	db := open(t, dir)
	ctx := context.Background()
	var last store.UserRef
	for i := range store.InboxFanoutLimit + 1 {
		last = store.UserRef{Login: fmt.Sprintf("user%03d", i), Firstname: "F", Lastname: "L"}
		if err := db.CreateUser(ctx, store.Account{User: store.User{UserRef: last}}); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if err := db.CreateRoom(ctx, store.Room{Name: "hall", Creator: last, CreatedAt: time.Now()}); err != nil {
				t.Fatal(err)
			}
		} else if _, _, err := db.JoinRoom(ctx, "hall", last); err != nil {
			t.Fatal(err)
		}
	}
	// What an older version left: no marks, and none made.
	for _, k := range []key{tuple(tableInboxLarge), tuple(tableMeta).str(tableInboxLarge)} {
		if err := db.pdb.DeleteRange(k, k.end(), pebble.Sync); err != nil {
			t.Fatal(err)
		}
	}
	if rooms, err := db.LargeInboxRooms(ctx, last.Login); err != nil || len(rooms) != 0 {
		t.Fatalf("LargeInboxRooms after forgetting = %v, %v", rooms, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = open(t, dir)
	defer db.Close()
	for _, login := range []string{"user000", last.Login} {
		if rooms, err := db.LargeInboxRooms(ctx, login); err != nil || len(rooms) != 1 || rooms[0] != "hall" {
			t.Errorf("LargeInboxRooms(%s) after Open = %v, %v, want [hall]", login, rooms, err)
		}
	}
}
