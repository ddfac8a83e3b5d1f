package e2e

import (
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/killrchat/chatql/internal/chatclient"
	"github.com/killrchat/chatql/server"
)

// TestNodes: global ids (the schema's Node) round-trip through node(id:)
// for each kind, and node reads through the core's reader's view: what the
// caller may not read answers null, exactly as what does not exist, so an
// id reveals nothing. A message's global id is its id; its chatRoom is the
// Room object, its conversationId the string room gave (now deprecated).
// The node path of the readers' table (TestReaders) covers every message
// state and viewer.
func TestNodes(t *testing.T) { forEachStore(t, testNodes) }

func testNodes(t *testing.T, cfg server.Config) {
	ts := startServer(t, cfg)
	alice, bob := ts.user(t, "alice"), ts.user(t, "bob")
	ts.user(t, "carol")
	mustDo(t, alice, createRoom, map[string]any{"n": "plaza"}, nil)
	mustDo(t, alice, createKind, map[string]any{"n": "den", "k": "PRIVATE_GROUP"}, nil)
	type message struct {
		ID             string
		Room           string
		ConversationID string
		ChatRoom       *struct{ ID, Name string }
		Author         struct{ ID, Login string }
	}
	const fields = `id room conversationId chatRoom { id name } author { id login }`
	var inPlaza, inDen struct{ PostMessage message }
	mustDo(t, alice, `mutation($r: String!, $c: String!) { postMessage(room: $r, content: $c) { `+fields+` } }`, map[string]any{"r": "plaza", "c": "hello plaza"}, &inPlaza)
	mustDo(t, alice, `mutation($r: String!, $c: String!) { postMessage(room: $r, content: $c) { `+fields+` } }`, map[string]any{"r": "den", "c": "hello den"}, &inDen)
	var direct struct{ SendDirectMessage message }
	mustDo(t, alice, `mutation($to: String!, $c: String!) { sendDirectMessage(to: $to, content: $c) { `+fields+` } }`, map[string]any{"to": "carol", "c": "hi carol"}, &direct)

	var ids struct {
		Me    struct{ ID, Login string }
		Plaza struct{ ID string }
		Den   struct{ ID string }
	}
	mustDo(t, alice, `{ me { id login } plaza: room(name: "plaza") { id } den: room(name: "den") { id } }`, nil, &ids)
	aliceSummary := inPlaza.PostMessage.Author.ID

	t.Run("MessageRoom", func(t *testing.T) {
		for _, c := range []struct {
			name     string
			m        message
			conv     string
			chatRoom string // "" for none
		}{
			{"room", inPlaza.PostMessage, "plaza", "plaza"},
			{"group", inDen.PostMessage, "den", "den"},
			{"direct", direct.SendDirectMessage, "alice:carol", ""},
		} {
			m := c.m
			if m.ConversationID != c.conv || m.Room != c.conv {
				t.Errorf("%s: conversationId %q, room %q; want both %q", c.name, m.ConversationID, m.Room, c.conv)
			}
			switch {
			case c.chatRoom == "" && m.ChatRoom != nil:
				t.Errorf("%s: chatRoom %+v, want null", c.name, m.ChatRoom)
			case c.chatRoom != "" && (m.ChatRoom == nil || m.ChatRoom.Name != c.chatRoom):
				t.Errorf("%s: chatRoom %+v, want %s", c.name, m.ChatRoom, c.chatRoom)
			}
		}
		if got := inPlaza.PostMessage.ChatRoom; got == nil || got.ID != ids.Plaza.ID {
			t.Errorf("chatRoom's id %+v, want room(name:)'s %q", got, ids.Plaza.ID)
		}
	})

	t.Run("Events", func(t *testing.T) {
		// chatRoom is computed for each subscriber (@viewer).
		mustDo(t, bob, joinRoom, map[string]any{"r": "plaza"}, nil)
		sub := ts.live(t, bob, `subscription { roomEvents(room: "plaza") { kind message { conversationId chatRoom { name } } } }`, nil)
		mustDo(t, alice, postMessage, map[string]any{"r": "plaza", "c": "live"}, nil)
		var ev struct {
			RoomEvents struct {
				Kind    string
				Message struct {
					ConversationID string
					ChatRoom       *struct{ Name string }
				}
			}
		}
		nextData(t, sub, &ev)
		if m := ev.RoomEvents.Message; ev.RoomEvents.Kind != "MESSAGE_POSTED" || m.ConversationID != "plaza" || m.ChatRoom == nil || m.ChatRoom.Name != "plaza" {
			t.Errorf("event: got %+v, want MESSAGE_POSTED in plaza with its chatRoom", ev.RoomEvents)
		}
	})

	const nodeQ = `query($id: ID!) { v: node(id: $id) { __typename id ... on UserSummary { login } ... on User { login email } ... on Room { name } ... on Message { content chatRoom { name } } } }`
	type node struct {
		Typename string `json:"__typename"`
		ID       string
		Login    string
		Name     string
		Content  string
	}
	readNode := func(t *testing.T, c *chatclient.Client, id string) *node {
		t.Helper()
		var out struct{ V *node }
		mustDo(t, c, nodeQ, map[string]any{"id": id}, &out)
		return out.V
	}
	t.Run("RoundTrip", func(t *testing.T) {
		for _, c := range []struct {
			id, typename, key string
		}{
			{ids.Me.ID, "User", "alice"},
			{aliceSummary, "UserSummary", "alice"},
			{ids.Plaza.ID, "Room", "plaza"},
			{ids.Den.ID, "Room", "den"},
			{inDen.PostMessage.ID, "Message", "hello den"},
			{direct.SendDirectMessage.ID, "Message", "hi carol"},
		} {
			got := readNode(t, alice, c.id)
			if got == nil || got.Typename != c.typename || got.ID != c.id || got.Login+got.Name+got.Content != c.key {
				t.Errorf("node(%q): got %+v, want the %s %s with the same id", c.id, got, c.typename, c.key)
			}
		}
		if ids.Me.ID == aliceSummary {
			t.Errorf("the caller's User and their UserSummary share the id %q: a client's cache keyed by id would mix them", aliceSummary)
		}
	})
	t.Run("UnreadableIsAbsent", func(t *testing.T) {
		missing := func(kind, key string) string {
			return base64.StdEncoding.EncodeToString([]byte(kind + ":" + key))
		}
		for _, id := range []string{
			ids.Me.ID,                              // alice's own profile
			ids.Den.ID,                             // a group bob was never in
			inDen.PostMessage.ID,                   // its message
			direct.SendDirectMessage.ID,            // others' direct message
			missing("Room", "nowhere"),             // a room there is not
			missing("User", "nobody"),              // a user there is not
			missing("Profile", "alice"),            // another's profile
			"6ba7b810-9dad-11d1-80b4-00c04fd430c8", // a message there is not
		} {
			if got := readNode(t, bob, id); got != nil {
				t.Errorf("bob: node(%q) = %+v, want null", id, got)
			}
		}
		if got := readNode(t, bob, aliceSummary); got == nil || got.Login != "alice" {
			t.Errorf("bob: node(alice's summary) = %+v, want alice's public face", got)
		}
		if got := readNode(t, bob, ids.Plaza.ID); got == nil || got.Name != "plaza" {
			t.Errorf("bob: node(plaza) = %+v, want the public room", got)
		}
	})
	t.Run("ErrBadID", func(t *testing.T) {
		for _, id := range []string{"not an id", base64.StdEncoding.EncodeToString([]byte("Webhook:x")), base64.StdEncoding.EncodeToString([]byte("Room:"))} {
			wantCode(t, bob, "BAD_USER_INPUT", nodeQ, map[string]any{"id": id})
		}
	})
	t.Run("ErrUnauthenticated", func(t *testing.T) {
		wantCode(t, ts.Client, "UNAUTHENTICATED", nodeQ, map[string]any{"id": ids.Plaza.ID})
	})
	t.Run("Deprecations", func(t *testing.T) {
		var out struct {
			Type struct {
				Fields []struct {
					Name              string
					IsDeprecated      bool
					DeprecationReason *string
				}
			} `json:"__type"`
		}
		mustDo(t, bob, `{ __type(name: "Message") { fields(includeDeprecated: true) { name isDeprecated deprecationReason } } }`, nil, &out)
		found := false
		for _, f := range out.Type.Fields {
			if f.Name == "room" {
				found = true
				if !f.IsDeprecated || f.DeprecationReason == nil || *f.DeprecationReason == "" {
					t.Errorf("Message.room: deprecated %v, reason %v; want deprecated with a reason", f.IsDeprecated, f.DeprecationReason)
				}
			}
		}
		if !found {
			raw, _ := json.Marshal(out)
			t.Errorf("Message.room is gone (%s): old clients still select it", raw)
		}
	})
}
