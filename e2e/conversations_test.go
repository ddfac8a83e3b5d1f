package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/killrchat/chatql/internal/chatclient"
	"github.com/killrchat/chatql/server"
	"github.com/killrchat/chatql/store"
)

const (
	inboxQ    = `{ inbox { id kind unread readUpTo peer { login } lastMessage { id content } } }`
	markReadQ = `mutation($c: ID!, $up: ID!) { markRead(conversation: $c, upTo: $up) { id unread readUpTo } }`
	directQ   = `query($with: String!, $n: Int, $after: String) { directMessages(with: $with, first: $n, after: $after) { edges { node { id content author { login } } } pageInfo { hasNextPage endCursor } } }`
	inboxSub  = `subscription { inboxEvents { kind conversationId message { id content } conversation { unread } } }`
	hideQ     = `mutation($id: ID!) { hideMessage(id: $id) { id hidden content } }`
)

type inboxEntry struct {
	ID, Kind    string
	Unread      int
	ReadUpTo    *string
	Peer        *struct{ Login string }
	LastMessage *struct{ ID, Content string }
}

func inbox(t *testing.T, c *chatclient.Client) map[string]inboxEntry {
	t.Helper()
	var out struct{ Inbox []inboxEntry }
	mustDo(t, c, inboxQ, nil, &out)
	m := map[string]inboxEntry{}
	for _, e := range out.Inbox {
		m[e.ID] = e
	}
	return m
}

type inboxEvent struct {
	Kind, ConversationID string
	Message              *struct{ ID, Content string }
	Conversation         *struct{ Unread int }
}

func nextInboxEvent(t *testing.T, sub *chatclient.Subscription) inboxEvent {
	t.Helper()
	resp, err := sub.Next(testContext(t))
	if err != nil {
		t.Fatalf("next inbox event: %v", err)
	}
	var out struct{ InboxEvents inboxEvent }
	if err := json.Unmarshal(resp.Data, &out); err != nil {
		t.Fatal(err)
	}
	return out.InboxEvents
}

// subscribeInbox opens an inboxEvents subscription and waits until it is live.
func (ts *testServer) subscribeInbox(t *testing.T, c *chatclient.Client) *chatclient.Subscription {
	t.Helper()
	started := ts.Streams().Started()
	sub, err := c.Subscribe(testContext(t), chatclient.GraphQLTransportWS, inboxSub, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Close() })
	waitFor(t, func() bool { return ts.Streams().Started() > started })
	return sub
}

func TestDirectMessages(t *testing.T) { forEachStore(t, testDirectMessages) }

