package e2e

import (
	"slices"
	"testing"

	"github.com/killrchat/chatql/internal/chatclient"
	"github.com/killrchat/chatql/server"
)

// Moderation (issue 14 item 4), end to end.

const (
	appointQ   = `mutation($r: String!, $l: String!) { appointModerator(room: $r, login: $l) { moderators { login } } }`
	dismissQ   = `mutation($r: String!, $l: String!) { dismissModerator(room: $r, login: $l) { moderators { login } } }`
	removeQ    = `mutation($r: String!, $l: String!) { removeParticipant(room: $r, login: $l) { participants { login } } }`
	banQ       = `mutation($r: String!, $l: String!) { banUser(room: $r, login: $l) { participants { login } banned } }`
	unbanQ     = `mutation($r: String!, $l: String!) { unbanUser(room: $r, login: $l) { banned } }`
	bannedQ    = `query($r: String!) { room(name: $r) { moderators { login } banned } }`
	deleteMsgQ = `mutation($id: ID!) { deleteMessage(id: $id) { id deleted } }`
	moderation = `subscription($r: String!, $after: String) { roomEvents(room: $r, after: $after) { kind cursor user { login } by { login } message { content system author { login } } } }`
)

// moderationEvent is a room event as the moderation tests read it.
type moderationEvent struct {
	Kind    string
	Cursor  *string
	User    struct{ Login string }
	By      *struct{ Login string }
	Message *struct {
		Content string
		System  bool
		Author  struct{ Login string }
	}
}

// nextModeration skips events of kinds in skip and returns the next one.
func nextModeration(t *testing.T, sub *chatclient.Subscription, skip ...string) moderationEvent {
	t.Helper()
	for {
		ev := nextOf[moderationEvent](t, sub)
		if !slices.Contains(skip, ev.Kind) {
			return ev
		}
	}
}

// wantModeration checks that ev is the moderation event kind of target by
// actor, with its system message.
func wantModeration(t *testing.T, ev moderationEvent, kind, target, actor string) {
	t.Helper()
	if ev.Kind != kind || ev.User.Login != target || ev.By == nil || ev.By.Login != actor || ev.Cursor == nil ||
		ev.Message == nil || !ev.Message.System || ev.Message.Author.Login != actor {
		t.Fatalf("event = %+v, want %s of %s by %s with a cursor and a system message", ev, kind, target, actor)
	}
}

func TestModeration(t *testing.T) { forEachStore(t, testModeration) }

