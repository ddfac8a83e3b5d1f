package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/killrchat/chatql/internal/chatclient"
	"github.com/killrchat/chatql/server"
)

// The people features of issue 14, end to end: typing, presence.

const (
	typingQ     = `mutation($c: ID!, $on: Boolean) { typing(conversation: $c, active: $on) }`
	typingRoom  = `subscription($r: String!, $after: String) { roomEvents(room: $r, after: $after) { kind cursor user { login } message { content } } }`
	typingInbox = `subscription($after: String) { inboxEvents(after: $after) { kind conversationId cursor user { login } message { content } } }`
)

// peopleEvent is a room or inbox event as the people tests read it.
type peopleEvent struct {
	Kind, ConversationID string
	Cursor               *string
	User                 struct{ Login string }
	Message              *struct{ Content string }
}

func nextPeopleEvent(t *testing.T, sub *chatclient.Subscription) peopleEvent {
	t.Helper()
	return nextOf[peopleEvent](t, sub)
}

func wantTyping(t *testing.T, sub *chatclient.Subscription, kind, login string) {
	t.Helper()
	ev := nextPeopleEvent(t, sub)
	if ev.Kind != kind || ev.User.Login != login || ev.Cursor != nil || ev.Message != nil {
		t.Fatalf("event = %+v, want %s by %s with no cursor and no message", ev, kind, login)
	}
}

func TestTyping(t *testing.T) { forEachStore(t, testTyping) }

// testTyping: a room's and a direct conversation's typing reach their
// subscribers live, end on request or with a post, are never replayed, and
// refuse who takes no part.
func testTyping(t *testing.T, cfg server.Config) {
	ts, alice, bob, carol := teaParty(t, cfg)
	var posted struct{ PostMessage struct{ ID string } }
	mustDo(t, alice, postMessage, map[string]any{"r": "tea-party", "c": "Tea?"}, &posted)

	t.Run("Room", func(t *testing.T) {
		live := ts.live(t, alice, typingRoom, map[string]any{"r": "tea-party"})
		var out struct{ Typing bool }
		mustDo(t, bob, typingQ, map[string]any{"c": "tea-party"}, &out)
		if !out.Typing {
			t.Fatal("typing returned false for a start")
		}
		wantTyping(t, live, "TYPING_STARTED", "bob")
		mustDo(t, bob, typingQ, map[string]any{"c": "tea-party"}, nil) // a renewal: nothing told
		mustDo(t, bob, typingQ, map[string]any{"c": "tea-party", "on": false}, &out)
		if out.Typing {
			t.Fatal("typing returned true for a stop")
		}
		wantTyping(t, live, "TYPING_STOPPED", "bob")
		// A post ends its author's typing.
		mustDo(t, bob, typingQ, map[string]any{"c": "tea-party"}, nil)
		wantTyping(t, live, "TYPING_STARTED", "bob")
		mustDo(t, bob, postMessage, map[string]any{"r": "tea-party", "c": "Yes please"}, nil)
		wantTyping(t, live, "TYPING_STOPPED", "bob")
		if ev := nextPeopleEvent(t, live); ev.Kind != "MESSAGE_POSTED" || ev.Message == nil || ev.Message.Content != "Yes please" {
			t.Fatalf("after the stop: %+v, want bob's post", ev)
		}
		// Replaying from before all that: the post, and no typing.
		replay := ts.live(t, alice, typingRoom, map[string]any{"r": "tea-party", "after": posted.PostMessage.ID})
		if ev := nextPeopleEvent(t, replay); ev.Kind != "MESSAGE_POSTED" || ev.Message.Content != "Yes please" {
			t.Fatalf("replay: %+v, want bob's post and no typing", ev)
		}
	})

	t.Run("Direct", func(t *testing.T) {
		mustDo(t, alice, sendDirect, map[string]any{"to": "bob", "c": "psst"}, nil)
		bobInbox := ts.live(t, bob, typingInbox, nil)
		mustDo(t, alice, typingQ, map[string]any{"c": "alice:bob"}, nil)
		ev := nextPeopleEvent(t, bobInbox)
		if ev.Kind != "TYPING_STARTED" || ev.ConversationID != "alice:bob" || ev.User.Login != "alice" || ev.Cursor != nil {
			t.Fatalf("bob's inbox: %+v, want alice typing in alice:bob, no cursor", ev)
		}
		mustDo(t, alice, sendDirect, map[string]any{"to": "bob", "c": "are you there?"}, nil)
		wantTyping(t, bobInbox, "TYPING_STOPPED", "alice")
		if ev := nextPeopleEvent(t, bobInbox); ev.Kind != "DIRECT_MESSAGE" || ev.Cursor == nil || ev.User.Login != "alice" {
			t.Fatalf("bob's inbox after the stop: %+v, want the direct message with its cursor", ev)
		}
		// Typing to someone never written to is allowed: the conversation
		// starts with its first message.
		mustDo(t, carol, typingQ, map[string]any{"c": "alice:carol"}, nil)
	})

	t.Run("Refused", func(t *testing.T) {
		wantCode(t, carol, "FORBIDDEN", typingQ, map[string]any{"c": "tea-party"})
		wantCode(t, carol, "NOT_FOUND", typingQ, map[string]any{"c": "no-such-room"})
		wantCode(t, carol, "NOT_FOUND", typingQ, map[string]any{"c": "alice:bob"})
		wantCode(t, carol, "NOT_FOUND", typingQ, map[string]any{"c": "carol:nobody"})
		wantCode(t, carol, "NOT_FOUND", typingQ, map[string]any{"c": "carol:carol"})
		wantCode(t, carol, "NOT_FOUND", typingQ, map[string]any{"c": "bob:alice:carol"})
		wantCode(t, ts.Client, "UNAUTHENTICATED", typingQ, map[string]any{"c": "tea-party"})
	})
}

