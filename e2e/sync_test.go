package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/killrchat/chatql/internal/chatclient"
	"github.com/killrchat/chatql/server"
)

// The sync (issue 32, item 5): one subscription over all of a user's rooms
// and inbox, resumed exactly by one cursor.

const (
	syncSub = `subscription($after: String) { sync(after: $after) { cursor caughtUp changes {
		roomEvent { kind room cursor user { login } message { id content deleted reactions { emoji count } } }
		inboxEvent { kind conversationId cursor user { login } message { id content deleted reactions { emoji count } } } } } }`
	syncCreateGroup = `mutation($n: String!) { createRoom(input: {name: $n, kind: PRIVATE_GROUP}) { name } }`
	syncAddMember   = `mutation($g: String!, $l: String!) { addGroupMember(group: $g, login: $l) { name } }`
	syncDM          = `mutation($to: String!, $c: String!) { sendDirectMessage(to: $to, content: $c) { id } }`
	syncReact       = `mutation($id: ID!, $e: String!) { addReaction(messageId: $id, emoji: $e) { id } }`
	syncChanges     = `query($since: String) { changes(since: $since) { cursor caughtUp changes {
		roomEvent { kind room cursor user { login } message { id content deleted reactions { emoji count } } }
		inboxEvent { kind conversationId cursor user { login } message { id content deleted reactions { emoji count } } } } } }`
	syncPostID = `mutation($r: String!, $c: String!) { postMessage(room: $r, content: $c) { id } }`
)

type syncMessage struct {
	ID        string
	Content   string
	Deleted   bool
	Reactions []struct {
		Emoji string
		Count int
	}
}

type syncEvent struct {
	Kind, Room, ConversationID, Cursor string
	User                               struct{ Login string }
	Message                            *syncMessage
}

type syncPage struct {
	Cursor   string
	CaughtUp bool
	Changes  []struct{ RoomEvent, InboxEvent *syncEvent }
}

// syncState is what a sync's client knows: every change it got, by key
// (once each), and the state they leave: each message as its last event
// showed it, and the rooms the user is in.
type syncState struct {
	me       string
	seen     map[string]int
	messages map[string]string
	roomOf   map[string]string
	rooms    map[string]bool
	cursor   string
	caughtUp bool
}

func newSyncState(me string) *syncState {
	return &syncState{me: me, seen: map[string]int{}, messages: map[string]string{}, roomOf: map[string]string{}, rooms: map[string]bool{}}
}

func (s *syncState) take(t *testing.T, p syncPage) {
	t.Helper()
	s.cursor, s.caughtUp = p.Cursor, s.caughtUp || p.CaughtUp
	for _, c := range p.Changes {
		ev, where := c.RoomEvent, ""
		if ev != nil {
			where = ev.Room
		} else if ev = c.InboxEvent; ev != nil {
			where = "inbox:" + ev.ConversationID
		} else {
			t.Fatal("a change with neither a room nor an inbox event")
		}
		id, _, _ := strings.Cut(ev.Cursor, ".")
		key := fmt.Sprintf("%s %s %s %s", where, ev.Kind, id, ev.User.Login)
		if ev.Kind == "ROOM_DELETED" {
			key = where + " ROOM_DELETED" // who deleted it: told live only
		}
		s.seen[key]++
		if m := ev.Message; m != nil {
			b, _ := json.Marshal(m)
			s.messages[m.ID] = string(b)
			s.roomOf[m.ID] = where
		}
		if c.RoomEvent != nil && ev.User.Login == s.me {
			switch ev.Kind {
			case "PARTICIPANT_JOINED":
				s.rooms[ev.Room] = true
			case "PARTICIPANT_LEFT", "PARTICIPANT_REMOVED", "PARTICIPANT_BANNED":
				delete(s.rooms, ev.Room)
			}
		}
		if ev.Kind == "ROOM_DELETED" {
			// The room is gone, and what the client knew of it.
			delete(s.rooms, ev.Room)
			for k := range s.seen {
				if strings.HasPrefix(k, ev.Room+" ") && !strings.HasSuffix(k, " ROOM_DELETED") {
					delete(s.seen, k)
				}
			}
			for id, room := range s.roomOf {
				if room == ev.Room {
					delete(s.messages, id)
				}
			}
		}
	}
}

