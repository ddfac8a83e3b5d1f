package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/chatql/internal/chatclient"
	"github.com/killrchat/chatql/server"
	"github.com/killrchat/chatql/store"
)

// The chat's rules, each once found broken on one read or write path while
// the others kept it: every test here failed before the rule moved into
// the chat core.

func TestThreadKeepsMembershipWindows(t *testing.T) {
	forEachStore(t, testThreadKeepsMembershipWindows)
}

// testThreadKeepsMembershipWindows: a member who left a group reads the
// replies posted while they were in it, and no others, in the thread and
// in its summary (replyCount, latestRepliers), as the history shows them.
func testThreadKeepsMembershipWindows(t *testing.T, cfg server.Config) {
	ts := startServer(t, cfg)
	alice, bob, carol := ts.user(t, "alice"), ts.user(t, "bob"), ts.user(t, "carol")
	mustDo(t, alice, createKind, map[string]any{"n": "secret", "k": "PRIVATE_GROUP"}, nil)
	mustDo(t, alice, addMember, map[string]any{"g": "secret", "l": "bob"}, nil)
	mustDo(t, alice, addMember, map[string]any{"g": "secret", "l": "carol"}, nil)
	var root struct{ PostMessage struct{ ID string } }
	mustDo(t, alice, replyQ, map[string]any{"r": "secret", "c": "the root"}, &root)
	id := root.PostMessage.ID
	mustDo(t, bob, replyQ, map[string]any{"r": "secret", "c": "bob while in", "to": id}, nil)
	mustDo(t, bob, leaveRoom, map[string]any{"r": "secret"}, nil)
	mustDo(t, carol, replyQ, map[string]any{"r": "secret", "c": "carol after bob left", "to": id}, nil)

	const q = `query($id: ID!) {
		message(id: $id) { replyCount latestRepliers { login } }
		thread(messageId: $id) { edges { node { content } } }
	}`
	read := func(c *chatclient.Client) (count int, repliers, contents string) {
		t.Helper()
		var out struct {
			Message struct {
				ReplyCount     int
				LatestRepliers []struct{ Login string }
			}
			Thread struct {
				Edges []struct{ Node struct{ Content string } }
			}
		}
		mustDo(t, c, q, map[string]any{"id": id}, &out)
		var logins, texts []string
		for _, u := range out.Message.LatestRepliers {
			logins = append(logins, u.Login)
		}
		for _, e := range out.Thread.Edges {
			texts = append(texts, e.Node.Content)
		}
		return out.Message.ReplyCount, strings.Join(logins, ","), strings.Join(texts, "|")
	}
	if n, who, got := read(bob); n != 1 || who != "bob" || got != "bob while in" {
		t.Errorf("bob, who left, sees %d replies by %q: %q; want 1, by bob, his own", n, who, got)
	}
	if n, who, got := read(alice); n != 2 || who != "carol,bob" || got != "carol after bob left|bob while in" {
		t.Errorf("alice sees %d replies by %q: %q; want both", n, who, got)
	}
	// Added again, bob reads what is posted in his second window too, and
	// still not what was posted while he was away.
	mustDo(t, alice, addMember, map[string]any{"g": "secret", "l": "bob"}, nil)
	mustDo(t, alice, replyQ, map[string]any{"r": "secret", "c": "alice welcomes bob", "to": id}, nil)
	if n, who, got := read(bob); n != 2 || who != "alice,bob" || got != "alice welcomes bob|bob while in" {
		t.Errorf("bob, back, sees %d replies by %q: %q; want his two windows' replies", n, who, got)
	}
}

func TestBlockBeyondCapIsRefused(t *testing.T) { forEachStore(t, testBlockBeyondCapIsRefused) }