// Typing on one instance reaches the subscribers of another, in a room and
// in a direct conversation.
func TestClusterTyping(t *testing.T) {
	cl, alice, bob := acrossCluster(t, across{})
	room := cl.instances[1].live(t, bob, typingRoom, map[string]any{"r": "across"})
	inbox := cl.instances[1].live(t, bob, typingInbox, nil)

	mustDo(t, alice, typingQ, map[string]any{"c": "across"}, nil)
	for ev := nextPeopleEvent(t, room); ev.Kind != "TYPING_STARTED"; ev = nextPeopleEvent(t, room) {
		if ev.Kind != "PARTICIPANT_JOINED" { // bob's join may come late
			t.Fatalf("room event on instance B: %+v, want alice typing", ev)
		}
	}
	mustDo(t, alice, typingQ, map[string]any{"c": "across", "on": false}, nil)
	wantTyping(t, room, "TYPING_STOPPED", "alice")

	mustDo(t, alice, typingQ, map[string]any{"c": "alice:bob"}, nil)
	wantTyping(t, inbox, "TYPING_STARTED", "alice")
	mustDo(t, alice, typingQ, map[string]any{"c": "alice:bob", "on": false}, nil)
	wantTyping(t, inbox, "TYPING_STOPPED", "alice")
}

const (
	presenceQ    = `query($l: [String!]!) { presence(logins: $l) { login online } }`
	roomOnlineQ  = `query($r: String!) { room(name: $r) { online { login } } }`
	peerOnlineQ  = `query { inbox { id peerOnline } }`
	presenceRoom = `subscription($r: String!) { roomEvents(room: $r, presence: true) { kind cursor online user { login } } }`
	presenceInbx = `subscription { inboxEvents(presence: true) { kind conversationId cursor online user { login } } }`
)

type presenceEvent struct {
	Kind, ConversationID string
	Cursor               *string
	Online               *bool
	User                 struct{ Login string }
}

