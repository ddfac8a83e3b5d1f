package e2e

import (
	"slices"
	"strings"
	"testing"

	"github.com/killrchat/chatql/internal/chatclient"
	"github.com/killrchat/chatql/server"
)

const (
	editQ       = `mutation($id: ID!, $c: String!) { editMessage(id: $id, content: $c) { id content editedAt deleted } }`
	deleteQ     = `mutation($id: ID!) { deleteMessage(id: $id) { id content editedAt deleted } }`
	changedSub  = `subscription($r: String!, $after: String) { roomEvents(room: $r, after: $after) { kind cursor user { login } message { id content editedAt deleted } } }`
	changedInbx = `subscription { inboxEvents { kind conversationId message { id content editedAt deleted } } }`
	messageByID = `query($id: ID!) { message(id: $id) { id content editedAt deleted } }`
)

// changedMessage is a message as the change tests read it.
type changedMessage struct {
	ID, Content string
	EditedAt    *string
	Deleted     bool
}

type changeEvent struct {
	Kind, ConversationID string
	Cursor               *string
	User                 struct{ Login string }
	Message              *changedMessage
}

// nextChange reads the next event of a subscription of changedSub or
// changedInbx.
func nextChange(t *testing.T, sub *chatclient.Subscription) changeEvent {
	t.Helper()
	return nextOf[changeEvent](t, sub)
}

func TestMessageChanges(t *testing.T) { forEachStore(t, testMessageChanges) }

