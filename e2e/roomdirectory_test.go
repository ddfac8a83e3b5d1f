package e2e

import (
	"encoding/base64"
	"fmt"
	"slices"
	"sort"
	"testing"

	"github.com/killrchat/chatql/internal/chatclient"
	"github.com/killrchat/chatql/server"
)

// roomPage is a page of publicRooms as the tests read it.
type roomPage struct {
	PublicRooms struct {
		Edges []struct {
			Cursor string
			Node   struct{ Name, Kind string }
		}
		PageInfo struct {
			HasNextPage, HasPreviousPage bool
			EndCursor                    *string
		}
	}
}

const publicRoomsQ = `query($first: Int, $after: String) { publicRooms(first: $first, after: $after) {
	edges { cursor node { name kind } } pageInfo { hasNextPage hasPreviousPage endCursor } } }`

// allPublicRooms pages c's publicRooms first at a time to the end, and
// returns the names in the order shown, failing on a name shown twice.
func allPublicRooms(t *testing.T, c *chatclient.Client, first int) []string {
	t.Helper()
	var names []string
	seen := map[string]int{}
	var after any
	for page := 0; ; page++ {
		if page > 1000 {
			t.Fatal("publicRooms never ends")
		}
		var out roomPage
		mustDo(t, c, publicRoomsQ, map[string]any{"first": first, "after": after}, &out)
		conn := out.PublicRooms
		if len(conn.Edges) > first {
			t.Errorf("page %d holds %d rooms, more than first: %d", page, len(conn.Edges), first)
		}
		if conn.PageInfo.HasPreviousPage != (page > 0) {
			t.Errorf("page %d: hasPreviousPage %v", page, conn.PageInfo.HasPreviousPage)
		}
		for _, e := range conn.Edges {
			if p, dup := seen[e.Node.Name]; dup {
				t.Errorf("room %q on pages %d and %d", e.Node.Name, p, page)
			}
			seen[e.Node.Name] = page
			if e.Node.Kind != "PUBLIC" {
				t.Errorf("publicRooms shows %q of kind %s", e.Node.Name, e.Node.Kind)
			}
			names = append(names, e.Node.Name)
		}
		if !conn.PageInfo.HasNextPage {
			return names
		}
		if conn.PageInfo.EndCursor == nil {
			t.Fatalf("page %d: hasNextPage without an endCursor", page)
		}
		after = *conn.PageInfo.EndCursor
	}
}