// nextPresence reads sub's events up to the next PRESENCE_CHANGED of login.
func nextPresence(t *testing.T, sub *chatclient.Subscription, login string) presenceEvent {
	t.Helper()
	for {
		ev := nextOf[presenceEvent](t, sub)
		if ev.Kind == "PRESENCE_CHANGED" && ev.User.Login == login {
			if ev.Cursor != nil || ev.Online == nil {
				t.Fatalf("presence event %+v: want no cursor and a state", ev)
			}
			return ev
		}
	}
}

// presenceOf asks c about logins and returns each state: "online",
// "offline" or "hidden".
func presenceOf(t *testing.T, c *chatclient.Client, logins ...string) map[string]string {
	t.Helper()
	var out struct {
		Presence []struct {
			Login  string
			Online *bool
		}
	}
	mustDo(t, c, presenceQ, map[string]any{"l": logins}, &out)
	got := map[string]string{}
	for _, p := range out.Presence {
		switch {
		case p.Online == nil:
			got[p.Login] = "hidden"
		case *p.Online:
			got[p.Login] = "online"
		default:
			got[p.Login] = "offline"
		}
	}
	return got
}

func onlineIn(t *testing.T, c *chatclient.Client, room string) []string {
	t.Helper()
	var out struct {
		Room struct{ Online *[]struct{ Login string } }
	}
	mustDo(t, c, roomOnlineQ, map[string]any{"r": room}, &out)
	if out.Room.Online == nil {
		return nil
	}
	logins := []string{}
	for _, u := range *out.Room.Online {
		logins = append(logins, u.Login)
	}
	return logins
}

func TestPresence(t *testing.T) { forEachStore(t, testPresence) }

// testPresence: a user is online while a websocket of theirs is open (and
// the grace after), as the people who share a room or a conversation with
// them see it, live and when they ask; strangers see nothing.
func testPresence(t *testing.T, cfg server.Config) {
	cfg.PresenceGrace = 50 * time.Millisecond
	ts, alice, bob, carol := teaParty(t, cfg)
	mustDo(t, alice, sendDirect, map[string]any{"to": "bob", "c": "hello"}, nil)

	if got := presenceOf(t, bob, "alice", "carol", "nobody"); got["alice"] != "offline" || got["carol"] != "hidden" || got["nobody"] != "hidden" {
		t.Fatalf("bob asks before anyone connects: %v", got)
	}
	bobRoom := ts.live(t, bob, presenceRoom, map[string]any{"r": "tea-party"})
	bobInbox := ts.live(t, bob, presenceInbx, nil)
	bobPlain := ts.live(t, bob, typingRoom, map[string]any{"r": "tea-party"}) // no presence asked
	waitFor(t, func() bool { return presenceOf(t, bob, "bob")["bob"] == "online" })

	aliceSocket := ts.live(t, alice, typingInbox, nil)
	if ev := nextPresence(t, bobRoom, "alice"); !*ev.Online {
		t.Fatalf("bob's room: %+v, want alice online", ev)
	}
	if ev := nextPresence(t, bobInbox, "alice"); !*ev.Online || ev.ConversationID != "alice:bob" {
		t.Fatalf("bob's inbox: %+v, want alice online in alice:bob", ev)
	}
	mustDo(t, alice, postMessage, map[string]any{"r": "tea-party", "c": "I'm here"}, nil)
	if ev := nextPeopleEvent(t, bobPlain); ev.Kind != "MESSAGE_POSTED" {
		t.Fatalf("a subscription without presence: %+v, want alice's post and no presence", ev)
	}
	if got := presenceOf(t, bob, "alice", "bob", "carol"); got["alice"] != "online" || got["bob"] != "online" || got["carol"] != "hidden" {
		t.Fatalf("bob asks while alice is connected: %v", got)
	}
	if got := presenceOf(t, carol, "alice", "carol"); got["alice"] != "hidden" || got["carol"] != "offline" {
		t.Fatalf("carol, a stranger, asks: %v", got)
	}
	if got := onlineIn(t, bob, "tea-party"); strings.Join(got, ",") != "alice,bob" {
		t.Fatalf("tea-party online, as bob sees it: %v", got)
	}
	if got := onlineIn(t, carol, "tea-party"); got != nil {
		t.Fatalf("tea-party online, as carol (not in it) sees it: %v, want null", got)
	}
	var inbox struct {
		Inbox []struct {
			ID         string
			PeerOnline *bool
		}
	}
	mustDo(t, bob, peerOnlineQ, nil, &inbox)
	for _, c := range inbox.Inbox {
		if online := c.PeerOnline != nil && *c.PeerOnline; (c.ID == "alice:bob") != online || c.ID != "alice:bob" && c.PeerOnline != nil {
			t.Fatalf("bob's inbox entry %s: peerOnline %v", c.ID, c.PeerOnline)
		}
	}

	// Alice's last connection closes: offline after the grace.
	aliceSocket.Close()
	if ev := nextPresence(t, bobRoom, "alice"); *ev.Online {
		t.Fatalf("bob's room: %+v, want alice offline", ev)
	}
	if ev := nextPresence(t, bobInbox, "alice"); *ev.Online {
		t.Fatalf("bob's inbox: %+v, want alice offline", ev)
	}
	if got := presenceOf(t, bob, "alice"); got["alice"] != "offline" {
		t.Fatalf("bob asks after alice left: %v", got)
	}
	// An event stream counts as a connection too.
	sse := ts.openSSE(t, alice.Token, `subscription { inboxEvents { kind } }`)
	if ev := nextPresence(t, bobRoom, "alice"); !*ev.Online {
		t.Fatalf("bob's room: %+v, want alice online through her event stream", ev)
	}
	sse.Body.Close()
	if ev := nextPresence(t, bobRoom, "alice"); *ev.Online {
		t.Fatalf("bob's room: %+v, want alice offline once her event stream closed", ev)
	}

	wantCode(t, bob, "BAD_USER_INPUT", presenceQ, map[string]any{"l": []string{}})
	wantCode(t, ts.Client, "UNAUTHENTICATED", presenceQ, map[string]any{"l": []string{"alice"}})
}