// testMessageChanges edits and deletes messages of a room and of a direct
// conversation over HTTP, with subscribers live over websockets and a
// subscriber replaying from a cursor, and every refusal's code.
func testMessageChanges(t *testing.T, cfg server.Config) {
	ts, alice, bob, carol := teaParty(t, cfg)
	var posted struct{ PostMessage struct{ ID string } }
	mustDo(t, bob, postMessage, map[string]any{"r": "tea-party", "c": "Twinkle, twinkle, little bat"}, &posted)
	id := posted.PostMessage.ID

	live := ts.live(t, alice, changedSub, map[string]any{"r": "tea-party"})

	t.Run("Edit", func(t *testing.T) {
		var out struct{ EditMessage changedMessage }
		mustDo(t, bob, editQ, map[string]any{"id": id, "c": "Twinkle, twinkle, little star"}, &out)
		if out.EditMessage.Content != "Twinkle, twinkle, little star" || out.EditMessage.EditedAt == nil || out.EditMessage.Deleted {
			t.Fatalf("editMessage = %+v", out.EditMessage)
		}
		ev := nextChange(t, live)
		if ev.Kind != "MESSAGE_EDITED" || ev.User.Login != "bob" || ev.Message == nil || ev.Message.Content != out.EditMessage.Content || ev.Message.EditedAt == nil || *ev.Message.EditedAt != *out.EditMessage.EditedAt {
			t.Fatalf("live event = %+v, want MESSAGE_EDITED of %+v", ev, out.EditMessage)
		}
		var page messagePage
		mustDo(t, alice, messagesQ, map[string]any{"r": "tea-party", "n": 1}, &page)
		if len(page.Messages.Edges) != 1 || page.Messages.Edges[0].Node.Content != "Twinkle, twinkle, little star" {
			t.Fatalf("history after the edit: %+v", page)
		}
		// A second edit is an event of its own, not the first's again.
		mustDo(t, bob, editQ, map[string]any{"id": id, "c": "Up above the world you fly"}, &out)
		if ev := nextChange(t, live); ev.Kind != "MESSAGE_EDITED" || ev.Message == nil || ev.Message.Content != "Up above the world you fly" {
			t.Fatalf("live event of the second edit = %+v", ev)
		}
	})

	t.Run("EditRefused", func(t *testing.T) {
		wantCode(t, alice, "FORBIDDEN", editQ, map[string]any{"id": id, "c": "mine now"})
		wantCode(t, carol, "NOT_FOUND", editQ, map[string]any{"id": id, "c": "mine now"})
		wantCode(t, bob, "BAD_USER_INPUT", editQ, map[string]any{"id": id, "c": "  "})
		wantCode(t, bob, "BAD_USER_INPUT", editQ, map[string]any{"id": "not-an-id", "c": "x"})
		wantCode(t, bob, "NOT_FOUND", editQ, map[string]any{"id": "00000000-0000-1000-8000-000000000000", "c": "x"})
		wantCode(t, carol, "NOT_FOUND", deleteQ, map[string]any{"id": id})
	})

	t.Run("DeleteByCreator", func(t *testing.T) {
		var out struct{ DeleteMessage changedMessage }
		mustDo(t, alice, deleteQ, map[string]any{"id": id}, &out)
		tombstone := changedMessage{ID: id, Deleted: true}
		if out.DeleteMessage != tombstone {
			t.Fatalf("deleteMessage = %+v, want the tombstone", out.DeleteMessage)
		}
		if ev := nextChange(t, live); ev.Kind != "MESSAGE_DELETED" || ev.User.Login != "alice" || ev.Message == nil || *ev.Message != tombstone {
			t.Fatalf("live event = %+v, want MESSAGE_DELETED of the tombstone", ev)
		}
		var again struct{ DeleteMessage changedMessage }
		mustDo(t, bob, deleteQ, map[string]any{"id": id}, &again)
		if again.DeleteMessage != tombstone {
			t.Fatalf("deleteMessage again = %+v, want the tombstone", again.DeleteMessage)
		}
		wantCode(t, bob, "NOT_FOUND", editQ, map[string]any{"id": id, "c": "back"})
		var byID struct{ Message changedMessage }
		mustDo(t, bob, messageByID, map[string]any{"id": id}, &byID)
		if byID.Message != tombstone {
			t.Fatalf("message(id) = %+v, want the tombstone", byID.Message)
		}
	})

	t.Run("Replay", func(t *testing.T) {
		mustDo(t, carol, joinRoom, map[string]any{"r": "tea-party"}, nil)
		replay := ts.live(t, carol, changedSub, map[string]any{"r": "tea-party", "after": id})
		var kinds []string
		for range 4 {
			ev := nextChange(t, replay)
			kinds = append(kinds, ev.Kind)
			if ev.Kind != "PARTICIPANT_JOINED" && (ev.Message == nil || !ev.Message.Deleted) {
				t.Errorf("replayed %s shows the message %+v, want its tombstone", ev.Kind, ev.Message)
			}
		}
		if want := []string{"MESSAGE_EDITED", "MESSAGE_EDITED", "MESSAGE_DELETED", "PARTICIPANT_JOINED"}; !slices.Equal(kinds, want) {
			t.Errorf("replayed kinds %v, want %v", kinds, want)
		}
	})

	t.Run("Direct", func(t *testing.T) {
		events := ts.live(t, bob, changedInbx, nil)
		var sent struct{ SendDirectMessage struct{ ID string } }
		mustDo(t, alice, sendDirect, map[string]any{"to": "bob", "c": "meet at 5"}, &sent)
		if ev := nextChange(t, events); ev.Kind != "DIRECT_MESSAGE" {
			t.Fatalf("inbox event = %+v, want DIRECT_MESSAGE", ev)
		}
		dm := sent.SendDirectMessage.ID
		wantCode(t, bob, "FORBIDDEN", editQ, map[string]any{"id": dm, "c": "meet at 6"})
		wantCode(t, bob, "FORBIDDEN", deleteQ, map[string]any{"id": dm})
		mustDo(t, alice, editQ, map[string]any{"id": dm, "c": "meet at 6"}, nil)
		if ev := nextChange(t, events); ev.Kind != "MESSAGE_EDITED" || ev.ConversationID != "alice:bob" || ev.Message == nil || ev.Message.Content != "meet at 6" || ev.Message.EditedAt == nil {
			t.Fatalf("inbox event = %+v, want MESSAGE_EDITED", ev)
		}
		if e := inbox(t, bob)["alice:bob"]; e.LastMessage == nil || e.LastMessage.Content != "meet at 6" {
			t.Fatalf("bob's inbox entry after the edit: %+v", e)
		}
		mustDo(t, alice, deleteQ, map[string]any{"id": dm}, nil)
		if ev := nextChange(t, events); ev.Kind != "MESSAGE_DELETED" || ev.Message == nil || !ev.Message.Deleted || ev.Message.Content != "" {
			t.Fatalf("inbox event = %+v, want MESSAGE_DELETED of the tombstone", ev)
		}
		if e := inbox(t, bob)["alice:bob"]; e.LastMessage == nil || e.LastMessage.ID != dm || e.LastMessage.Content != "" {
			t.Fatalf("bob's inbox entry after the delete: %+v", e)
		}
	})
}

