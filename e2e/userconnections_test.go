package e2e

import (
	"slices"
	"testing"

	"github.com/killrchat/chatql/internal/chatclient"
	"github.com/killrchat/chatql/server"
)

type userConnection struct {
	Edges []struct {
		Cursor string
		Node   struct{ Login string }
	}
	PageInfo struct {
		HasNextPage, HasPreviousPage bool
		EndCursor                    *string
	}
	TotalCount int
}

// pageUsers reads a UserConnection page by page (get reads one page), checks
// each page's pageInfo and totalCount, and returns the logins in order.
func pageUsers(t *testing.T, n, total int, get func(after any) userConnection) []string {
	t.Helper()
	var logins []string
	var after any
	for range 20 {
		conn := get(after)
		if conn.TotalCount != total {
			t.Errorf("totalCount = %d, want %d", conn.TotalCount, total)
		}
		if conn.PageInfo.HasPreviousPage != (after != nil) {
			t.Errorf("hasPreviousPage = %v after %v", conn.PageInfo.HasPreviousPage, after)
		}
		for _, e := range conn.Edges {
			if e.Cursor != e.Node.Login {
				t.Errorf("the cursor of %q is %q", e.Node.Login, e.Cursor)
			}
			logins = append(logins, e.Node.Login)
		}
		if !conn.PageInfo.HasNextPage {
			return logins
		}
		if len(conn.Edges) != n {
			t.Fatalf("a page of %d edges (first: %d) says more follow", len(conn.Edges), n)
		}
		after = *conn.PageInfo.EndCursor
	}
	t.Fatal("the pages never ended")
	return nil
}

func TestUserConnections(t *testing.T) { forEachStore(t, testUserConnections) }

// testUserConnections pages a room's participants and the users one
// blocked, with their totals.
func testUserConnections(t *testing.T, cfg server.Config) {
	ts := startServer(t, cfg)
	alice := ts.user(t, "alice")
	mustDo(t, alice, createRoom, map[string]any{"n": "lobby"}, nil)
	var others []*chatclient.Client
	for _, l := range []string{"dave", "bob", "carol"} {
		c := ts.user(t, l)
		others = append(others, c)
		mustDo(t, c, joinRoom, map[string]any{"r": "lobby"}, nil)
	}
	const participantsQ = `query($n: Int, $after: String) { room(name: "lobby") { participantsConnection(first: $n, after: $after) {
		edges { cursor node { login } } pageInfo { hasNextPage hasPreviousPage endCursor } totalCount } } }`
	for _, n := range []int{1, 2, 4, 5} {
		got := pageUsers(t, n, 4, func(after any) userConnection {
			var out struct {
				Room struct{ ParticipantsConnection userConnection }
			}
			mustDo(t, others[0], participantsQ, map[string]any{"n": n, "after": after}, &out)
			return out.Room.ParticipantsConnection
		})
		if want := []string{"alice", "bob", "carol", "dave"}; !slices.Equal(got, want) {
			t.Errorf("participants %d at a time = %v, want %v", n, got, want)
		}
	}
	for _, n := range []int{0, 101} {
		wantCode(t, alice, "BAD_USER_INPUT", participantsQ, map[string]any{"n": n})
	}

	// The bans, to the creator only.
	const bannedQ = `query($n: Int, $after: String) { room(name: "lobby") { bannedConnection(first: $n, after: $after) {
		edges { cursor node { login } } pageInfo { hasNextPage hasPreviousPage endCursor } totalCount } } }`
	var noBans struct {
		Room struct{ BannedConnection *userConnection }
	}
	mustDo(t, alice, bannedQ, map[string]any{"n": 1}, &noBans)
	if c := noBans.Room.BannedConnection; c == nil || len(c.Edges) != 0 || c.TotalCount != 0 {
		t.Errorf("bannedConnection before any ban = %+v, want empty", c)
	}
	for _, l := range []string{"dave", "carol"} {
		mustDo(t, alice, `mutation($l: String!) { banUser(room: "lobby", login: $l) { name } }`, map[string]any{"l": l}, nil)
	}
	got := pageUsers(t, 1, 2, func(after any) userConnection {
		var out struct {
			Room struct{ BannedConnection userConnection }
		}
		mustDo(t, alice, bannedQ, map[string]any{"n": 1, "after": after}, &out)
		return out.Room.BannedConnection
	})
	if want := []string{"carol", "dave"}; !slices.Equal(got, want) {
		t.Errorf("bans one at a time = %v, want %v", got, want)
	}
	var hidden struct {
		Room struct{ BannedConnection *userConnection }
	}
	mustDo(t, others[1], bannedQ, map[string]any{"n": 5}, &hidden)
	if hidden.Room.BannedConnection != nil {
		t.Errorf("bannedConnection to a participant = %+v, want null", hidden.Room.BannedConnection)
	}

	for _, l := range []string{"carol", "bob"} {
		mustDo(t, alice, `mutation($l: String!) { blockUser(login: $l) { login } }`, map[string]any{"l": l}, nil)
	}
	const blockedQ = `query($n: Int, $after: String) { blockedUsersConnection(first: $n, after: $after) {
		edges { cursor node { login } } pageInfo { hasNextPage hasPreviousPage endCursor } totalCount } }`
	got = pageUsers(t, 1, 2, func(after any) userConnection {
		var out struct{ BlockedUsersConnection userConnection }
		mustDo(t, alice, blockedQ, map[string]any{"n": 1, "after": after}, &out)
		return out.BlockedUsersConnection
	})
	if want := []string{"bob", "carol"}; !slices.Equal(got, want) {
		t.Errorf("blocked users one at a time = %v, want %v", got, want)
	}
	var none struct{ BlockedUsersConnection userConnection }
	mustDo(t, others[1], blockedQ, map[string]any{"n": 5}, &none)
	if c := none.BlockedUsersConnection; len(c.Edges) != 0 || c.TotalCount != 0 || c.PageInfo.HasNextPage || c.PageInfo.EndCursor != nil {
		t.Errorf("blockedUsersConnection of one who blocked nobody = %+v, want empty", c)
	}
}