// Presence across two instances on one Redis: alice connects to one, bob
// follows from the other.
func TestClusterPresence(t *testing.T) {
	cl, alice, bob := acrossCluster(t, across{configure: func(c *server.Config) { c.PresenceGrace = 50 * time.Millisecond }})
	room := cl.instances[1].live(t, bob, presenceRoom, map[string]any{"r": "across"})

	aliceSocket := cl.instances[0].live(t, alice, typingInbox, nil)
	if ev := nextPresence(t, room, "alice"); !*ev.Online {
		t.Fatalf("on instance B: %+v, want alice online", ev)
	}
	if got := presenceOf(t, bob, "alice"); got["alice"] != "online" {
		t.Fatalf("bob asks instance B: %v", got)
	}
	if got := onlineIn(t, bob, "across"); strings.Join(got, ",") != "alice,bob" {
		t.Fatalf("across online on instance B: %v", got)
	}
	aliceSocket.Close()
	if ev := nextPresence(t, room, "alice"); *ev.Online {
		t.Fatalf("on instance B: %+v, want alice offline", ev)
	}
	if got := presenceOf(t, bob, "alice"); got["alice"] != "offline" {
		t.Fatalf("bob asks instance B after alice left: %v", got)
	}
}

// An instance killed with SIGKILL tells nobody: another instance sweeps its
// users offline, no sooner than CHAT_PRESENCE_TTL after its last heartbeat
// and no later than the TTL plus a heartbeat (with a margin for a loaded
// machine). Two real server processes share Cassandra and Redis.
func TestKilledInstanceUsersGoOffline(t *testing.T) {
	url := redisURL(t)
	cfg := cassandraConfig(t)
	cfg.RedisURL = url
	cfg.RedisChannelPrefix = "test-" + randomHex(4) + ":"
	cfg.PresenceTTL = 2 * time.Second
	cfg.PresenceGrace = 50 * time.Millisecond
	bin := buildChatql(t)
	killed, survivor := startChatql(t, bin, cfg), startChatql(t, bin, cfg)
	onKilled := &testServer{Client: chatclient.New(killed.URL)}
	alice := onKilled.user(t, "alice")
	bob := onKilled.user(t, "bob")
	bob.URL = survivor.URL
	mustDo(t, alice, createRoom, map[string]any{"n": "doomed"}, nil)
	mustDo(t, bob, joinRoom, map[string]any{"r": "doomed"}, nil)

	// Presence is not replayed: bob's stream must be live before alice
	// connects. A stream subscribes before it replays, so the first event
	// it delivers, replayed or live, shows it is.
	var first struct{ PostMessage struct{ ID string } }
	mustDo(t, alice, postMessage, map[string]any{"r": "doomed", "c": "hello?"}, &first)
	const resumed = `subscription($r: String!, $after: String) { roomEvents(room: $r, after: $after, presence: true) { kind cursor online user { login } } }`
	bobRoom, err := bob.Subscribe(testContext(t), chatclient.GraphQLTransportWS, resumed, map[string]any{"r": "doomed", "after": first.PostMessage.ID})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bobRoom.Close() })
	mustDo(t, alice, postMessage, map[string]any{"r": "doomed", "c": "anyone?"}, nil)
	for {
		var out struct{ RoomEvents presenceEvent }
		nextData(t, bobRoom, &out)
		if out.RoomEvents.Kind == "MESSAGE_POSTED" {
			break
		}
	}
	aliceSocket, err := alice.Subscribe(testContext(t), chatclient.GraphQLTransportWS, typingInbox, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { aliceSocket.Close() })
	if ev := nextPresence(t, bobRoom, "alice"); !*ev.Online {
		t.Fatalf("on the survivor: %+v, want alice online", ev)
	}
	// Alice's instance heartbeats at least every TTL/3: from here on, its
	// last heartbeat is at most TTL/3 old.
	if err := killed.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killedAt := time.Now()
	<-killed.exited
	if ev := nextPresence(t, bobRoom, "alice"); *ev.Online {
		t.Fatalf("on the survivor: %+v, want alice offline", ev)
	}
	took := time.Since(killedAt)
	if took < cfg.PresenceTTL-cfg.PresenceTTL/3 {
		t.Fatalf("alice told offline %v after her instance died: before its records could expire (TTL %v)", took, cfg.PresenceTTL)
	}
	if bound := cfg.PresenceTTL + cfg.PresenceTTL/3 + 3*time.Second; took > bound {
		t.Errorf("alice told offline %v after her instance died, later than the TTL plus a heartbeat and a margin: %v", took, bound)
	}
	if got := presenceOf(t, bob, "alice"); got["alice"] != "offline" {
		t.Fatalf("bob asks the survivor: %v", got)
	}
}