const (
	addReactionQ    = `mutation($id: ID!, $e: String!) { addReaction(messageId: $id, emoji: $e) { id reactions { emoji count reactedByMe } } }`
	removeReactionQ = `mutation($id: ID!, $e: String!) { removeReaction(messageId: $id, emoji: $e) { id reactions { emoji count reactedByMe } } }`
	reactionSub     = `subscription($r: String!) { roomEvents(room: $r) { kind user { login } message { id reactions { emoji count reactedByMe } } } }`
	reactionsQ      = `query($r: String!) { messages(room: $r, first: 10) { edges { node { id reactions { emoji count reactedByMe } } } } }`
)

type reaction struct {
	Emoji       string
	Count       int
	ReactedByMe *bool
}

func TestReactions(t *testing.T) { forEachStore(t, testReactions) }

// testReactions adds and removes reactions over HTTP with a subscriber
// live over websockets, reads them back in a page, and checks refusals.
func testReactions(t *testing.T, cfg server.Config) {
	ts, alice, bob, carol := teaParty(t, cfg)
	var posted struct{ PostMessage struct{ ID string } }
	mustDo(t, alice, postMessage, map[string]any{"r": "tea-party", "c": "Off with their heads!"}, &posted)
	id := posted.PostMessage.ID

	live := ts.live(t, alice, reactionSub, map[string]any{"r": "tea-party"})

	var added struct {
		AddReaction struct {
			ID        string
			Reactions []reaction
		}
	}
	mustDo(t, bob, addReactionQ, map[string]any{"id": id, "e": "😱"}, &added)
	if rs := added.AddReaction.Reactions; len(rs) != 1 || rs[0].Emoji != "😱" || rs[0].Count != 1 || rs[0].ReactedByMe == nil || !*rs[0].ReactedByMe {
		t.Fatalf("addReaction = %+v, want 😱 once, by me", rs)
	}
	var ev struct {
		RoomEvents struct {
			Kind    string
			User    struct{ Login string }
			Message struct{ Reactions []reaction }
		}
	}
	nextData(t, live, &ev)
	if e := ev.RoomEvents; e.Kind != "REACTION_CHANGED" || e.User.Login != "bob" || len(e.Message.Reactions) != 1 || e.Message.Reactions[0].Count != 1 || e.Message.Reactions[0].ReactedByMe == nil || *e.Message.Reactions[0].ReactedByMe {
		t.Fatalf("live event = %+v, want REACTION_CHANGED by bob, 😱 once, not by alice, who subscribed", e)
	}

	mustDo(t, alice, addReactionQ, map[string]any{"id": id, "e": "😱"}, nil)
	var page struct {
		Messages struct {
			Edges []struct {
				Node struct {
					ID        string
					Reactions []reaction
				}
			}
		}
	}
	mustDo(t, carol, joinRoom, map[string]any{"r": "tea-party"}, nil)
	mustDo(t, carol, reactionsQ, map[string]any{"r": "tea-party"}, &page)
	found := false
	for _, e := range page.Messages.Edges {
		if e.Node.ID == id {
			found = true
			if rs := e.Node.Reactions; len(rs) != 1 || rs[0].Count != 2 || rs[0].ReactedByMe == nil || *rs[0].ReactedByMe {
				t.Errorf("carol's page shows %+v, want 😱 twice, not by her", rs)
			}
		}
	}
	if !found {
		t.Fatalf("carol's page lacks the message: %+v", page)
	}

	var removed struct {
		RemoveReaction struct{ Reactions []reaction }
	}
	mustDo(t, bob, removeReactionQ, map[string]any{"id": id, "e": "😱"}, &removed)
	if rs := removed.RemoveReaction.Reactions; len(rs) != 1 || rs[0].Count != 1 || rs[0].ReactedByMe == nil || *rs[0].ReactedByMe {
		t.Errorf("removeReaction = %+v, want 😱 once, not by me", rs)
	}

	dave := ts.user(t, "dave")
	wantCode(t, dave, "NOT_FOUND", addReactionQ, map[string]any{"id": id, "e": "👀"})
	for _, bad := range []string{"", "two words", strings.Repeat("x", 33), "\x07"} {
		wantCode(t, bob, "BAD_USER_INPUT", addReactionQ, map[string]any{"id": id, "e": bad})
	}
	wantCode(t, bob, "BAD_USER_INPUT", addReactionQ, map[string]any{"id": "nope", "e": "👀"})
}