// openSync opens c's sync after the cursor (nil: fresh).
func openSync(t *testing.T, c *chatclient.Client, after any) *chatclient.Subscription {
	t.Helper()
	sub, err := c.Subscribe(testContext(t), chatclient.GraphQLTransportWS, syncSub, map[string]any{"after": after})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Close() })
	return sub
}

// readSync reads sub's pages into s until done says so.
func readSync(t *testing.T, sub *chatclient.Subscription, s *syncState, done func() bool) {
	t.Helper()
	for !done() {
		var out struct{ Sync syncPage }
		nextData(t, sub, &out)
		s.take(t, out.Sync)
	}
}

func TestSyncResumesEveryChangeOnce(t *testing.T) {
	forEachStore(t, func(t *testing.T, cfg server.Config) {
		ts := startServer(t, cfg)
		syncEveryChangeOnce(t, []*testServer{ts}, func(i int, c *chatclient.Client) *chatclient.Client { return c })
	})
}

func TestSyncResumesOnAnotherInstance(t *testing.T) {
	cl := startCluster(t, 2, redisURL(t))
	syncEveryChangeOnce(t, cl.instances, cl.on)
}

// syncEveryChangeOnce: dana's online client syncs throughout on the first
// instance; her offline client syncs, stops, and resumes on the last
// instance after 50 rooms changed (posts, edits, deletes, reactions,
// joins, leaves, bans, her own joins and leave, a group she is added to,
// direct messages). It gets every change once, the same changes as the
// online one, and ends in the same state.
func syncEveryChangeOnce(t *testing.T, instances []*testServer, on func(int, *chatclient.Client) *chatclient.Client) {
	const rooms = 50
	first := instances[0]
	olga, eve := first.user(t, "olga"), first.user(t, "eve")
	dana := first.user(t, "dana")
	name := func(i int) string { return fmt.Sprintf("room-%02d", i) }
	for i := range rooms {
		mustDo(t, olga, createRoom, map[string]any{"n": name(i)}, nil)
		if i < 45 {
			mustDo(t, dana, joinRoom, map[string]any{"r": name(i)}, nil)
		}
	}
	mustDo(t, dana, createRoom, map[string]any{"n": "danas-own"}, nil)

	online := newSyncState("dana")
	onlineSub := openSync(t, dana, nil)
	readSync(t, onlineSub, online, func() bool { return online.caughtUp })
	offline := newSyncState("dana")
	offlineSub := openSync(t, dana, nil)
	readSync(t, offlineSub, offline, func() bool { return offline.caughtUp })
	offlineSub.Close()
	for k, v := range online.seen {
		t.Fatalf("a fresh sync delivered %s (%d)", k, v)
	}

	// While the offline client is away.
	for i := range rooms {
		r := name(i)
		var posted struct{ PostMessage struct{ ID string } }
		mustDo(t, olga, syncPostID, map[string]any{"r": r, "c": "hello " + r}, &posted)
		id := posted.PostMessage.ID
		mustDo(t, olga, syncPostID, map[string]any{"r": r, "c": "second " + r}, nil)
		switch i % 5 {
		case 0:
			mustDo(t, olga, editQ, map[string]any{"id": id, "c": "edited " + r}, nil)
		case 1:
			mustDo(t, olga, deleteQ, map[string]any{"id": id}, nil)
		case 2:
			mustDo(t, olga, syncReact, map[string]any{"id": id, "e": "👍"}, nil)
		case 3:
			mustDo(t, eve, joinRoom, map[string]any{"r": r}, nil)
			mustDo(t, eve, leaveRoom, map[string]any{"r": r}, nil)
		case 4:
			mustDo(t, eve, joinRoom, map[string]any{"r": r}, nil)
			mustDo(t, olga, banQ, map[string]any{"r": r, "l": "eve"}, nil)
		}
	}
	mustDo(t, dana, joinRoom, map[string]any{"r": name(46)}, nil) // joined while the other client is away
	mustDo(t, olga, syncPostID, map[string]any{"r": name(46), "c": "welcome"}, nil)
	mustDo(t, dana, leaveRoom, map[string]any{"r": name(3)}, nil)         // left
	mustDo(t, olga, banQ, map[string]any{"r": name(4), "l": "dana"}, nil) // banned
	mustDo(t, dana, leaveRoom, map[string]any{"r": name(5)}, nil)         // left and back
	mustDo(t, olga, syncPostID, map[string]any{"r": name(5), "c": "while dana was away"}, nil)
	mustDo(t, dana, joinRoom, map[string]any{"r": name(5)}, nil)
	mustDo(t, olga, `mutation($r: String!) { deleteRoom(room: $r) { name } }`, map[string]any{"r": name(7)}, nil)
	mustDo(t, olga, syncCreateGroup, map[string]any{"n": "olgas-group"}, nil)
	mustDo(t, olga, syncPostID, map[string]any{"r": "olgas-group", "c": "before dana"}, nil)
	mustDo(t, olga, syncAddMember, map[string]any{"g": "olgas-group", "l": "dana"}, nil)
	mustDo(t, olga, syncPostID, map[string]any{"r": "olgas-group", "c": "with dana"}, nil)
	mustDo(t, olga, syncDM, map[string]any{"to": "dana", "c": "psst"}, nil)
	mustDo(t, dana, syncPostID, map[string]any{"r": "danas-own", "c": "note to self"}, nil)

	// A polling client, from the same cursor.
	polled := newSyncState("dana")
	since := offline.cursor
	for pages := 0; !polled.caughtUp; pages++ {
		var out struct{ Changes syncPage }
		mustDo(t, on(len(instances)-1, dana), syncChanges, map[string]any{"since": since}, &out)
		if pages > 20 || len(out.Changes.Changes) > 50 || !out.Changes.CaughtUp && len(out.Changes.Changes) != 50 {
			t.Fatalf("page %d of changes: %d changes, caught up %v", pages, len(out.Changes.Changes), out.Changes.CaughtUp)
		}
		polled.take(t, out.Changes)
		since = out.Changes.Cursor
	}

	// The offline client resumes, on another instance when there is one.
	resumed := openSync(t, on(len(instances)-1, dana), offline.cursor)
	offline.caughtUp = false
	readSync(t, resumed, offline, func() bool { return offline.caughtUp })
	readSync(t, onlineSub, online, func() bool {
		for k := range offline.seen {
			if online.seen[k] == 0 {
				return false
			}
		}
		return true
	})

	for k, n := range offline.seen {
		if n != 1 {
			t.Errorf("the resumed sync delivered %s %d times", k, n)
		}
		if online.seen[k] != 1 {
			t.Errorf("the online sync delivered %s %d times, the resumed one once", k, online.seen[k])
		}
	}
	for k := range online.seen {
		if offline.seen[k] == 0 {
			t.Errorf("the online sync delivered %s, the resumed one did not", k)
		}
	}
	if !maps.Equal(polled.seen, offline.seen) || !maps.Equal(polled.messages, offline.messages) {
		t.Errorf("polling changes got %d changes, the resumed sync %d; or their messages differ", len(polled.seen), len(offline.seen))
	}
	for id, m := range online.messages {
		if offline.messages[id] != m {
			t.Errorf("message %s: online %s, resumed %s", id, m, offline.messages[id])
		}
	}
	count := func(kind, where string) (n int) {
		for k := range offline.seen {
			if strings.HasPrefix(k, where) && strings.Contains(k, " "+kind+" ") {
				n++
			}
		}
		return n
	}
	// The 45 rooms she was in, 2 posts each (those she left or was
	// banned from after), what followed her join of room-46, the post
	// while she was away from room-05; room-07 is gone with its events.
	for kind, want := range map[string]int{"MESSAGE_EDITED": 9, "MESSAGE_DELETED": 9, "REACTION_CHANGED": 9 - 1, "PARTICIPANT_BANNED": 9 + 1} {
		if got := count(kind, "room-"); got != want {
			t.Errorf("%d %s events, want %d", got, kind, want)
		}
	}
	if online.rooms[name(7)] || offline.rooms[name(7)] {
		t.Error("room-07 was deleted, and a sync kept it")
	}
	if offline.seen[name(7)+" ROOM_DELETED"] != 1 {
		t.Error("no ROOM_DELETED of room-07")
	}
	if count("MESSAGE_POSTED", name(5)+" ") != 3 || count("PARTICIPANT_JOINED", name(5)+" ") != 1 {
		t.Error("room-05, left and joined again: want its 3 posts and dana's join back")
	}
	for _, want := range []string{"room-03 PARTICIPANT_LEFT", "room-04 PARTICIPANT_BANNED", "room-46 PARTICIPANT_JOINED", "olgas-group PARTICIPANT_JOINED", "inbox:olgas-group ADDED_TO_GROUP", "danas-own MESSAGE_POSTED"} {
		room, kind, _ := strings.Cut(want, " ")
		if count(kind, room+" ") == 0 {
			t.Errorf("no %s in %s", kind, room)
		}
	}
	if count("DIRECT_MESSAGE", "inbox:") != 1 {
		t.Errorf("%d direct messages, want 1", count("DIRECT_MESSAGE", "inbox:"))
	}
	for _, m := range offline.messages {
		if strings.Contains(m, "before dana") {
			t.Errorf("the group's message from before dana was added reached her: %s", m)
		}
	}
	if got, want := count("MESSAGE_POSTED", "room-"), 45*2+1+1-2; got != want {
		t.Errorf("%d posts of the rooms, want %d (none of room-46 from before she joined, none of room-07, deleted)", got, want)
	}

	// Both go on live, with no gap.
	mustDo(t, olga, syncPostID, map[string]any{"r": name(0), "c": "live"}, nil)
	before := len(offline.seen)
	readSync(t, resumed, offline, func() bool { return len(offline.seen) > before })
	readSync(t, onlineSub, online, func() bool { return len(online.seen) > before })
}