func testDirectMessages(t *testing.T, cfg server.Config) {
	ts := startServer(t, cfg)
	alice, bob, carol := ts.user(t, "alice"), ts.user(t, "bob"), ts.user(t, "carol")
	bobEvents := ts.subscribeInbox(t, bob)
	aliceEvents := ts.subscribeInbox(t, alice)

	var sent []string
	for i := range 3 {
		var out struct{ SendDirectMessage struct{ ID, Room string } }
		mustDo(t, alice, sendDirect, map[string]any{"to": "bob", "c": fmt.Sprintf("dm%d", i)}, &out)
		if out.SendDirectMessage.Room != "alice:bob" {
			t.Fatalf("conversation id: got %q, want alice:bob", out.SendDirectMessage.Room)
		}
		sent = append(sent, out.SendDirectMessage.ID)
	}
	t.Run("LiveToBothSides", func(t *testing.T) {
		for _, sub := range []*chatclient.Subscription{bobEvents, aliceEvents} {
			for i := range 3 {
				ev := nextInboxEvent(t, sub)
				if ev.Kind != "DIRECT_MESSAGE" || ev.ConversationID != "alice:bob" || ev.Message == nil || ev.Message.Content != fmt.Sprintf("dm%d", i) {
					t.Fatalf("event %d: got %+v", i, ev)
				}
			}
		}
	})
	t.Run("Inbox", func(t *testing.T) {
		got := inbox(t, bob)["alice:bob"]
		if got.Kind != "DIRECT" || got.Unread != 3 || got.ReadUpTo != nil || got.Peer == nil || got.Peer.Login != "alice" || got.LastMessage == nil || got.LastMessage.Content != "dm2" {
			t.Fatalf("bob's inbox entry: %+v", got)
		}
		// Sending marks the conversation read for its sender.
		if got := inbox(t, alice)["alice:bob"]; got.Unread != 0 || got.ReadUpTo == nil || *got.ReadUpTo != sent[2] || got.Peer.Login != "bob" {
			t.Fatalf("alice's inbox entry: %+v, want read up to %s", got, sent[2])
		}
	})
	t.Run("History", func(t *testing.T) {
		var page struct {
			DirectMessages struct {
				Edges []struct{ Node struct{ Content string } }
			}
		}
		mustDo(t, bob, directQ, map[string]any{"with": "alice", "n": 10}, &page)
		var got []string
		for _, e := range page.DirectMessages.Edges {
			got = append(got, e.Node.Content)
		}
		if strings.Join(got, ",") != "dm2,dm1,dm0" {
			t.Fatalf("history: got %v", got)
		}
	})
	t.Run("MarkRead", func(t *testing.T) {
		var out struct {
			MarkRead struct {
				Unread   int
				ReadUpTo string
			}
		}
		mustDo(t, bob, markReadQ, map[string]any{"c": "alice:bob", "up": sent[1]}, &out)
		if out.MarkRead.Unread != 1 || out.MarkRead.ReadUpTo != sent[1] {
			t.Fatalf("after reading 2 of 3: %+v, want 1 unread, read up to %s", out.MarkRead, sent[1])
		}
		if ev := nextInboxEvent(t, bobEvents); ev.Kind != "UNREAD_CHANGED" || ev.Conversation == nil || ev.Conversation.Unread != 1 {
			t.Fatalf("unread event: %+v", ev)
		}
		// A mark only moves forward.
		mustDo(t, bob, markReadQ, map[string]any{"c": "alice:bob", "up": sent[0]}, &out)
		if out.MarkRead.Unread != 1 || out.MarkRead.ReadUpTo != sent[1] {
			t.Fatalf("after marking an older message read: %+v, want 1 unread, read up to %s", out.MarkRead, sent[1])
		}
		if ev := nextInboxEvent(t, bobEvents); ev.Kind != "UNREAD_CHANGED" || ev.Conversation == nil || ev.Conversation.Unread != 1 {
			t.Fatalf("unread event: %+v", ev)
		}
	})
	t.Run("Errors", func(t *testing.T) {
		wantCode(t, alice, "BAD_USER_INPUT", sendDirect, map[string]any{"to": "alice", "c": "me"})
		wantCode(t, alice, "NOT_FOUND", sendDirect, map[string]any{"to": "nobody", "c": "hi"})
		wantCode(t, alice, "BAD_USER_INPUT", sendDirect, map[string]any{"to": "bob", "c": " "})
		wantNull(t, carol, `query($id: ID!) { v: message(id: $id) { id } }`, map[string]any{"id": sent[0]})
		wantCode(t, carol, "NOT_FOUND", markReadQ, map[string]any{"c": "alice:bob", "up": sent[0]})
		var out struct{ Message struct{ Content string } }
		mustDo(t, bob, `query($id: ID!) { message(id: $id) { content } }`, map[string]any{"id": sent[0]}, &out)
		if out.Message.Content != "dm0" {
			t.Fatalf("message by id: %+v", out)
		}
	})
}

// TestSendsRacingMarkReads sends and marks read concurrently: no update is
// lost, so at the end the newest message is the last one on both sides and
// reading up to it leaves nothing unread.
func TestSendsRacingMarkReads(t *testing.T) { forEachStore(t, testSendsRacingMarkReads) }