const (
	replyQ       = `mutation($r: String!, $c: String!, $to: ID) { postMessage(room: $r, content: $c, replyTo: $to) { id replyToId } }`
	directReplyQ = `mutation($to: String!, $c: String!, $re: ID) { sendDirectMessage(to: $to, content: $c, replyTo: $re) { id replyToId } }`
	threadQ      = `query($id: ID!, $n: Int, $after: String) { thread(messageId: $id, first: $n, after: $after) { edges { node { id content replyToId } } pageInfo { hasNextPage endCursor } } }`
	rootsQ       = `query($r: String!) { messages(room: $r, first: 20) { edges { node { id replyToId replyCount latestRepliers { login } } } } }`
)

func TestReplies(t *testing.T) { forEachStore(t, testReplies) }

// testReplies posts replies in a room and a direct conversation, reads the
// thread summaries in a page and the thread itself, and checks refusals.
func testReplies(t *testing.T, cfg server.Config) {
	ts := startServer(t, cfg)
	alice, bob, carol := ts.user(t, "alice"), ts.user(t, "bob"), ts.user(t, "carol")
	mustDo(t, alice, createRoom, map[string]any{"n": "tea-party"}, nil)
	mustDo(t, alice, createRoom, map[string]any{"n": "croquet"}, nil)
	for _, c := range []*chatclient.Client{bob, carol} {
		mustDo(t, c, joinRoom, map[string]any{"r": "tea-party"}, nil)
	}
	type posted struct {
		PostMessage struct {
			ID        string
			ReplyToID *string
		}
	}
	var root, first, second, elsewhere posted
	mustDo(t, alice, replyQ, map[string]any{"r": "tea-party", "c": "Why is a raven like a writing-desk?"}, &root)
	rootID := root.PostMessage.ID
	mustDo(t, bob, replyQ, map[string]any{"r": "tea-party", "c": "I give up", "to": rootID}, &first)
	// A reply to a reply joins the root's thread.
	mustDo(t, carol, replyQ, map[string]any{"r": "tea-party", "c": "So do I", "to": first.PostMessage.ID}, &second)
	for _, p := range []posted{first, second} {
		if p.PostMessage.ReplyToID == nil || *p.PostMessage.ReplyToID != rootID {
			t.Fatalf("reply = %+v, want replyToId %s", p.PostMessage, rootID)
		}
	}

	var page struct {
		Messages struct {
			Edges []struct {
				Node struct {
					ID             string
					ReplyToID      *string
					ReplyCount     int
					LatestRepliers []struct{ Login string }
				}
			}
		}
	}
	mustDo(t, alice, rootsQ, map[string]any{"r": "tea-party"}, &page)
	found := 0
	for _, e := range page.Messages.Edges {
		switch e.Node.ID {
		case rootID:
			found++
			if e.Node.ReplyCount != 2 || len(e.Node.LatestRepliers) != 2 || e.Node.LatestRepliers[0].Login != "carol" || e.Node.LatestRepliers[1].Login != "bob" {
				t.Errorf("the root in the history: %+v, want 2 replies, carol then bob", e.Node)
			}
		case first.PostMessage.ID, second.PostMessage.ID:
			found++ // replies are in the history too
		}
	}
	if found != 3 {
		t.Errorf("the history holds %d of the root and its 2 replies: %+v", found, page)
	}

	var thread struct {
		Thread struct {
			Edges []struct {
				Node struct{ ID, Content string }
			}
			PageInfo struct {
				HasNextPage bool
				EndCursor   *string
			}
		}
	}
	mustDo(t, bob, threadQ, map[string]any{"id": rootID, "n": 1}, &thread)
	if e := thread.Thread.Edges; len(e) != 1 || e[0].Node.ID != second.PostMessage.ID || !thread.Thread.PageInfo.HasNextPage {
		t.Fatalf("thread's first page = %+v, want carol's reply and more", thread.Thread)
	}
	mustDo(t, bob, threadQ, map[string]any{"id": rootID, "n": 1, "after": *thread.Thread.PageInfo.EndCursor}, &thread)
	if e := thread.Thread.Edges; len(e) != 1 || e[0].Node.ID != first.PostMessage.ID {
		t.Fatalf("thread's second page = %+v, want bob's reply", thread.Thread)
	}

	mustDo(t, alice, replyQ, map[string]any{"r": "croquet", "c": "elsewhere"}, &elsewhere)
	wantCode(t, bob, "BAD_USER_INPUT", replyQ, map[string]any{"r": "tea-party", "c": "x", "to": "not-an-id"})
	wantCode(t, alice, "BAD_USER_INPUT", replyQ, map[string]any{"r": "tea-party", "c": "x", "to": elsewhere.PostMessage.ID})
	wantCode(t, bob, "NOT_FOUND", replyQ, map[string]any{"r": "tea-party", "c": "x", "to": "00000000-0000-1000-8000-000000000000"})
	wantCode(t, ts.user(t, "dave"), "NOT_FOUND", threadQ, map[string]any{"id": rootID})

	var dm, dmReply struct {
		SendDirectMessage struct {
			ID        string
			ReplyToID *string
		}
	}
	mustDo(t, alice, directReplyQ, map[string]any{"to": "bob", "c": "tea?"}, &dm)
	mustDo(t, bob, directReplyQ, map[string]any{"to": "alice", "c": "yes", "re": dm.SendDirectMessage.ID}, &dmReply)
	if r := dmReply.SendDirectMessage.ReplyToID; r == nil || *r != dm.SendDirectMessage.ID {
		t.Fatalf("direct reply = %+v, want replyToId %s", dmReply.SendDirectMessage, dm.SendDirectMessage.ID)
	}
	wantCode(t, carol, "NOT_FOUND", directReplyQ, map[string]any{"to": "alice", "c": "me too", "re": dm.SendDirectMessage.ID}) // she cannot read it
}