// testBlockBeyondCapIsRefused: a block the store refuses (the cap of
// store.MaxBlocks) is an error, and blocks nobody.
func testBlockBeyondCapIsRefused(t *testing.T, cfg server.Config) {
	ts := startServer(t, cfg)
	alice := ts.user(t, "alice")
	ts.user(t, "bob")
	// A thousand blocks, each a durable write that counts the ones
	// before: on a loaded machine, longer than testContext allows.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for i := range store.MaxBlocks {
		if err := ts.Store().Block(ctx, "alice", store.UserRef{Login: fmt.Sprintf("user%04d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	wantCode(t, alice, "BAD_USER_INPUT", blockQ, map[string]any{"l": "bob"})
	blocked, err := ts.Store().Blocks(ctx, "alice", "bob")
	if err != nil || blocked {
		t.Fatalf("alice blocks bob = %v, %v; want a refused block to block nobody", blocked, err)
	}
}

func TestGroupAddRespectsBlocks(t *testing.T) { forEachStore(t, testGroupAddRespectsBlocks) }

// testGroupAddRespectsBlocks: a user cannot add to a group someone who
// blocked them, nor someone they blocked, as they cannot write to them
// directly; the refused add tells the added user nothing.
func testGroupAddRespectsBlocks(t *testing.T, cfg server.Config) {
	ts := startServer(t, cfg)
	alice, bob, carol := ts.user(t, "alice"), ts.user(t, "bob"), ts.user(t, "carol")
	mustDo(t, bob, blockQ, map[string]any{"l": "alice"}, nil)
	mustDo(t, alice, blockQ, map[string]any{"l": "carol"}, nil)
	mustDo(t, alice, createKind, map[string]any{"n": "secret", "k": "PRIVATE_GROUP"}, nil)
	events := ts.subscribeInbox(t, bob)
	wantCode(t, alice, "FORBIDDEN", addMember, map[string]any{"g": "secret", "l": "bob"})
	wantCode(t, alice, "FORBIDDEN", addMember, map[string]any{"g": "secret", "l": "carol"})
	if _, ok := inbox(t, bob)["secret"]; ok {
		t.Fatal("bob, who blocked alice, was added to her group")
	}
	// The next event bob gets is a direct message of carol's, not an
	// addition to alice's group.
	mustDo(t, carol, sendDirect, map[string]any{"to": "bob", "c": "hello"}, nil)
	if ev := nextInboxEvent(t, events); ev.Kind != "DIRECT_MESSAGE" {
		t.Fatalf("bob's next event: %+v, want carol's direct message", ev)
	}
}

func TestNamesAndContentRefuseInvisibleText(t *testing.T) {
	forEachStore(t, testNamesAndContentRefuseInvisibleText)
}

// testNamesAndContentRefuseInvisibleText: names hold no control or
// direction-changing characters (terminal and log injection, spoofing),
// and a message of only spaces and invisible characters is blank.
func testNamesAndContentRefuseInvisibleText(t *testing.T, cfg server.Config) {
	ts, alice, _, _ := teaParty(t, cfg)
	const signupQ = `mutation($in: SignupInput!) { signup(input: $in) { login } }`
	for _, name := range []string{"Mal\x00lory", "Mal\x1b[31mlory", "Mal\nlory", "Mal\rlory", "Mal\tlory", "Mal\u202elory", "Mal\u2066lory", "\u200b", "Mal\u0085lory"} {
		wantCode(t, ts.Client, "BAD_USER_INPUT", signupQ, map[string]any{"in": map[string]any{"login": "mallory", "password": "password-mallory", "firstname": name, "lastname": "X"}})
		wantCode(t, ts.Client, "BAD_USER_INPUT", signupQ, map[string]any{"in": map[string]any{"login": "mallory", "password": "password-mallory", "firstname": "X", "lastname": name}})
		wantCode(t, alice, "BAD_USER_INPUT", updateProfileQ, map[string]any{"in": map[string]any{"firstname": name}})
		wantCode(t, alice, "BAD_USER_INPUT", updateProfileQ, map[string]any{"in": map[string]any{"lastname": name}})
	}
	for _, bio := range []string{"a\x00b", "a\x1b[2Jb", "a\u202eb"} {
		wantCode(t, alice, "BAD_USER_INPUT", updateProfileQ, map[string]any{"in": map[string]any{"bio": bio}})
	}
	// A bio and a message keep their lines and tabs.
	mustDo(t, alice, updateProfileQ, map[string]any{"in": map[string]any{"firstname": "Alice Pleasance", "bio": "line one\nline two\twith a tab"}}, nil)
	mustDo(t, alice, postMessage, map[string]any{"r": "tea-party", "c": "line one\nline two\twith a tab 🎩"}, nil)
	for _, blank := range []string{" ", "\n\t ", "\u200b", "\u200b\u200c\u200d\u2060\ufeff", " \u00a0\u3000", "\u2800", "a\x00b", "a\x1b[2Jb"} {
		wantCode(t, alice, "BAD_USER_INPUT", postMessage, map[string]any{"r": "tea-party", "c": blank})
	}
}

func TestMarkReadStaysInItsConversation(t *testing.T) {
	forEachStore(t, testMarkReadStaysInItsConversation)
}

// testMarkReadStaysInItsConversation: markRead names a message of the
// conversation it marks; another conversation's id is refused and moves
// no mark.
func testMarkReadStaysInItsConversation(t *testing.T, cfg server.Config) {
	_, alice, bob, _ := teaParty(t, cfg)
	mustDo(t, alice, createRoom, map[string]any{"n": "croquet"}, nil)
	mustDo(t, bob, joinRoom, map[string]any{"r": "croquet"}, nil)
	var here, there struct{ PostMessage struct{ ID string } }
	mustDo(t, alice, postMessage, map[string]any{"r": "tea-party", "c": "here"}, &here)
	mustDo(t, alice, postMessage, map[string]any{"r": "croquet", "c": "there"}, &there)
	var dm struct{ SendDirectMessage struct{ ID string } }
	mustDo(t, alice, sendDirect, map[string]any{"to": "bob", "c": "psst"}, &dm)
	wantCode(t, bob, "BAD_USER_INPUT", roomReadQ, map[string]any{"c": "tea-party", "up": there.PostMessage.ID})
	wantCode(t, bob, "BAD_USER_INPUT", roomReadQ, map[string]any{"c": "tea-party", "up": dm.SendDirectMessage.ID})
	wantCode(t, bob, "BAD_USER_INPUT", roomReadQ, map[string]any{"c": "alice:bob", "up": here.PostMessage.ID})
	var marks struct {
		Room struct{ ReadMarks []struct{ UpTo string } }
	}
	mustDo(t, bob, readMarksQ, map[string]any{"r": "tea-party"}, &marks)
	if len(marks.Room.ReadMarks) != 0 {
		t.Fatalf("read marks of tea-party after refused marks: %+v", marks)
	}
	mustDo(t, bob, roomReadQ, map[string]any{"c": "tea-party", "up": here.PostMessage.ID}, nil)
	mustDo(t, bob, readMarksQ, map[string]any{"r": "tea-party"}, &marks)
	if len(marks.Room.ReadMarks) != 1 || marks.Room.ReadMarks[0].UpTo != here.PostMessage.ID {
		t.Fatalf("read marks of tea-party: %+v, want bob's up to %s", marks, here.PostMessage.ID)
	}
}

func TestMentionInboxEventHasItsConversation(t *testing.T) {
	forEachStore(t, testMentionInboxEventHasItsConversation)
}

// testMentionInboxEventHasItsConversation: the inbox event of a mention in
// a public room carries the room's inbox entry, as inbox lists it.
func testMentionInboxEventHasItsConversation(t *testing.T, cfg server.Config) {
	ts, alice, bob, _ := teaParty(t, cfg)
	sub := ts.live(t, bob, `subscription { inboxEvents { kind conversationId conversation { id kind unread mentions } } }`, nil)
	mustDo(t, alice, postMessage, map[string]any{"r": "tea-party", "c": "@bob, more tea?"}, nil)
	resp, err := sub.Next(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Errors) > 0 {
		t.Fatalf("mention event errors: %v", resp.Errors)
	}
	var out struct {
		InboxEvents struct {
			Kind, ConversationID string
			Conversation         *struct {
				ID, Kind         string
				Unread, Mentions int
			}
		}
	}
	if err := json.Unmarshal(resp.Data, &out); err != nil {
		t.Fatal(err)
	}
	ev := out.InboxEvents
	if ev.Kind != "MENTIONED" || ev.ConversationID != "tea-party" || ev.Conversation == nil ||
		ev.Conversation.ID != "tea-party" || ev.Conversation.Kind != "ROOM" || ev.Conversation.Unread != 1 || ev.Conversation.Mentions != 1 {
		t.Fatalf("mention event: %+v (conversation %+v), want tea-party's entry with 1 unread mention", ev, ev.Conversation)
	}
}

func TestEventViewIsTheSameOnEveryTransport(t *testing.T) {
	forEachStore(t, testEventViewIsTheSameOnEveryTransport)
}

// testEventViewIsTheSameOnEveryTransport: a room event's per-viewer fields
// (reactedByMe, authorBlocked) carry each subscriber's own values, the
// same over both websocket subprotocols and server-sent events.
func testEventViewIsTheSameOnEveryTransport(t *testing.T, cfg server.Config) {
	ts, alice, bob, carol := teaParty(t, cfg)
	mustDo(t, carol, joinRoom, map[string]any{"r": "tea-party"}, nil)
	mustDo(t, bob, blockQ, map[string]any{"l": "alice"}, nil)
	var posted struct{ PostMessage struct{ ID string } }
	mustDo(t, alice, postMessage, map[string]any{"r": "tea-party", "c": "Have some wine."}, &posted)
	const sub = `subscription($r: String!, $after: String) { roomEvents(room: $r, after: $after) { kind message { authorBlocked reactions { emoji count reactedByMe } } } }`
	vars := map[string]any{"r": "tea-party", "after": posted.PostMessage.ID}
	type view struct{ AuthorBlocked, ReactedByMe *bool }
	decode := func(t *testing.T, data []byte) view {
		t.Helper()
		var out struct {
			RoomEvents struct {
				Kind    string
				Message *struct {
					AuthorBlocked *bool
					Reactions     []struct{ ReactedByMe *bool }
				}
			}
		}
		if err := json.Unmarshal(data, &out); err != nil {
			t.Fatalf("%v: %s", err, data)
		}
		ev := out.RoomEvents
		if ev.Kind != "REACTION_CHANGED" || ev.Message == nil || len(ev.Message.Reactions) != 1 {
			t.Fatalf("event %s, want a reaction change with one reaction", data)
		}
		return view{ev.Message.AuthorBlocked, ev.Message.Reactions[0].ReactedByMe}
	}
	want := map[string]view{"bob": {ptr(true), ptr(true)}, "carol": {ptr(false), ptr(false)}}
	// Every subscriber opens first; each reads its event once the reaction
	// is made.
	var reads []func() (who string, v view)
	for who, c := range map[string]*chatclient.Client{"bob": bob, "carol": carol} {
		for _, proto := range []string{chatclient.GraphQLTransportWS, chatclient.GraphQLWS} {
			started := ts.Streams().Started()
			s, err := c.Subscribe(testContext(t), proto, sub, vars)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			waitFor(t, func() bool { return ts.Streams().Started() > started })
			reads = append(reads, func() (string, view) {
				resp, err := s.Next(testContext(t))
				if err != nil {
					t.Fatal(err)
				}
				return who + " over " + proto, decode(t, resp.Data)
			})
		}
		sse := ts.openSSEWith(t, c.Token, sub, vars)
		reads = append(reads, func() (string, view) { return who + " over SSE", decode(t, nextSSEData(t, sse.Body)) })
	}
	mustDo(t, bob, `mutation($id: ID!) { addReaction(messageId: $id, emoji: "🍷") { id } }`, map[string]any{"id": posted.PostMessage.ID}, nil)
	for _, read := range reads {
		who, v := read()
		w := want[strings.Fields(who)[0]]
		if v.AuthorBlocked == nil || v.ReactedByMe == nil || *v.AuthorBlocked != *w.AuthorBlocked || *v.ReactedByMe != *w.ReactedByMe {
			t.Errorf("%s sees authorBlocked %v, reactedByMe %v; want %v, %v", who, orNil(v.AuthorBlocked), orNil(v.ReactedByMe), *w.AuthorBlocked, *w.ReactedByMe)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func orNil[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// nextSSEData returns the data of the next "next" event of a
// GraphQL-over-SSE stream.
func nextSSEData(t *testing.T, body interface{ Read([]byte) (int, error) }) []byte {
	t.Helper()
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || strings.TrimSpace(line) == "" {
			continue
		}
		var resp struct {
			Data   json.RawMessage
			Errors []any
		}
		if err := json.Unmarshal([]byte(line), &resp); err != nil {
			t.Fatalf("SSE data %q: %v", line, err)
		}
		if len(resp.Errors) > 0 {
			t.Fatalf("SSE errors: %v", resp.Errors)
		}
		return resp.Data
	}
	t.Fatalf("SSE stream ended: %v", sc.Err())
	return nil
}

func TestAddedMemberReadsTheirAddition(t *testing.T) {
	forEachStore(t, testAddedMemberReadsTheirAddition)
}

// testAddedMemberReadsTheirAddition: the system message that records a
// member's addition to a group is theirs to read, in the history and by id,
// as the first message of their window (its id is taken at the window's
// start, which once began later than it by the clock's nanoseconds).
func testAddedMemberReadsTheirAddition(t *testing.T, cfg server.Config) {
	ts := startServer(t, cfg)
	alice, bob := ts.user(t, "alice"), ts.user(t, "bob")
	mustDo(t, alice, createKind, map[string]any{"n": "club", "k": "PRIVATE_GROUP"}, nil)
	mustDo(t, alice, addMember, map[string]any{"g": "club", "l": "bob"}, nil)
	var page messagePage
	mustDo(t, bob, `query { messages(room: "club", first: 10) { edges { node { id content system } } } }`, nil, &page)
	if len(page.Messages.Edges) != 1 || page.Messages.Edges[0].Node.Content != "alice added bob to the group" {
		t.Fatalf("bob's history of the group: %+v, want the message of his addition alone", page.Messages.Edges)
	}
	var byID struct{ Message struct{ Content string } }
	mustDo(t, bob, `query($id: ID!) { message(id: $id) { content } }`, map[string]any{"id": page.Messages.Edges[0].Node.ID}, &byID)
	if byID.Message.Content != "alice added bob to the group" {
		t.Fatalf("bob reads his addition by id as %+v", byID)
	}
}