func testSendsRacingMarkReads(t *testing.T, cfg server.Config) {
	ts := startServer(t, cfg)
	alice, bob := ts.user(t, "alice"), ts.user(t, "bob")
	var mu sync.Mutex
	var acked []string
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10 {
				var out struct{ SendDirectMessage struct{ ID string } }
				if err := alice.Do(testContext(t), sendDirect, map[string]any{"to": "bob", "c": fmt.Sprintf("w%d-%d", w, i)}, &out); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				acked = append(acked, out.SendDirectMessage.ID)
				mu.Unlock()
			}
		}()
	}
	wg.Add(1)
	go func() { // bob reads along while alice writes
		defer wg.Done()
		for range 20 {
			mu.Lock()
			var upTo string
			if len(acked) > 0 {
				upTo = acked[len(acked)/2]
			}
			mu.Unlock()
			if upTo != "" {
				if err := bob.Do(testContext(t), markReadQ, map[string]any{"c": "alice:bob", "up": upTo}, nil); err != nil {
					t.Error(err)
					return
				}
			}
		}
	}()
	wg.Wait()
	newest := slices.MaxFunc(acked, compareIDs)
	for name, c := range map[string]*chatclient.Client{"alice": alice, "bob": bob} {
		if got := inbox(t, c)["alice:bob"]; got.LastMessage == nil || got.LastMessage.ID != newest {
			t.Errorf("%s's last message: got %+v, want %s", name, got.LastMessage, newest)
		}
	}
	if got := inbox(t, bob)["alice:bob"].Unread; got < 1 || got > 40 {
		t.Errorf("bob's unread while racing: %d, want 1..40", got)
	}
	var out struct{ MarkRead struct{ Unread int } }
	mustDo(t, bob, markReadQ, map[string]any{"c": "alice:bob", "up": newest}, &out)
	if out.MarkRead.Unread != 0 {
		t.Fatalf("unread after reading everything: got %d", out.MarkRead.Unread)
	}
}

// compareIDs orders message ids by time, via their canonical form.
func compareIDs(a, b string) int {
	return mustParseID(a).Compare(mustParseID(b))
}

func TestPrivateGroups(t *testing.T) { forEachStore(t, testPrivateGroups) }

func testPrivateGroups(t *testing.T, cfg server.Config) {
	ts := startServer(t, cfg)
	alice, bob, carol := ts.user(t, "alice"), ts.user(t, "bob"), ts.user(t, "carol")
	var created struct{ CreateRoom struct{ Kind string } }
	mustDo(t, alice, createKind, map[string]any{"n": "secret", "k": "PRIVATE_GROUP"}, &created)
	if created.CreateRoom.Kind != "PRIVATE_GROUP" {
		t.Fatalf("kind: got %q", created.CreateRoom.Kind)
	}
	post := func(c *chatclient.Client, content string) {
		t.Helper()
		mustDo(t, c, postMessage, map[string]any{"r": "secret", "c": content}, nil)
	}
	read := func(c *chatclient.Client) []string {
		t.Helper()
		var page messagePage
		mustDo(t, c, messagesQ, map[string]any{"r": "secret", "n": 50}, &page)
		var got []string
		for _, e := range page.Messages.Edges {
			if !e.Node.System {
				got = append(got, e.Node.Content)
			}
		}
		return got
	}

	t.Run("InvisibleToOthers", func(t *testing.T) {
		wantNull(t, bob, `{ v: room(name: "secret") { name } }`, nil)
		wantCode(t, bob, "NOT_FOUND", joinRoom, map[string]any{"r": "secret"})
		wantCode(t, bob, "FORBIDDEN", addMember, map[string]any{"g": "secret", "l": "bob"})
		var rooms struct {
			Rooms struct {
				Edges []struct{ Node struct{ Name string } }
			}
		}
		mustDo(t, bob, `{ rooms { edges { node { name } } } }`, nil, &rooms)
		if len(rooms.Rooms.Edges) != 0 {
			t.Fatalf("bob sees groups he is not in: %+v", rooms)
		}
	})

	post(alice, "before bob")
	bobEvents := ts.subscribeInbox(t, bob)
	mustDo(t, alice, addMember, map[string]any{"g": "secret", "l": "bob"}, nil)
	if ev := nextInboxEvent(t, bobEvents); ev.Kind != "ADDED_TO_GROUP" || ev.ConversationID != "secret" {
		t.Fatalf("bob's event: %+v", ev)
	}
	post(alice, "while bob is in")
	if ev := nextInboxEvent(t, bobEvents); ev.Kind != "UNREAD_CHANGED" || ev.Conversation == nil || ev.Conversation.Unread < 1 {
		t.Fatalf("bob's unread event: %+v", ev)
	}
	if got := inbox(t, bob)["secret"]; got.Kind != "GROUP" || got.Unread < 1 || got.LastMessage == nil || got.LastMessage.Content != "while bob is in" {
		t.Fatalf("bob's inbox entry: %+v", got)
	}
	mustDo(t, bob, leaveRoom, map[string]any{"r": "secret"}, nil)
	post(alice, "after bob left")
	if got := strings.Join(read(bob), "|"); got != "while bob is in" {
		t.Fatalf("bob after leaving reads %q, want only his window", got)
	}
	wantCode(t, bob, "FORBIDDEN", postMessage, map[string]any{"r": "secret", "c": "let me back"})
	mustDo(t, alice, addMember, map[string]any{"g": "secret", "l": "bob"}, nil)
	post(bob, "bob is back")
	if got := strings.Join(read(bob), "|"); got != "bob is back|while bob is in" {
		t.Fatalf("bob with two windows reads %q", got)
	}
	if got := strings.Join(read(alice), "|"); got != "bob is back|after bob left|while bob is in|before bob" {
		t.Fatalf("alice reads %q", got)
	}
	wantCode(t, carol, "NOT_FOUND", messagesQ, map[string]any{"r": "secret"})
	wantCode(t, alice, "BAD_USER_INPUT", addMember, map[string]any{"g": "secret", "l": "Bad Login"})
}

