package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/killrchat/chatql/internal/chatclient"
	"github.com/killrchat/chatql/server"
)

// connection is any connection of the API, as the paging tests read it.
type connection struct {
	Edges    []struct{ Cursor string }
	PageInfo struct {
		HasNextPage, HasPreviousPage bool
		StartCursor, EndCursor       *string
	}
}

// pageInfoFields selects what walkPages checks.
const pageInfoFields = `edges { cursor } pageInfo { hasNextPage hasPreviousPage startCursor endCursor }`

// walkPages reads every page of the connection that query (with variables
// vars and $after) selects as `c`, checks each page's PageInfo against its
// edges, and returns the cursors of all the edges in order.
func walkPages(t *testing.T, c *chatclient.Client, query string, vars map[string]any) []string {
	t.Helper()
	var cursors []string
	var after any
	for pages := 1; ; pages++ {
		v := map[string]any{"after": after}
		for k, x := range vars {
			v[k] = x
		}
		var out struct{ C connection }
		mustDo(t, c, query, v, &out)
		page, info := out.C, out.C.PageInfo
		if info.HasPreviousPage != (after != nil) {
			t.Fatalf("page %d: hasPreviousPage %v, want %v", pages, info.HasPreviousPage, after != nil)
		}
		if len(page.Edges) == 0 {
			if info.StartCursor != nil || info.EndCursor != nil {
				t.Fatalf("page %d is empty but has cursors %v, %v", pages, info.StartCursor, info.EndCursor)
			}
		} else if info.StartCursor == nil || *info.StartCursor != page.Edges[0].Cursor ||
			info.EndCursor == nil || *info.EndCursor != page.Edges[len(page.Edges)-1].Cursor {
			t.Fatalf("page %d: start/end cursors %v/%v, edges %+v", pages, info.StartCursor, info.EndCursor, page.Edges)
		}
		for _, e := range page.Edges {
			cursors = append(cursors, e.Cursor)
		}
		if !info.HasNextPage {
			return cursors
		}
		after = *info.EndCursor
		if pages > 50 {
			t.Fatal("paging does not end")
		}
	}
}

func TestPageInfo(t *testing.T) { forEachStore(t, testPageInfo) }

func testPageInfo(t *testing.T, cfg server.Config) {
	ts := startServer(t, cfg)
	alice := ts.user(t, "alice")
	ts.user(t, "bob")
	ts.user(t, "carol")
	for i := range 3 {
		mustDo(t, alice, createRoom, map[string]any{"n": fmt.Sprintf("pi-%d", i)}, nil)
		mustDo(t, alice, postMessage, map[string]any{"r": "pi-0", "c": fmt.Sprintf("m%d", i)}, nil)
		mustDo(t, alice, sendDirect, map[string]any{"to": "bob", "c": fmt.Sprintf("dm%d", i)}, nil)
	}
	for _, c := range []struct {
		name, field string
		edges       int
	}{
		{"rooms", `rooms(first: 2, after: $after)`, 3},
		{"messages", `messages(room: "pi-0", first: 2, after: $after)`, 3},
		{"directMessages", `directMessages(with: "bob", first: 2, after: $after)`, 3},
		{"myMessages", `myMessages(first: 2, after: $after)`, 6},
		{"empty", `directMessages(with: "carol", first: 2, after: $after)`, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			cursors := walkPages(t, alice, `query($after: String) { c: `+c.field+` { `+pageInfoFields+` } }`, nil)
			if len(cursors) != c.edges {
				t.Fatalf("%d edges, want %d", len(cursors), c.edges)
			}
		})
	}
}

// TestCursorsAreStrings: every cursor the API hands out and every `after`
// it takes is a String, as Relay has it (roomEvents took an ID).
func TestCursorsAreStrings(t *testing.T) {
	ts := startServer(t, testConfig(t))
	var out struct {
		Schema struct {
			Types []struct {
				Name   string
				Fields []struct {
					Name string
					Type typeRef
					Args []struct {
						Name string
						Type typeRef
					}
				}
			}
		} `json:"__schema"`
	}
	mustDo(t, ts.Client, `{ __schema { types { name fields { name type { ...T } args { name type { ...T } } } } } }
		fragment T on __Type { name ofType { name } }`, nil, &out)
	checked := 0
	for _, ty := range out.Schema.Types {
		for _, f := range ty.Fields {
			if f.Name == "cursor" || f.Name == "startCursor" || f.Name == "endCursor" {
				checked++
				if f.Type.named() != "String" {
					t.Errorf("%s.%s is %s, want String", ty.Name, f.Name, f.Type.named())
				}
			}
			for _, a := range f.Args {
				if a.Name == "after" {
					checked++
					if a.Type.named() != "String" {
						t.Errorf("%s.%s(after:) is %s, want String", ty.Name, f.Name, a.Type.named())
					}
				}
			}
		}
	}
	if checked < 8 {
		t.Fatalf("only %d cursor fields and arguments found", checked)
	}
}