// testModeration: the creator appoints a moderator, who bans and removes
// participants and deletes their messages; a banned user is kept out and
// their subscription ends at once; every action is an event with who took
// it, live and replayed.
func testModeration(t *testing.T, cfg server.Config) {
	ts, alice, bob, carol := teaParty(t, cfg)
	dave := ts.user(t, "dave")
	for _, c := range []*chatclient.Client{carol, dave} {
		mustDo(t, c, joinRoom, map[string]any{"r": "tea-party"}, nil)
	}
	room := func(l string) map[string]any { return map[string]any{"r": "tea-party", "l": l} }
	var posted struct{ PostMessage struct{ ID string } }
	mustDo(t, dave, postMessage, map[string]any{"r": "tea-party", "c": "spam spam spam"}, &posted)

	t.Run("Refused", func(t *testing.T) {
		wantCode(t, bob, "FORBIDDEN", appointQ, room("carol"))
		wantCode(t, carol, "FORBIDDEN", banQ, room("dave"))
		wantCode(t, carol, "FORBIDDEN", removeQ, room("dave"))
		wantCode(t, carol, "FORBIDDEN", deleteMsgQ, map[string]any{"id": posted.PostMessage.ID})
		wantCode(t, alice, "BAD_USER_INPUT", removeQ, room("alice"))
		wantCode(t, alice, "BAD_USER_INPUT", banQ, room("Not A Login"))
		wantCode(t, alice, "NOT_FOUND", banQ, room("nobody"))
		wantCode(t, alice, "NOT_FOUND", banQ, map[string]any{"r": "no-such-room", "l": "bob"})
		wantCode(t, alice, "NOT_FOUND", appointQ, room("eve-never-joined"))
		wantCode(t, ts.Client, "UNAUTHENTICATED", banQ, room("bob"))
		var out struct{ Room struct{ Banned []string } }
		mustDo(t, carol, bannedQ, map[string]any{"r": "tea-party"}, &out)
		if out.Room.Banned != nil {
			t.Fatalf("room.banned for a participant = %q, want null", out.Room.Banned)
		}
	})

	watch := ts.live(t, alice, moderation, map[string]any{"r": "tea-party"})
	var appointed struct {
		AppointModerator struct{ Moderators []struct{ Login string } }
	}
	mustDo(t, alice, appointQ, room("bob"), &appointed)
	if m := appointed.AppointModerator.Moderators; len(m) != 1 || m[0].Login != "bob" {
		t.Fatalf("appointModerator(bob).moderators = %+v, want bob", m)
	}
	first := nextModeration(t, watch)
	wantModeration(t, first, "MODERATOR_APPOINTED", "bob", "alice")

	t.Run("BanEndsSubscription", func(t *testing.T) {
		carolSub := ts.live(t, carol, moderation, map[string]any{"r": "tea-party"})
		var banned struct {
			BanUser struct {
				Participants []struct{ Login string }
				Banned       []string
			}
		}
		mustDo(t, bob, banQ, room("carol"), &banned)
		if !slices.Equal(banned.BanUser.Banned, []string{"carol"}) {
			t.Fatalf("banUser(carol).banned = %q, want [carol]", banned.BanUser.Banned)
		}
		for _, p := range banned.BanUser.Participants {
			if p.Login == "carol" {
				t.Fatalf("banUser(carol).participants = %+v, still has carol", banned.BanUser.Participants)
			}
		}
		wantModeration(t, nextModeration(t, carolSub), "PARTICIPANT_BANNED", "carol", "bob")
		wantEnded(t, carolSub)
		wantModeration(t, nextModeration(t, watch), "PARTICIPANT_BANNED", "carol", "bob")

		wantCode(t, carol, "FORBIDDEN", joinRoom, map[string]any{"r": "tea-party"})
		wantCode(t, carol, "FORBIDDEN", messagesQ, map[string]any{"r": "tea-party"})
		wantCode(t, carol, "FORBIDDEN", postMessage, map[string]any{"r": "tea-party", "c": "let me in"})
		wantSubscriptionError(t, carol, "FORBIDDEN", "tea-party", nil)
		mustDo(t, bob, banQ, room("carol"), nil) // again: no change, no event
	})

	t.Run("DeleteOthersMessage", func(t *testing.T) {
		var out struct{ DeleteMessage struct{ Deleted bool } }
		mustDo(t, bob, deleteMsgQ, map[string]any{"id": posted.PostMessage.ID}, &out)
		if !out.DeleteMessage.Deleted {
			t.Fatal("a moderator's deleteMessage left the message undeleted")
		}
		if ev := nextModeration(t, watch); ev.Kind != "MESSAGE_DELETED" || ev.User.Login != "bob" || ev.By != nil {
			t.Fatalf("event = %+v, want MESSAGE_DELETED by bob, no by", ev)
		}
	})

	t.Run("RemoveEndsSubscription", func(t *testing.T) {
		daveSub := ts.live(t, dave, moderation, map[string]any{"r": "tea-party"})
		mustDo(t, bob, removeQ, room("dave"), nil)
		wantModeration(t, nextModeration(t, daveSub), "PARTICIPANT_REMOVED", "dave", "bob")
		wantEnded(t, daveSub)
		wantModeration(t, nextModeration(t, watch), "PARTICIPANT_REMOVED", "dave", "bob")
		wantCode(t, dave, "FORBIDDEN", messagesQ, map[string]any{"r": "tea-party"})
		mustDo(t, dave, joinRoom, map[string]any{"r": "tea-party"}, nil) // removed, not banned
		if ev := nextModeration(t, watch); ev.Kind != "PARTICIPANT_JOINED" || ev.User.Login != "dave" {
			t.Fatalf("event = %+v, want dave joining again", ev)
		}
	})

	t.Run("UnbanAndDismiss", func(t *testing.T) {
		var out struct{ UnbanUser struct{ Banned []string } }
		mustDo(t, bob, unbanQ, room("carol"), &out)
		if len(out.UnbanUser.Banned) != 0 {
			t.Fatalf("unbanUser(carol).banned = %q, want none", out.UnbanUser.Banned)
		}
		wantModeration(t, nextModeration(t, watch), "PARTICIPANT_UNBANNED", "carol", "bob")
		mustDo(t, carol, joinRoom, map[string]any{"r": "tea-party"}, nil)
		nextModeration(t, watch) // carol's join

		mustDo(t, alice, dismissQ, room("bob"), nil)
		wantModeration(t, nextModeration(t, watch), "MODERATOR_DISMISSED", "bob", "alice")
		wantCode(t, bob, "FORBIDDEN", banQ, room("dave"))
		wantCode(t, bob, "FORBIDDEN", removeQ, room("alice"))
	})

	t.Run("Replayed", func(t *testing.T) {
		replay := ts.live(t, alice, moderation, map[string]any{"r": "tea-party", "after": *first.Cursor})
		skip := []string{"PARTICIPANT_JOINED", "MESSAGE_DELETED"}
		wantModeration(t, nextModeration(t, replay, skip...), "PARTICIPANT_BANNED", "carol", "bob")
		wantModeration(t, nextModeration(t, replay, skip...), "PARTICIPANT_REMOVED", "dave", "bob")
		wantModeration(t, nextModeration(t, replay, skip...), "PARTICIPANT_UNBANNED", "carol", "bob")
		wantModeration(t, nextModeration(t, replay, skip...), "MODERATOR_DISMISSED", "bob", "alice")
	})
}