const (
	blockQ        = `mutation($l: String!) { blockUser(login: $l) { login } }`
	unblockQ      = `mutation($l: String!) { unblockUser(login: $l) { login } }`
	blockedQ      = `{ blockedUsers { login } }`
	muteQ         = `mutation($c: ID!, $m: Boolean) { muteConversation(conversation: $c, muted: $m) }`
	mutedInboxQ   = `{ inbox { id unread mentions muted } }`
	blockedPageQ  = `query($r: String!) { messages(room: $r, first: 10) { edges { node { content authorBlocked author { login } } } } }`
	mentionsInbox = `subscription { inboxEvents { kind conversationId message { content } } }`
)

func logins(t *testing.T, c *chatclient.Client, query string, vars map[string]any) string {
	t.Helper()
	var out map[string][]struct{ Login string }
	mustDo(t, c, query, vars, &out)
	for _, users := range out {
		var names []string
		for _, u := range users {
			names = append(names, u.Login)
		}
		return strings.Join(names, ",")
	}
	return ""
}

type mutedEntry struct {
	ID               string
	Unread, Mentions int
	Muted            bool
}

func mutedInbox(t *testing.T, c *chatclient.Client) map[string]mutedEntry {
	t.Helper()
	var out struct{ Inbox []mutedEntry }
	mustDo(t, c, mutedInboxQ, nil, &out)
	entries := map[string]mutedEntry{}
	for _, e := range out.Inbox {
		entries[e.ID] = e
	}
	return entries
}