const (
	roomReadQ  = `mutation($c: ID!, $up: ID!) { markRead(conversation: $c, upTo: $up) { id kind unread readUpTo } }`
	readMarksQ = `query($r: String!, $n: Int) { room(name: $r) { readMarks(first: $n) { user { login } upTo } } }`
	readSub    = `subscription($r: String!) { roomEvents(room: $r) { kind cursor user { login } message { id } } }`
)

func TestRoomReadReceipts(t *testing.T) { forEachStore(t, testRoomReadReceipts) }

// testRoomReadReceipts: a public room is in its participants' inbox with
// its unread count; markRead moves a participant's mark, which the room's
// readMarks show and its subscribers get live as READ_UPTO.
func testRoomReadReceipts(t *testing.T, cfg server.Config) {
	ts, alice, bob, carol := teaParty(t, cfg)
	var ids []string
	for _, c := range []string{"one", "two", "three"} {
		var out struct{ PostMessage struct{ ID string } }
		mustDo(t, alice, postMessage, map[string]any{"r": "tea-party", "c": c}, &out)
		ids = append(ids, out.PostMessage.ID)
	}
	if e := inbox(t, bob)["tea-party"]; e.Kind != "ROOM" || e.Unread != 3 || e.LastMessage == nil || e.LastMessage.ID != ids[2] || e.ReadUpTo != nil {
		t.Fatalf("bob's inbox entry of the room: %+v, want ROOM, 3 unread, the last message, nothing read", e)
	}

	live := ts.live(t, alice, readSub, map[string]any{"r": "tea-party"})

	var marked struct {
		MarkRead struct {
			ID, Kind string
			Unread   int
			ReadUpTo *string
		}
	}
	mustDo(t, bob, roomReadQ, map[string]any{"c": "tea-party", "up": ids[1]}, &marked)
	if m := marked.MarkRead; m.Kind != "ROOM" || m.Unread != 1 || m.ReadUpTo == nil || *m.ReadUpTo != ids[1] {
		t.Fatalf("markRead of the room = %+v, want 1 unread, read up to %s", m, ids[1])
	}
	var ev struct {
		RoomEvents struct {
			Kind    string
			Cursor  *string
			User    struct{ Login string }
			Message *struct{ ID string }
		}
	}
	nextData(t, live, &ev)
	if e := ev.RoomEvents; e.Kind != "READ_UPTO" || e.Cursor != nil || e.User.Login != "bob" || e.Message == nil || e.Message.ID != ids[1] {
		t.Fatalf("live event = %+v, want READ_UPTO by bob up to %s, no cursor", e, ids[1])
	}

	var marks struct {
		Room struct {
			ReadMarks []struct {
				User struct{ Login string }
				UpTo string
			}
		}
	}
	mustDo(t, alice, readMarksQ, map[string]any{"r": "tea-party"}, &marks)
	if m := marks.Room.ReadMarks; len(m) != 1 || m[0].User.Login != "bob" || m[0].UpTo != ids[1] {
		t.Fatalf("readMarks = %+v, want bob up to %s", m, ids[1])
	}
	mustDo(t, carol, readMarksQ, map[string]any{"r": "tea-party"}, &marks)
	if len(marks.Room.ReadMarks) != 0 {
		t.Errorf("readMarks for someone not in the room = %+v, want none", marks.Room.ReadMarks)
	}
	wantCode(t, carol, "NOT_FOUND", roomReadQ, map[string]any{"c": "tea-party", "up": ids[1]})
	wantCode(t, alice, "BAD_USER_INPUT", readMarksQ, map[string]any{"r": "tea-party", "n": 0})
	// More than the most is bad input; the most, with each mark's user,
	// costs more than a query may.
	wantCode(t, alice, "BAD_USER_INPUT", `query($r: String!, $n: Int) { room(name: $r) { readMarks(first: $n) { upTo } } }`, map[string]any{"r": "tea-party", "n": 1001})
	wantCode(t, alice, "COMPLEXITY_LIMIT_EXCEEDED", readMarksQ, map[string]any{"r": "tea-party", "n": 1000})
}

