package e2e

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/killrchat/chatql/internal/chatclient"
	"github.com/killrchat/chatql/server"
	"github.com/killrchat/chatql/store"
)

const conversationsQ = `query($n: Int, $after: String) { conversations(first: $n, after: $after) {
	edges { cursor node { id kind unread lastMessage { content } } }
	pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }`

type conversationsPage struct {
	Conversations struct {
		Edges []struct {
			Cursor string
			Node   struct {
				ID, Kind    string
				Unread      int
				LastMessage *struct{ Content string }
			}
		}
		PageInfo struct {
			HasNextPage, HasPreviousPage bool
			StartCursor, EndCursor       *string
		}
	}
}

// allConversations pages through c's conversations n at a time, checking
// each page's pageInfo, and returns the ids in order.
func allConversations(t *testing.T, c *chatclient.Client, n int) []string {
	t.Helper()
	var ids []string
	var after any
	for range 50 {
		var out conversationsPage
		mustDo(t, c, conversationsQ, map[string]any{"n": n, "after": after}, &out)
		conn := out.Conversations
		if len(conn.Edges) > n {
			t.Fatalf("conversations(first: %d) returned %d edges", n, len(conn.Edges))
		}
		if conn.PageInfo.HasPreviousPage != (after != nil) {
			t.Errorf("hasPreviousPage = %v after %v", conn.PageInfo.HasPreviousPage, after)
		}
		for _, e := range conn.Edges {
			ids = append(ids, e.Node.ID)
		}
		if len(conn.Edges) > 0 {
			if *conn.PageInfo.StartCursor != conn.Edges[0].Cursor || *conn.PageInfo.EndCursor != conn.Edges[len(conn.Edges)-1].Cursor {
				t.Errorf("pageInfo's cursors %v/%v are not the edges'", *conn.PageInfo.StartCursor, *conn.PageInfo.EndCursor)
			}
		}
		if !conn.PageInfo.HasNextPage {
			return ids
		}
		if len(conn.Edges) != n {
			t.Fatalf("a page of %d edges (first: %d) says more follow", len(conn.Edges), n)
		}
		after = *conn.PageInfo.EndCursor
	}
	t.Fatal("conversations never ended")
	return nil
}

func inboxIDs(t *testing.T, c *chatclient.Client) []string {
	t.Helper()
	var out struct{ Inbox []struct{ ID string } }
	mustDo(t, c, `{ inbox { id } }`, nil, &out)
	var ids []string
	for _, e := range out.Inbox {
		ids = append(ids, e.ID)
	}
	return ids
}

func TestConversationsPaged(t *testing.T) { forEachStore(t, testConversationsPaged) }

// testConversationsPaged: the inbox a page at a time lists every
// conversation once, in the order the whole inbox has, and follows new
// activity, leaves and bad arguments.
func testConversationsPaged(t *testing.T, cfg server.Config) {
	ts := startServer(t, cfg)
	alice, bob := ts.user(t, "alice"), ts.user(t, "bob")
	mustDo(t, alice, createRoom, map[string]any{"n": "lobby"}, nil)
	mustDo(t, bob, joinRoom, map[string]any{"r": "lobby"}, nil)
	mustDo(t, alice, createKind, map[string]any{"n": "club", "k": "PRIVATE_GROUP"}, nil)
	mustDo(t, alice, addMember, map[string]any{"g": "club", "l": "bob"}, nil)
	for i := range 5 {
		peer := fmt.Sprintf("peer%d", i)
		ts.user(t, peer)
		mustDo(t, alice, sendDirect, map[string]any{"to": peer, "c": "hi " + peer}, nil)
	}
	mustDo(t, bob, postMessage, map[string]any{"r": "lobby", "c": "hello lobby"}, nil)
	mustDo(t, bob, sendDirect, map[string]any{"to": "alice", "c": "hi alice"}, nil)
	mustDo(t, bob, `mutation { postMessage(room: "club", content: "hello club") { id } }`, nil, nil)

	want := inboxIDs(t, alice)
	if len(want) != 8 {
		t.Fatalf("inbox = %v, want 8 conversations", want)
	}
	for _, n := range []int{1, 3, 8, 20} {
		if got := allConversations(t, alice, n); !slices.Equal(got, want) {
			t.Errorf("conversations %d at a time = %v, want the inbox's order %v", n, got, want)
		}
	}
	var first conversationsPage
	mustDo(t, alice, conversationsQ, map[string]any{"n": 2}, &first)
	if e := first.Conversations.Edges; len(e) != 2 || e[0].Node.ID != "club" || e[0].Node.Kind != "GROUP" || e[0].Node.Unread != 1 || e[1].Node.ID != "alice:bob" || e[1].Node.LastMessage.Content != "hi alice" {
		t.Errorf("the first page = %+v, want club (1 unread) then alice:bob", e)
	}

	// A message moves its conversation first; a room left is gone.
	mustDo(t, alice, sendDirect, map[string]any{"to": "peer0", "c": "again"}, nil)
	mustDo(t, alice, leaveRoom, map[string]any{"r": "lobby"}, nil)
	want = inboxIDs(t, alice)
	if want[0] != "alice:peer0" || slices.Contains(want, "lobby") {
		t.Fatalf("inbox after a message and a leave = %v", want)
	}
	if got := allConversations(t, alice, 3); !slices.Equal(got, want) {
		t.Errorf("conversations after a message and a leave = %v, want %v", got, want)
	}

	for _, vars := range []map[string]any{{"n": 0}, {"n": 51}, {"n": 5, "after": "not a cursor"}, {"n": 5, "after": "bG9iYnk"}} {
		wantCode(t, alice, "BAD_USER_INPUT", conversationsQ, vars)
	}
}