func TestMyRoomsConnection(t *testing.T) { forEachStore(t, testMyRoomsConnection) }

// testMyRoomsConnection pages the rooms and groups the caller takes part
// in, with their total, and not the rooms of others.
func testMyRoomsConnection(t *testing.T, cfg server.Config) {
	ts := startServer(t, cfg)
	alice, bob := ts.user(t, "alice"), ts.user(t, "bob")
	mustDo(t, bob, createRoom, map[string]any{"n": "attic"}, nil)
	mustDo(t, bob, createRoom, map[string]any{"n": "cellar"}, nil)
	mustDo(t, alice, joinRoom, map[string]any{"r": "cellar"}, nil)
	mustDo(t, alice, createRoom, map[string]any{"n": "lobby"}, nil)
	mustDo(t, alice, createKind, map[string]any{"n": "club", "k": "PRIVATE_GROUP"}, nil)
	const q = `query($n: Int, $after: String) { me { roomsConnection(first: $n, after: $after) {
		edges { cursor node { name kind } } pageInfo { hasNextPage hasPreviousPage endCursor } totalCount } } }`
	type page struct {
		Me struct {
			RoomsConnection struct {
				Edges []struct {
					Cursor string
					Node   struct{ Name, Kind string }
				}
				PageInfo struct {
					HasNextPage, HasPreviousPage bool
					EndCursor                    *string
				}
				TotalCount int
			}
		}
	}
	var names []string
	var after any
	for range 5 {
		var out page
		mustDo(t, alice, q, map[string]any{"n": 2, "after": after}, &out)
		conn := out.Me.RoomsConnection
		if conn.TotalCount != 3 || conn.PageInfo.HasPreviousPage != (after != nil) {
			t.Errorf("page after %v: totalCount %d, hasPreviousPage %v", after, conn.TotalCount, conn.PageInfo.HasPreviousPage)
		}
		for _, e := range conn.Edges {
			if e.Cursor != e.Node.Name {
				t.Errorf("the cursor of %q is %q", e.Node.Name, e.Cursor)
			}
			names = append(names, e.Node.Name+"/"+e.Node.Kind)
		}
		if !conn.PageInfo.HasNextPage {
			break
		}
		after = *conn.PageInfo.EndCursor
	}
	if want := []string{"cellar/PUBLIC", "club/PRIVATE_GROUP", "lobby/PUBLIC"}; !slices.Equal(names, want) {
		t.Errorf("alice's rooms two at a time = %v, want %v", names, want)
	}
	wantCode(t, alice, "BAD_USER_INPUT", q, map[string]any{"n": 101})
}