func TestModerationGroup(t *testing.T) { forEachStore(t, testModerationGroup) }

// testModerationGroup: a member removed from a private group keeps the
// messages of their window; a banned one reads nothing and cannot be added
// back.
func testModerationGroup(t *testing.T, cfg server.Config) {
	ts := startServer(t, cfg)
	alice, bob, carol := ts.user(t, "alice"), ts.user(t, "bob"), ts.user(t, "carol")
	mustDo(t, alice, createKind, map[string]any{"n": "secret", "k": "PRIVATE_GROUP"}, nil)
	g := func(l string) map[string]any { return map[string]any{"r": "secret", "l": l} }
	mustDo(t, alice, addMember, map[string]any{"g": "secret", "l": "bob"}, nil)
	mustDo(t, alice, addMember, map[string]any{"g": "secret", "l": "carol"}, nil)
	mustDo(t, alice, postMessage, map[string]any{"r": "secret", "c": "while bob is here"}, nil)

	mustDo(t, alice, removeQ, g("bob"), nil)
	mustDo(t, alice, postMessage, map[string]any{"r": "secret", "c": "after bob"}, nil)
	var page struct {
		Messages struct {
			Edges []struct{ Node struct{ Content string } }
		}
	}
	mustDo(t, bob, messagesQ, map[string]any{"r": "secret"}, &page)
	var contents []string
	for _, e := range page.Messages.Edges {
		contents = append(contents, e.Node.Content)
	}
	if !slices.Contains(contents, "while bob is here") || slices.Contains(contents, "after bob") {
		t.Fatalf("bob's messages after his removal = %q, want his window's only", contents)
	}
	wantCode(t, bob, "FORBIDDEN", postMessage, map[string]any{"r": "secret", "c": "still here?"})
	var seen struct{ Room *struct{ Name string } }
	mustDo(t, bob, `{ room(name: "secret") { name } }`, nil, &seen)
	if seen.Room == nil {
		t.Fatal("bob, removed, no longer sees the group he was in")
	}

	mustDo(t, alice, banQ, g("bob"), nil)
	wantCode(t, bob, "FORBIDDEN", messagesQ, map[string]any{"r": "secret"})
	// Banned, he reads nothing of the group: not even who is in it.
	wantNull(t, bob, `{ v: room(name: "secret") { name participants { login } } }`, nil)
	wantCode(t, carol, "FORBIDDEN", addMember, map[string]any{"g": "secret", "l": "bob"})
	mustDo(t, alice, unbanQ, g("bob"), nil)
	mustDo(t, carol, addMember, map[string]any{"g": "secret", "l": "bob"}, nil)
}

// A ban on one instance ends the banned user's subscription on another.
func TestClusterBan(t *testing.T) {
	cl, alice, bob := acrossCluster(t, across{})
	sub := cl.instances[1].live(t, bob, moderation, map[string]any{"r": "across"})
	mustDo(t, alice, banQ, map[string]any{"r": "across", "l": "bob"}, nil)
	wantModeration(t, nextModeration(t, sub, "PARTICIPANT_JOINED"), "PARTICIPANT_BANNED", "bob", "alice")
	wantEnded(t, sub)
	wantCode(t, cl.on(1, bob), "FORBIDDEN", joinRoom, map[string]any{"r": "across"})
}