func TestBlocksAndMutes(t *testing.T) { forEachStore(t, testBlocksAndMutes) }

// testBlocksAndMutes: a block stops direct messages and typing both ways,
// silences the blocked user's mentions and flags their messages for the
// blocker; a mute zeroes a conversation's counts and silences its
// mentions; both come undone.
func testBlocksAndMutes(t *testing.T, cfg server.Config) {
	ts := startServer(t, cfg)
	alice, bob, carol := ts.user(t, "alice"), ts.user(t, "bob"), ts.user(t, "carol")
	mustDo(t, alice, sendDirect, map[string]any{"to": "bob", "c": "hi bob"}, nil)
	mustDo(t, alice, createRoom, map[string]any{"n": "tea-party"}, nil)
	mustDo(t, bob, joinRoom, map[string]any{"r": "tea-party"}, nil)
	mustDo(t, carol, joinRoom, map[string]any{"r": "tea-party"}, nil)
	bobInbox := ts.live(t, bob, mentionsInbox, nil)

	if got := logins(t, bob, blockQ, map[string]any{"l": "alice"}); got != "alice" {
		t.Fatalf("blockUser(alice) = %q", got)
	}
	if got := logins(t, bob, blockQ, map[string]any{"l": "alice"}); got != "alice" {
		t.Fatalf("blockUser(alice) again = %q", got)
	}
	if got := logins(t, bob, blockedQ, nil); got != "alice" {
		t.Fatalf("blockedUsers = %q", got)
	}
	wantCode(t, alice, "FORBIDDEN", sendDirect, map[string]any{"to": "bob", "c": "hello?"})
	wantCode(t, bob, "FORBIDDEN", sendDirect, map[string]any{"to": "alice", "c": "go away"})
	wantCode(t, alice, "FORBIDDEN", typingQ, map[string]any{"c": "alice:bob"})
	wantCode(t, bob, "BAD_USER_INPUT", blockQ, map[string]any{"l": "bob"})
	wantCode(t, bob, "NOT_FOUND", blockQ, map[string]any{"l": "nobody"})
	wantCode(t, bob, "BAD_USER_INPUT", blockQ, map[string]any{"l": "No Such Login!"})
	wantCode(t, ts.Client, "UNAUTHENTICATED", blockQ, map[string]any{"l": "alice"})

	// Alice's mention of bob is silent; carol's is not.
	mustDo(t, alice, postMessage, map[string]any{"r": "tea-party", "c": "@bob, tea?"}, nil)
	mustDo(t, carol, postMessage, map[string]any{"r": "tea-party", "c": "@bob, milk?"}, nil)
	if ev := nextPeopleEvent(t, bobInbox); ev.Kind != "MENTIONED" || ev.Message == nil || ev.Message.Content != "@bob, milk?" {
		t.Fatalf("bob's inbox: %+v, want carol's mention only", ev)
	}
	var page struct {
		Messages struct {
			Edges []struct {
				Node struct {
					Content       string
					AuthorBlocked *bool
					Author        struct{ Login string }
				}
			}
		}
	}
	flags := func(c *chatclient.Client) map[string]bool {
		t.Helper()
		mustDo(t, c, blockedPageQ, map[string]any{"r": "tea-party"}, &page)
		got := map[string]bool{}
		for _, e := range page.Messages.Edges {
			if e.Node.AuthorBlocked == nil {
				t.Fatalf("authorBlocked is null in a query: %+v", e.Node)
			}
			got[e.Node.Content] = *e.Node.AuthorBlocked
		}
		return got
	}
	if got := flags(bob); !got["@bob, tea?"] || got["@bob, milk?"] {
		t.Fatalf("bob's page: authorBlocked %v, want alice's message only", got)
	}
	if got := flags(carol); got["@bob, tea?"] || got["@bob, milk?"] {
		t.Fatalf("carol's page: authorBlocked %v, want none", got)
	}

	if got := logins(t, bob, unblockQ, map[string]any{"l": "alice"}); got != "" {
		t.Fatalf("unblockUser(alice) = %q, want nobody blocked", got)
	}
	mustDo(t, alice, sendDirect, map[string]any{"to": "bob", "c": "friends again?"}, nil)
	if ev := nextPeopleEvent(t, bobInbox); ev.Kind != "DIRECT_MESSAGE" || ev.Message.Content != "friends again?" {
		t.Fatalf("bob's inbox after the unblock: %+v", ev)
	}

	// Bob mutes the room: no counts, no mention notices; unmuted, they are back.
	var muted struct{ MuteConversation bool }
	mustDo(t, bob, muteQ, map[string]any{"c": "tea-party"}, &muted)
	if !muted.MuteConversation {
		t.Fatal("muteConversation returned false")
	}
	mustDo(t, carol, postMessage, map[string]any{"r": "tea-party", "c": "@bob, sugar?"}, nil)
	mustDo(t, carol, sendDirect, map[string]any{"to": "bob", "c": "psst"}, nil)
	if ev := nextPeopleEvent(t, bobInbox); ev.Kind != "DIRECT_MESSAGE" || ev.Message.Content != "psst" {
		t.Fatalf("bob's inbox with the room muted: %+v, want carol's direct message and no mention", ev)
	}
	if e := mutedInbox(t, bob)["tea-party"]; !e.Muted || e.Unread != 0 || e.Mentions != 0 {
		t.Fatalf("bob's muted room entry: %+v", e)
	}
	if e := mutedInbox(t, bob)["bob:carol"]; e.Muted || e.Unread != 1 {
		t.Fatalf("bob's entry with carol: %+v, want unmuted, 1 unread", e)
	}
	mustDo(t, bob, muteQ, map[string]any{"c": "tea-party", "m": false}, nil)
	if e := mutedInbox(t, bob)["tea-party"]; e.Muted || e.Unread != 3 || e.Mentions != 3 {
		t.Fatalf("bob's room entry unmuted: %+v, want 3 unread, 3 mentions", e)
	}
	// A group bob muted tells his inbox nothing of its posts; unmuted, it does.
	mustDo(t, carol, createKind, map[string]any{"n": "den", "k": "PRIVATE_GROUP"}, nil)
	mustDo(t, carol, addMember, map[string]any{"g": "den", "l": "bob"}, nil)
	if ev := nextPeopleEvent(t, bobInbox); ev.Kind != "ADDED_TO_GROUP" {
		t.Fatalf("bob's inbox after carol added him to her group: %+v", ev)
	}
	mustDo(t, bob, muteQ, map[string]any{"c": "den"}, nil)
	mustDo(t, carol, postMessage, map[string]any{"r": "den", "c": "in the den"}, nil)
	mustDo(t, carol, sendDirect, map[string]any{"to": "bob", "c": "after the den"}, nil)
	if ev := nextPeopleEvent(t, bobInbox); ev.Kind != "DIRECT_MESSAGE" || ev.Message.Content != "after the den" {
		t.Fatalf("bob's inbox with the group muted: %+v, want carol's direct message and no UNREAD_CHANGED", ev)
	}
	mustDo(t, bob, muteQ, map[string]any{"c": "den", "m": false}, nil)
	mustDo(t, carol, postMessage, map[string]any{"r": "den", "c": "den again"}, nil)
	if ev := nextPeopleEvent(t, bobInbox); ev.Kind != "UNREAD_CHANGED" || ev.Message == nil || ev.Message.Content != "den again" {
		t.Fatalf("bob's inbox with the group unmuted: %+v, want the post's UNREAD_CHANGED", ev)
	}

	wantCode(t, carol, "NOT_FOUND", muteQ, map[string]any{"c": "alice:bob"})
	wantCode(t, carol, "NOT_FOUND", muteQ, map[string]any{"c": "no-such-room"})
	mustDo(t, alice, createRoom, map[string]any{"n": "alices-room"}, nil)
	wantCode(t, carol, "FORBIDDEN", muteQ, map[string]any{"c": "alices-room"})
}