func TestHiddenMessages(t *testing.T) { forEachStore(t, testHiddenMessages) }

func testHiddenMessages(t *testing.T, cfg server.Config) {
	ts := startServer(t, cfg)
	alice, bob, carol := ts.user(t, "alice"), ts.user(t, "bob"), ts.user(t, "carol")
	mustDo(t, alice, createRoom, map[string]any{"n": "hall"}, nil)
	for _, c := range []*chatclient.Client{bob, carol} {
		mustDo(t, c, joinRoom, map[string]any{"r": "hall"}, nil)
	}
	var posted struct{ PostMessage struct{ ID string } }
	mustDo(t, bob, postMessage, map[string]any{"r": "hall", "c": "oops"}, &posted)
	id := posted.PostMessage.ID
	sub := ts.subscribe(t, carol, chatclient.GraphQLTransportWS, "hall", nil)

	wantCode(t, carol, "FORBIDDEN", hideQ, map[string]any{"id": id})
	mustDo(t, alice, hideQ, map[string]any{"id": id}, nil) // the room's creator
	if ev := nextEvent(t, sub); ev.Kind != "MESSAGE_HIDDEN" || ev.Message == nil || ev.Message.ID != id || ev.Message.Content != "" {
		t.Fatalf("hidden event: %+v", ev)
	}
	var forCarol struct {
		Message struct {
			Hidden  bool
			Content string
		}
	}
	mustDo(t, carol, `query($id: ID!) { message(id: $id) { hidden content } }`, map[string]any{"id": id}, &forCarol)
	if !forCarol.Message.Hidden || forCarol.Message.Content != "" {
		t.Fatalf("carol sees %+v", forCarol.Message)
	}
	var mine struct {
		MyMessages struct {
			Edges []struct {
				Node struct {
					Hidden  bool
					Content string
				}
			}
		}
	}
	mustDo(t, bob, `{ myMessages(first: 10) { edges { node { hidden content } } } }`, nil, &mine)
	if len(mine.MyMessages.Edges) == 0 || !mine.MyMessages.Edges[0].Node.Hidden || mine.MyMessages.Edges[0].Node.Content != "oops" {
		t.Fatalf("bob's own messages: %+v", mine)
	}
}

func mustParseID(s string) store.MessageID {
	id, err := store.ParseMessageID(s)
	if err != nil {
		panic(err)
	}
	return id
}