// typeRef is an introspected type, one level of wrapping deep.
type typeRef struct {
	Name   *string
	OfType *struct{ Name *string }
}

// named is the type's name under a non-null wrapper.
func (r typeRef) named() string {
	if r.Name != nil {
		return *r.Name
	}
	if r.OfType != nil && r.OfType.Name != nil {
		return *r.OfType.Name
	}
	return "?"
}

// wantNull runs a query whose field `v` must be null, with no error.
func wantNull(t *testing.T, c *chatclient.Client, query string, vars map[string]any) {
	t.Helper()
	var out struct{ V *json.RawMessage }
	mustDo(t, c, query, vars, &out)
	if out.V != nil {
		t.Fatalf("%s: got %s, want null", firstLine(query), *out.V)
	}
}

func TestLookupsOfMissingThingsAreNull(t *testing.T) {
	forEachStore(t, testLookupsOfMissingThingsAreNull)
}

func testLookupsOfMissingThingsAreNull(t *testing.T, cfg server.Config) {
	ts := startServer(t, cfg)
	alice, bob := ts.user(t, "alice"), ts.user(t, "bob")
	ts.user(t, "carol")
	mustDo(t, alice, createRoom, map[string]any{"n": "open"}, nil)
	mustDo(t, alice, createKind, map[string]any{"n": "secret", "k": "PRIVATE_GROUP"}, nil)
	var posted struct{ PostMessage struct{ ID string } }
	mustDo(t, alice, postMessage, map[string]any{"r": "open", "c": "in the open"}, &posted)
	var grouped struct{ PostMessage struct{ ID string } }
	mustDo(t, alice, postMessage, map[string]any{"r": "secret", "c": "in the group"}, &grouped)
	var direct struct{ SendDirectMessage struct{ ID string } }
	mustDo(t, alice, sendDirect, map[string]any{"to": "carol", "c": "between us"}, &direct)

	const roomQ = `query($n: String!) { v: room(name: $n) { name } }`
	const messageQ = `query($id: ID!) { v: message(id: $id) { id } }`
	t.Run("Room", func(t *testing.T) {
		wantNull(t, bob, roomQ, map[string]any{"n": "missing"})
		wantNull(t, bob, roomQ, map[string]any{"n": "secret"}) // another's group: as if there were none
		mustDo(t, alice, deleteRoom, map[string]any{"r": "open"}, nil)
		wantNull(t, alice, roomQ, map[string]any{"n": "open"})
	})
	t.Run("Message", func(t *testing.T) {
		wantNull(t, bob, messageQ, map[string]any{"id": "6ba7b810-9dad-11d1-80b4-00c04fd430c8"})
		wantNull(t, bob, messageQ, map[string]any{"id": grouped.PostMessage.ID})
		wantNull(t, bob, messageQ, map[string]any{"id": direct.SendDirectMessage.ID})
		wantNull(t, alice, messageQ, map[string]any{"id": posted.PostMessage.ID}) // its room was deleted
		wantCode(t, bob, "BAD_USER_INPUT", messageQ, map[string]any{"id": "not-an-id"})
	})
	t.Run("MutationsStillRefuse", func(t *testing.T) {
		wantCode(t, bob, "NOT_FOUND", joinRoom, map[string]any{"r": "missing"})
		wantCode(t, bob, "NOT_FOUND", `mutation($id: ID!) { hideMessage(id: $id) { id } }`, map[string]any{"id": grouped.PostMessage.ID})
	})
}

// walkList reads every page of a paged list two items at a time, with
// page(after) reading the keys of the page after the key `after`, and
// returns the keys in order.
func walkList(t *testing.T, page func(after any) []string) []string {
	t.Helper()
	var keys []string
	var after any
	for pages := 1; ; pages++ {
		got := page(after)
		keys = append(keys, got...)
		if len(got) < 2 {
			return keys
		}
		after = keys[len(keys)-1]
		if pages > 20 {
			t.Fatal("paging does not end")
		}
	}
}

func TestPagedLists(t *testing.T) { forEachStore(t, testPagedLists) }