// TestPublicRooms: the directory pages every public room exactly once, in
// one stable order, over many pages; it never shows a private group (not
// even the caller's), a deleted room, or a room the caller is banned from,
// and goes on past a page of such rooms; bad arguments are refused naming
// the argument. The deprecated rooms field still answers.
func TestPublicRooms(t *testing.T) {
	forEachStore(t, func(t *testing.T, cfg server.Config) {
		ts := startServer(t, cfg)
		alice, bob := ts.user(t, "alice"), ts.user(t, "bob")
		create := func(c *chatclient.Client, name, kind string) {
			mustDo(t, c, `mutation($n: String!, $k: RoomKind) { createRoom(input: {name: $n, kind: $k}) { name } }`, map[string]any{"n": name, "k": kind}, nil)
		}
		var want []string
		for i := range 40 {
			name := fmt.Sprintf("hall-%02d", i)
			create(alice, name, "PUBLIC")
			want = append(want, name)
		}
		for i := range 6 {
			create(alice, fmt.Sprintf("den-%d", i), "PRIVATE_GROUP")
		}
		create(bob, "bobs-den", "PRIVATE_GROUP") // bob's own group is no public room either
		// bob is banned from the six first by name (on the embedded store
		// a whole page of rooms left out), and one room is deleted.
		for _, name := range want[:6] {
			mustDo(t, alice, `mutation($r: String!) { banUser(room: $r, login: "bob") { name } }`, map[string]any{"r": name}, nil)
		}
		mustDo(t, alice, `mutation { deleteRoom(room: "hall-20") { name } }`, nil, nil)
		want = slices.Delete(want, 20, 21)

		// alice sees every public room, bob all but those he is banned from.
		for _, first := range []int{1, 3, 7, 100} {
			got := allPublicRooms(t, alice, first)
			sorted := slices.Clone(got)
			sort.Strings(sorted)
			if !slices.Equal(sorted, want) {
				t.Errorf("alice's publicRooms(first: %d) = %v; want %v", first, got, want)
			}
			if cfg.Store != "cassandra" && !slices.Equal(got, sorted) {
				t.Errorf("alice's publicRooms(first: %d) = %v; want them by name on the embedded store", first, got)
			}
			if first == 3 {
				if again := allPublicRooms(t, alice, 3); !slices.Equal(again, got) {
					t.Errorf("publicRooms' order changed between two readings: %v, then %v", got, again)
				}
			}
		}
		got := allPublicRooms(t, bob, 2)
		sort.Strings(got)
		if !slices.Equal(got, want[6:]) {
			t.Errorf("bob's publicRooms = %v; want %v, without the rooms he is banned from", got, want[6:])
		}

		// A cursor of another list, or no cursor at all, is refused.
		for _, bad := range []string{"hall-03", "cm9vbTpoYWxsLTAz", "!!!"} {
			e := wantCode(t, alice, "BAD_USER_INPUT", publicRoomsQ, map[string]any{"first": 2, "after": bad})
			if e.Extensions["field"] != "after" {
				t.Errorf("publicRooms(after: %q): %+v; want extensions.field after", bad, e)
			}
		}
		for _, first := range []int{0, 101} {
			wantCode(t, alice, "BAD_USER_INPUT", publicRoomsQ, map[string]any{"first": first})
		}
		// A readMarksConnection cursor is no directory cursor.
		mustDo(t, alice, `mutation { postMessage(room: "hall-30", content: "hi") { id } }`, nil, nil)
		var marks struct {
			Room struct {
				ReadMarksConnection struct{ Edges []struct{ Cursor string } }
			}
		}
		var posted struct {
			Messages struct {
				Edges []struct{ Node struct{ ID string } }
			}
		}
		mustDo(t, alice, `{ messages(room: "hall-30", first: 1) { edges { node { id } } } }`, nil, &posted)
		mustDo(t, alice, `mutation($m: ID!) { markRead(conversation: "hall-30", upTo: $m) { id } }`, map[string]any{"m": posted.Messages.Edges[0].Node.ID}, nil)
		mustDo(t, alice, `{ room(name: "hall-30") { readMarksConnection { edges { cursor } } } }`, nil, &marks)
		if len(marks.Room.ReadMarksConnection.Edges) != 1 {
			t.Fatalf("readMarksConnection = %+v; want alice's mark", marks)
		}
		wantCode(t, alice, "BAD_USER_INPUT", publicRoomsQ, map[string]any{"after": marks.Room.ReadMarksConnection.Edges[0].Cursor})

		// The deprecated rooms still lists rooms, the caller's groups too.
		var old struct {
			Rooms struct {
				Edges []struct{ Node struct{ Name string } }
			}
		}
		mustDo(t, bob, `{ rooms(first: 100) { edges { node { name } } } }`, nil, &old)
		if !slices.ContainsFunc(old.Rooms.Edges, func(e struct{ Node struct{ Name string } }) bool { return e.Node.Name == "bobs-den" }) {
			t.Errorf("the deprecated rooms no longer lists bob's group: %+v", old)
		}
	})
}

