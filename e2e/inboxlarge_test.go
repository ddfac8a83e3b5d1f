package e2e

import (
	"crypto/rand"
	"fmt"
	"slices"
	"testing"

	"github.com/killrchat/chatql/server"
	"github.com/killrchat/chatql/store"
)

// crowd joins the users crowd<from> to crowd<to-1>, made in the store, to
// the rooms, through the store: the participants a large room needs,
// without as many sign-ups.
func crowd(t *testing.T, ts *testServer, from, to int, rooms ...string) {
	t.Helper()
	ctx, s := testContext(t), ts.Store()
	for i := from; i < to; i++ {
		hash := make([]byte, 60)
		rand.Read(hash)
		u := store.UserRef{Login: fmt.Sprintf("crowd%d", i), Firstname: "Crowd", Lastname: "Member"}
		if err := s.CreateUser(ctx, store.Account{User: store.User{UserRef: u, Email: u.Login + "@example.com"}, PassHash: hash}); err != nil {
			t.Fatalf("CreateUser(%q) = %v", u.Login, err)
		}
		for _, r := range rooms {
			if _, _, err := s.JoinRoom(ctx, r, u); err != nil {
				t.Fatalf("JoinRoom(%q, %q) = %v", r, u.Login, err)
			}
		}
	}
}

// largeRooms returns login's large rooms.
func largeRooms(t *testing.T, ts *testServer, login string) []string {
	t.Helper()
	rooms, err := ts.Store().LargeInboxRooms(testContext(t), login)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(rooms)
	return rooms
}

func TestConversationsLargeRooms(t *testing.T) { forEachStore(t, testConversationsLargeRooms) }

// testConversationsLargeRooms: public rooms past store.InboxFanoutLimit
// participants, whose posts write no inbox positions, are listed at their
// last activity among the others, once, in pages of every size; a room
// crossing the limit either way keeps its place.
func testConversationsLargeRooms(t *testing.T, cfg server.Config) {
	ts := startServer(t, cfg)
	alice, bob := ts.user(t, "alice"), ts.user(t, "bob")
	for _, r := range []string{"town", "square", "nook"} {
		mustDo(t, alice, createRoom, map[string]any{"n": r}, nil)
	}
	mustDo(t, alice, createKind, map[string]any{"n": "club", "k": "PRIVATE_GROUP"}, nil)
	mustDo(t, alice, addMember, map[string]any{"g": "club", "l": "bob"}, nil)
	// town at the limit, square past it (the crowd's last join crosses it).
	crowd(t, ts, 0, store.InboxFanoutLimit-1, "town", "square")
	crowd(t, ts, store.InboxFanoutLimit-1, store.InboxFanoutLimit, "square")
	if got := largeRooms(t, ts, "alice"); !slices.Equal(got, []string{"square"}) {
		t.Fatalf("alice's large rooms = %v, want [square]", got)
	}

	// town crosses the limit with bob's join, through the API.
	mustDo(t, alice, postMessage, map[string]any{"r": "town", "c": "town at the limit"}, nil)
	mustDo(t, bob, joinRoom, map[string]any{"r": "town"}, nil)
	mustDo(t, bob, joinRoom, map[string]any{"r": "square"}, nil)
	if got := largeRooms(t, ts, "alice"); !slices.Equal(got, []string{"square", "town"}) {
		t.Fatalf("alice's large rooms after bob's join = %v, want [square town]", got)
	}

	// Activity interleaved: large rooms between the others.
	for i := range 4 {
		ts.user(t, fmt.Sprintf("peer%d", i))
	}
	mustDo(t, alice, sendDirect, map[string]any{"to": "peer0", "c": "first"}, nil)
	mustDo(t, bob, postMessage, map[string]any{"r": "town", "c": "town past the limit"}, nil)
	mustDo(t, alice, sendDirect, map[string]any{"to": "peer1", "c": "second"}, nil)
	mustDo(t, bob, postMessage, map[string]any{"r": "square", "c": "square past the limit"}, nil)
	mustDo(t, alice, postMessage, map[string]any{"r": "nook", "c": "small"}, nil)
	mustDo(t, alice, sendDirect, map[string]any{"to": "peer2", "c": "third"}, nil)
	mustDo(t, bob, `mutation { postMessage(room: "club", content: "hello club") { id } }`, nil, nil)
	mustDo(t, alice, sendDirect, map[string]any{"to": "peer3", "c": "last"}, nil)

	want := []string{"alice:peer3", "club", "alice:peer2", "nook", "square", "alice:peer1", "town", "alice:peer0"}
	if got := inboxIDs(t, alice); !slices.Equal(got, want) {
		t.Fatalf("inbox = %v, want %v", got, want)
	}
	for _, n := range []int{1, 2, 3, 5, 20} {
		if got := allConversations(t, alice, n); !slices.Equal(got, want) {
			t.Errorf("conversations %d at a time = %v, want %v", n, got, want)
		}
	}
	var first conversationsPage
	mustDo(t, alice, conversationsQ, map[string]any{"n": 5}, &first)
	if e := first.Conversations.Edges; len(e) != 5 || e[4].Node.ID != "square" || e[4].Node.Kind != "ROOM" || e[4].Node.LastMessage.Content != "square past the limit" {
		t.Errorf("the first page = %+v, want square fifth at its post", e)
	}

	// A cursor keeps its place: new activity of a large room moves it
	// first, and the pages after a cursor taken before list it no more.
	var page conversationsPage
	mustDo(t, alice, conversationsQ, map[string]any{"n": 3}, &page)
	mustDo(t, bob, postMessage, map[string]any{"r": "town", "c": "town again"}, nil)
	var rest conversationsPage
	mustDo(t, alice, conversationsQ, map[string]any{"n": 20, "after": *page.Conversations.PageInfo.EndCursor}, &rest)
	var restIDs []string
	for _, e := range rest.Conversations.Edges {
		restIDs = append(restIDs, e.Node.ID)
	}
	if w := []string{"nook", "square", "alice:peer1", "alice:peer0"}; !slices.Equal(restIDs, w) {
		t.Errorf("the pages after a cursor, once town moved = %v, want %v", restIDs, w)
	}
	if got := allConversations(t, alice, 2); got[0] != "town" || len(got) != len(want) {
		t.Errorf("conversations after town's new post = %v, want town first, once", got)
	}

	// Back at the limit (bob leaves both), posts are activities of every
	// order again, and each room is still listed once.
	mustDo(t, bob, leaveRoom, map[string]any{"r": "town"}, nil)
	mustDo(t, bob, leaveRoom, map[string]any{"r": "square"}, nil)
	mustDo(t, alice, postMessage, map[string]any{"r": "square", "c": "square at the limit"}, nil)
	want = inboxIDs(t, alice)
	if want[0] != "square" {
		t.Fatalf("inbox after square's post = %v, want square first", want)
	}
	for _, n := range []int{1, 3} {
		if got := allConversations(t, alice, n); !slices.Equal(got, want) {
			t.Errorf("conversations %d at a time after the rooms shrank = %v, want %v", n, got, want)
		}
	}
	// bob no longer takes part: his marks go with his first page.
	if got := largeRooms(t, ts, "bob"); len(got) != 2 {
		t.Fatalf("bob's large rooms after leaving = %v, want both, until a page", got)
	}
	if got := allConversations(t, bob, 5); !slices.Equal(got, []string{"club"}) {
		t.Errorf("bob's conversations = %v, want [club]", got)
	}
	if got := largeRooms(t, ts, "bob"); len(got) != 0 {
		t.Errorf("bob's large rooms after a page = %v, want none", got)
	}
}