func TestConversationsFilledIn(t *testing.T) { forEachStore(t, testConversationsFilledIn) }

// testConversationsFilledIn: an inbox whose order lacks its conversations,
// as one from before the order does, is filled in by its first page.
func testConversationsFilledIn(t *testing.T, cfg server.Config) {
	ts := startServer(t, cfg)
	alice := ts.user(t, "alice")
	ts.user(t, "bob")
	mustDo(t, alice, createRoom, map[string]any{"n": "lobby"}, nil)
	mustDo(t, alice, postMessage, map[string]any{"r": "lobby", "c": "first"}, nil)
	var dm struct{ SendDirectMessage struct{ ID string } }
	mustDo(t, alice, sendDirect, map[string]any{"to": "bob", "c": "then"}, &dm)
	// A room's creation time is kept to the millisecond: the group is made
	// in a later one than the message, so that it is the newer activity.
	sent, err := store.ParseMessageID(dm.SendDirectMessage.ID)
	if err != nil {
		t.Fatal(err)
	}
	for !time.Now().Truncate(time.Millisecond).After(sent.Time()) {
		runtime.Gosched()
	}
	mustDo(t, alice, createKind, map[string]any{"n": "quiet", "k": "PRIVATE_GROUP"}, nil)

	// What an older version left: no positions at all.
	ctx, s := testContext(t), ts.Store()
	positions, err := s.InboxPage(ctx, "alice", store.InboxPosition{}, 10)
	if err != nil || len(positions) != 3 {
		t.Fatalf("InboxPage = %v, %v, want 3 positions", positions, err)
	}
	forgetInboxOrders(t, cfg, s, "alice", positions)
	if positions, err := s.InboxPage(ctx, "alice", store.InboxPosition{}, 10); err != nil || len(positions) != 0 {
		t.Fatalf("InboxPage after forgetting = %v, %v, want none", positions, err)
	}

	// The group without messages is the newest activity (its creation),
	// which the whole inbox lists last.
	want := []string{"quiet", "alice:bob", "lobby"}
	if got := inboxIDs(t, alice); !slices.Equal(got, []string{"alice:bob", "lobby", "quiet"}) {
		t.Fatalf("inbox = %v", got)
	}
	if got := allConversations(t, alice, 2); !slices.Equal(got, want) {
		t.Errorf("conversations of an inbox from before the order = %v, want %v", got, want)
	}
	if ordered, err := s.InboxOrdered(ctx, "alice"); err != nil || !ordered {
		t.Errorf("InboxOrdered after the first page = %v, %v, want true", ordered, err)
	}
}

// forgetInboxOrders makes the store hold no inbox order, as one written
// by a version before it: Cassandra's table is truncated (a delete's
// tombstones would also shadow the backfill's writes of the same
// positions, at the same timestamps), the embedded store's positions of
// login are dropped.
func forgetInboxOrders(t *testing.T, cfg server.Config, s store.Store, login string, positions []store.InboxPosition) {
	t.Helper()
	if cfg.Store != "cassandra" {
		if err := s.DropInboxPositions(testContext(t), login, positions); err != nil {
			t.Fatal(err)
		}
		return
	}
	cluster := gocql.NewCluster(cfg.Cassandra.Hosts...)
	cluster.Timeout = 30 * time.Second
	session, err := cluster.CreateSession()
	if err != nil {
		t.Fatalf("connect to cassandra: %v", err)
	}
	defer session.Close()
	if err := session.Query("TRUNCATE " + cfg.Cassandra.Keyspace + ".inbox_order").Exec(); err != nil {
		t.Fatalf("truncate inbox_order: %v", err)
	}
}