// TestRoomReadMarksAndEvents, on one server per store: a room's read
// marks page by login over many pages, each mark once, as the deprecated
// list shows them, and for participants only; a room event carries its
// room as an object (null once deleted); a deleted message is no unread
// message in the inbox.
func TestRoomReadMarksAndEvents(t *testing.T) {
	forEachStore(t, func(t *testing.T, cfg server.Config) {
		ts := startServer(t, cfg)
		alice, outsider := ts.user(t, "alice"), ts.user(t, "outsider")
		mustDo(t, alice, createRoom, map[string]any{"n": "reading"}, nil)
		posted := func(c *chatclient.Client, room, content string) string {
			var out struct{ PostMessage struct{ ID string } }
			mustDo(t, c, postMessage, map[string]any{"r": room, "c": content}, &out)
			return out.PostMessage.ID
		}
		markRead := func(c *chatclient.Client, conversation, upTo string) {
			mustDo(t, c, `mutation($c: ID!, $m: ID!) { markRead(conversation: $c, upTo: $m) { id } }`, map[string]any{"c": conversation, "m": upTo}, nil)
		}
		first := posted(alice, "reading", "read me")
		want := []string{"alice"}
		markRead(alice, "reading", first)
		for i := range 16 {
			login := fmt.Sprintf("reader%02d", i)
			c := ts.user(t, login)
			mustDo(t, c, joinRoom, map[string]any{"r": "reading"}, nil)
			markRead(c, "reading", first)
			want = append(want, login)
		}

		t.Run("ReadMarksConnection", func(t *testing.T) {
			const q = `query($n: Int, $after: String) { room(name: "reading") {
				readMarks(first: 100) { user { login } upTo }
				readMarksConnection(first: $n, after: $after) { edges { cursor node { user { login } upTo } } pageInfo { hasNextPage hasPreviousPage endCursor } } } }`
			type mark struct {
				User struct{ Login string }
				UpTo string
			}
			var got []string
			var after any
			for page := 0; ; page++ {
				var out struct {
					Room struct {
						ReadMarks           []mark
						ReadMarksConnection struct {
							Edges []struct {
								Cursor string
								Node   mark
							}
							PageInfo struct {
								HasNextPage, HasPreviousPage bool
								EndCursor                    *string
							}
						}
					}
				}
				mustDo(t, alice, q, map[string]any{"n": 5, "after": after}, &out)
				conn := out.Room.ReadMarksConnection
				if len(conn.Edges) > 5 || conn.PageInfo.HasPreviousPage != (page > 0) {
					t.Errorf("page %d: %d marks, hasPreviousPage %v", page, len(conn.Edges), conn.PageInfo.HasPreviousPage)
				}
				for _, e := range conn.Edges {
					if e.Node.UpTo != first {
						t.Errorf("%s's mark is %s, want %s", e.Node.User.Login, e.Node.UpTo, first)
					}
					got = append(got, e.Node.User.Login)
				}
				if page == 0 {
					var old []string
					for _, m := range out.Room.ReadMarks {
						old = append(old, m.User.Login)
					}
					if !slices.Equal(old, want) {
						t.Errorf("the deprecated readMarks = %v; want %v", old, want)
					}
				}
				if !conn.PageInfo.HasNextPage {
					break
				}
				after = *conn.PageInfo.EndCursor
			}
			if !slices.Equal(got, want) {
				t.Errorf("readMarksConnection pages = %v; want each mark once, by login: %v", got, want)
			}
			// Not a participant: no marks.
			var theirs struct {
				Room struct{ ReadMarksConnection struct{ Edges []any } }
			}
			mustDo(t, outsider, `{ room(name: "reading") { readMarksConnection { edges { cursor } } } }`, nil, &theirs)
			if len(theirs.Room.ReadMarksConnection.Edges) != 0 {
				t.Errorf("an outsider's readMarksConnection = %+v; want none", theirs)
			}
			for _, bad := range []string{"alice", listCursorOf("publicRooms:reading")} {
				e := wantCode(t, alice, "BAD_USER_INPUT", q, map[string]any{"after": bad})
				if e.Extensions["field"] != "after" {
					t.Errorf("readMarksConnection(after: %q): %+v; want extensions.field after", bad, e)
				}
			}
			wantCode(t, alice, "BAD_USER_INPUT", q, map[string]any{"n": 101})
		})

		t.Run("RoomEventChatRoom", func(t *testing.T) {
			mustDo(t, alice, createRoom, map[string]any{"n": "fleeting"}, nil)
			sub := ts.live(t, alice, `subscription { roomEvents(room: "fleeting") { kind room conversationId chatRoom { name kind banner creator { login } } } }`, nil)
			posted(alice, "fleeting", "hello")
			type event struct {
				RoomEvents struct {
					Kind, Room, ConversationID string
					ChatRoom                   *struct {
						Name, Kind, Banner string
						Creator            struct{ Login string }
					}
				}
			}
			var ev event
			nextData(t, sub, &ev)
			if e := ev.RoomEvents; e.Kind != "MESSAGE_POSTED" || e.Room != "fleeting" || e.ConversationID != "fleeting" || e.ChatRoom == nil || e.ChatRoom.Name != "fleeting" || e.ChatRoom.Kind != "PUBLIC" || e.ChatRoom.Creator.Login != "alice" {
				t.Errorf("event = %+v; want MESSAGE_POSTED in fleeting with its chatRoom", e)
			}
			// Each event shows the room as it is then: the new banner.
			mustDo(t, alice, `mutation { updateRoomSettings(room: "fleeting", input: {banner: "moved on"}) { name } }`, nil, nil)
			ev = event{}
			nextData(t, sub, &ev)
			if e := ev.RoomEvents; e.Kind != "ROOM_SETTINGS_CHANGED" || e.ChatRoom == nil || e.ChatRoom.Banner != "moved on" {
				t.Errorf("event = %+v; want ROOM_SETTINGS_CHANGED with the room's new banner", e)
			}
			mustDo(t, alice, deleteRoom, map[string]any{"r": "fleeting"}, nil)
			ev = event{}
			nextData(t, sub, &ev)
			if e := ev.RoomEvents; e.Kind != "ROOM_DELETED" || e.ConversationID != "fleeting" || e.ChatRoom != nil {
				t.Errorf("event = %+v; want ROOM_DELETED of fleeting without a chatRoom", e)
			}
		})

		t.Run("DeletedMessageIsNotUnread", func(t *testing.T) {
			bob := ts.user(t, "bob")
			mustDo(t, bob, joinRoom, map[string]any{"r": "reading"}, nil)
			var latest struct {
				Messages struct {
					Edges []struct{ Node struct{ ID string } }
				}
			}
			mustDo(t, bob, `{ messages(room: "reading", first: 1) { edges { node { id } } } }`, nil, &latest)
			markRead(bob, "reading", latest.Messages.Edges[0].Node.ID)
			var direct struct{ SendDirectMessage struct{ ID string } }
			mustDo(t, alice, sendDirect, map[string]any{"to": "bob", "c": "oops, @bob"}, &direct)
			inRoom := posted(alice, "reading", "oops too, @bob")
			unread := func() map[string][2]int {
				var out struct {
					Inbox []struct {
						ID               string
						Unread, Mentions int
					}
				}
				mustDo(t, bob, `{ inbox { id unread mentions } }`, nil, &out)
				m := map[string][2]int{}
				for _, c := range out.Inbox {
					m[c.ID] = [2]int{c.Unread, c.Mentions}
				}
				return m
			}
			if got := unread(); got["alice:bob"] != [2]int{1, 1} || got["reading"] != [2]int{1, 1} {
				t.Fatalf("bob's unread and mentions before the deletes = %v; want 1 and 1 in alice:bob and reading", got)
			}
			for _, id := range []string{direct.SendDirectMessage.ID, inRoom} {
				mustDo(t, alice, `mutation($id: ID!) { deleteMessage(id: $id) { id } }`, map[string]any{"id": id}, nil)
			}
			if got := unread(); got["alice:bob"] != [2]int{} || got["reading"] != [2]int{} {
				t.Errorf("bob's unread and mentions after the deletes = %v; want none", got)
			}
		})
	})
}

// listCursorOf encodes a list cursor as the server does (resolvers/listcursors.go).
func listCursorOf(raw string) string { return base64.RawURLEncoding.EncodeToString([]byte(raw)) }