const mentionsSub = `subscription { inboxEvents { kind conversationId message { id mentions } } }`

func TestMentions(t *testing.T) { forEachStore(t, testMentions) }

// testMentions: a post mentioning a participant reaches their inbox live as
// MENTIONED and counts in their entry; a mention of someone not in the
// room is ignored.
func testMentions(t *testing.T, cfg server.Config) {
	ts, alice, bob, carol := teaParty(t, cfg)
	events := map[string]*chatclient.Subscription{"bob": ts.live(t, bob, mentionsSub, nil), "carol": ts.live(t, carol, mentionsSub, nil)}

	var out struct {
		PostMessage struct {
			ID       string
			Mentions []string
		}
	}
	mustDo(t, alice, `mutation($r: String!, $c: String!) { postMessage(room: $r, content: $c) { id mentions } }`,
		map[string]any{"r": "tea-party", "c": "@bob and @carol, the hatter is late"}, &out)
	if !slices.Equal(out.PostMessage.Mentions, []string{"bob", "carol"}) {
		t.Fatalf("mentions = %q, want bob and carol", out.PostMessage.Mentions)
	}
	var ev struct {
		InboxEvents struct {
			Kind, ConversationID string
			Message              struct{ ID string }
		}
	}
	nextData(t, events["bob"], &ev)
	if e := ev.InboxEvents; e.Kind != "MENTIONED" || e.ConversationID != "tea-party" || e.Message.ID != out.PostMessage.ID {
		t.Fatalf("bob's inbox event = %+v, want MENTIONED of the post", e)
	}
	var entry struct {
		Inbox []struct {
			ID               string
			Unread, Mentions int
		}
	}
	mustDo(t, bob, `{ inbox { id unread mentions } }`, nil, &entry)
	if len(entry.Inbox) != 1 || entry.Inbox[0].ID != "tea-party" || entry.Inbox[0].Unread != 1 || entry.Inbox[0].Mentions != 1 {
		t.Fatalf("bob's inbox = %+v, want the room, 1 unread, 1 mention", entry.Inbox)
	}
	// carol is not in the room: her mention is ignored. A post of her own
	// in a room she joins is the next event she gets, if any came before.
	mustDo(t, carol, createRoom, map[string]any{"n": "croquet"}, nil)
	mustDo(t, alice, joinRoom, map[string]any{"r": "croquet"}, nil)
	mustDo(t, alice, postMessage, map[string]any{"r": "croquet", "c": "hi @carol"}, nil)
	nextData(t, events["carol"], &ev)
	if e := ev.InboxEvents; e.Kind != "MENTIONED" || e.ConversationID != "croquet" {
		t.Fatalf("carol's first inbox event = %+v, want the mention in croquet, not the one in tea-party", e)
	}
}