func testPagedLists(t *testing.T, cfg server.Config) {
	ts := startServer(t, cfg)
	logins := []string{"dora", "alice", "erin", "bob", "carol"}
	clients := map[string]*chatclient.Client{}
	for _, l := range logins {
		clients[l] = ts.user(t, l)
	}
	alice := clients["alice"]
	mustDo(t, clients["dora"], createRoom, map[string]any{"n": "hall"}, nil)
	for _, l := range logins[1:] {
		mustDo(t, clients[l], joinRoom, map[string]any{"r": "hall"}, nil)
	}
	for _, r := range []string{"zoo", "attic", "cellar"} {
		mustDo(t, alice, createRoom, map[string]any{"n": r}, nil)
	}

	const participantsQ = `query($n: Int, $after: String) { v: room(name: "hall") { participants(first: $n, after: $after) { login } } }`
	t.Run("Participants", func(t *testing.T) {
		keys := walkList(t, func(after any) []string {
			var out struct {
				V struct{ Participants []struct{ Login string } }
			}
			mustDo(t, alice, participantsQ, map[string]any{"n": 2, "after": after}, &out)
			var logins []string
			for _, p := range out.V.Participants {
				logins = append(logins, p.Login)
			}
			return logins
		})
		if got := fmt.Sprint(keys); got != "[alice bob carol dora erin]" {
			t.Fatalf("participants page by page: %s", got)
		}
		var out struct {
			V struct{ Participants []struct{ Login string } }
		}
		mustDo(t, alice, participantsQ, map[string]any{"after": "bz"}, &out) // after a login that is not there
		if got := fmt.Sprint(out.V.Participants); got != "[{carol} {dora} {erin}]" {
			t.Fatalf("participants after \"bz\": %s", got)
		}
		wantCode(t, alice, "BAD_USER_INPUT", participantsQ, map[string]any{"n": 0})
		wantCode(t, alice, "BAD_USER_INPUT", participantsQ, map[string]any{"n": 101})
	})
	t.Run("MyRooms", func(t *testing.T) {
		rooms := walkList(t, func(after any) []string {
			var out struct{ Me struct{ Rooms []string } }
			mustDo(t, alice, `query($after: String) { me { rooms(first: 2, after: $after) } }`, map[string]any{"after": after}, &out)
			return out.Me.Rooms
		})
		if got := fmt.Sprint(rooms); got != "[attic cellar hall zoo]" {
			t.Fatalf("alice's rooms page by page: %s", got)
		}
		var out struct{ Me struct{ Rooms []string } }
		mustDo(t, alice, `{ me { rooms(first: 2, after: "b") } }`, nil, &out)
		if got := fmt.Sprint(out.Me.Rooms); got != "[cellar hall]" {
			t.Fatalf("alice's rooms after \"b\": %s", got)
		}
	})
	t.Run("BlockedUsers", func(t *testing.T) {
		for _, l := range []string{"erin", "bob", "dora", "carol"} {
			mustDo(t, alice, `mutation($l: String!) { blockUser(login: $l) { login } }`, map[string]any{"l": l}, nil)
		}
		const q = `query($n: Int, $after: String) { blockedUsers(first: $n, after: $after) { login } }`
		blocked := walkList(t, func(after any) []string {
			var out struct{ BlockedUsers []struct{ Login string } }
			mustDo(t, alice, q, map[string]any{"n": 2, "after": after}, &out)
			var logins []string
			for _, u := range out.BlockedUsers {
				logins = append(logins, u.Login)
			}
			return logins
		})
		if got := fmt.Sprint(blocked); got != "[bob carol dora erin]" {
			t.Fatalf("alice's blocked users page by page: %s", got)
		}
		wantCode(t, alice, "BAD_USER_INPUT", q, map[string]any{"n": 101})
	})
	t.Run("Banned", func(t *testing.T) {
		for _, l := range []string{"erin", "bob", "carol"} {
			mustDo(t, clients["dora"], `mutation($l: String!) { banUser(room: "hall", login: $l) { name } }`, map[string]any{"l": l}, nil)
		}
		const q = `query($n: Int, $after: String) { v: room(name: "hall") { banned(first: $n, after: $after) } }`
		banned := walkList(t, func(after any) []string {
			var out struct{ V struct{ Banned []string } }
			mustDo(t, clients["dora"], q, map[string]any{"n": 2, "after": after}, &out)
			return out.V.Banned
		})
		if got := fmt.Sprint(banned); got != "[bob carol erin]" {
			t.Fatalf("hall's bans page by page: %s", got)
		}
		var out struct{ V struct{ Banned []string } }
		mustDo(t, alice, q, nil, &out)
		if out.V.Banned != nil {
			t.Fatalf("a participant who does not moderate reads the bans: %v", out.V.Banned)
		}
	})
	t.Run("APageOfRoomsShowsTheirParticipants", func(t *testing.T) {
		// A page of rooms may show some of each room's participants; each
		// one shown counts in the query's cost, so all of them may not.
		mustDo(t, alice, `{ rooms { edges { node { name creator { login } participants(first: 10) { login firstname lastname } } } } }`, nil, nil)
		wantCode(t, alice, "COMPLEXITY_LIMIT_EXCEEDED", `{ rooms { edges { node { name creator { login } participants { login firstname lastname } } } } }`, nil)
		mustDo(t, alice, `{ room(name: "hall") { p0: participants(first: 5) { login } p1: participants(first: 5, after: "bob") { login } } }`, nil, nil)
	})
	t.Run("APageOfMessagesAsAnAppShowsThem", func(t *testing.T) {
		// The leaves of a message's files, thumbnails and link card come
		// with the message: a page of 50 with all of them is within the
		// limit; two such pages are not.
		page := func(alias string) string {
			return alias + `: messages(room: "hall", first: 50) { edges { cursor node { id content postedAt
				author { login firstname lastname avatar { thumbnails { url } blurhash } } reactions { emoji count reactedByMe }
				attachments { id name contentType size width height blurhash url thumbnails { width height url } }
				preview { url title description siteName imageUrl } } } pageInfo { hasNextPage endCursor } }`
		}
		mustDo(t, alice, `{ `+page("a")+` }`, nil, nil)
		wantCode(t, alice, "COMPLEXITY_LIMIT_EXCEEDED", `{ `+page("a")+page("b")+` }`, nil)
	})
}