func TestSyncRefusesACursorItDidNotGive(t *testing.T) {
	ts := startServer(t, testConfig(t))
	dana := ts.user(t, "dana")
	for _, bad := range []string{"nope", "AQ", "f63ae290-ea28-11f1-bd77-b606e7c06077"} {
		if _, err := openSync(t, dana, bad).Next(testContext(t)); !isCode(err, "BAD_USER_INPUT") {
			t.Errorf("sync(after: %q): %v, want BAD_USER_INPUT", bad, err)
		}
	}
	for _, first := range []int{0, 51} {
		wantCode(t, dana, "BAD_USER_INPUT", `query($f: Int) { changes(first: $f) { cursor } }`, map[string]any{"f": first})
	}
	wantCode(t, dana, "BAD_USER_INPUT", `query { changes(since: "nope") { cursor } }`, nil)
	wantCode(t, dana.WithToken(""), "UNAUTHENTICATED", `query { changes { cursor } }`, nil)
	anonymous := dana.WithToken("")
	sub, err := anonymous.Subscribe(testContext(t), chatclient.GraphQLTransportWS, syncSub, nil)
	if err == nil {
		_, err = sub.Next(testContext(t))
		sub.Close()
	}
	if !isCode(err, "UNAUTHENTICATED") {
		t.Errorf("an anonymous sync: %v, want UNAUTHENTICATED", err)
	}
}