func TestRoomsPerUser(t *testing.T) { forEachStore(t, testRoomsPerUser) }

// testRoomsPerUser: a user takes part in at most MaxRoomsPerUser rooms and
// groups: creating, joining or being added past it is refused with
// BAD_USER_INPUT and changes nothing; joining a room one is in still
// works; leaving one makes room for another.
func testRoomsPerUser(t *testing.T, cfg server.Config) {
	cfg.MaxRoomsPerUser = 2
	ts := startServer(t, cfg)
	alice, bob, carol := ts.user(t, "alice"), ts.user(t, "bob"), ts.user(t, "carol")
	mustDo(t, bob, createRoom, map[string]any{"n": "one"}, nil)
	mustDo(t, bob, createRoom, map[string]any{"n": "two"}, nil)
	mustDo(t, carol, createRoom, map[string]any{"n": "three"}, nil)
	mustDo(t, carol, createKind, map[string]any{"n": "den", "k": "PRIVATE_GROUP"}, nil)
	wantCode(t, bob, "BAD_USER_INPUT", createRoom, map[string]any{"n": "bobs-third"})
	mustDo(t, alice, createRoom, map[string]any{"n": "mine"}, nil)
	mustDo(t, alice, joinRoom, map[string]any{"r": "one"}, nil)

	wantCode(t, alice, "BAD_USER_INPUT", joinRoom, map[string]any{"r": "two"})
	wantCode(t, alice, "BAD_USER_INPUT", createRoom, map[string]any{"n": "another"})
	wantCode(t, carol, "BAD_USER_INPUT", addMember, map[string]any{"g": "den", "l": "alice"})
	mustDo(t, alice, joinRoom, map[string]any{"r": "one"}, nil) // in it already
	var me struct{ Me struct{ Rooms []string } }
	mustDo(t, alice, `{ me { rooms(first: 10) } }`, nil, &me)
	if got := strings.Join(me.Me.Rooms, ","); got != "mine,one" {
		t.Fatalf("alice's rooms after the refusals: %s; want mine,one", got)
	}
	wantNull(t, bob, `query($r: String!) { room(name: $r) { name } }`, map[string]any{"r": "another"})

	mustDo(t, alice, leaveRoom, map[string]any{"r": "one"}, nil)
	mustDo(t, alice, joinRoom, map[string]any{"r": "two"}, nil)
	wantCode(t, alice, "BAD_USER_INPUT", joinRoom, map[string]any{"r": "three"})
	mustDo(t, alice, leaveRoom, map[string]any{"r": "two"}, nil)
	mustDo(t, carol, addMember, map[string]any{"g": "den", "l": "alice"}, nil)
}
