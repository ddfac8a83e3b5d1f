package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/killrchat/chatql/internal/chatclient"
	"github.com/killrchat/chatql/server"
	"github.com/killrchat/chatql/store"
)

// The event log end to end: a subscriber that was away, or whose instance
// lost Redis for a while, ends with every durable change exactly once, in
// order, whatever its kind.

const inboxAfter = `subscription($after: String) { inboxEvents(after: $after) { kind conversationId cursor message { content } } }`

// describe writes an event as "KIND user content" for comparing sequences.
func describe(ev roomEvent) string {
	s := ev.Kind + " " + ev.User.Login
	if ev.Message != nil {
		s += " " + ev.Message.Content
	}
	return s
}

// readEvents reads n events of sub as describe writes them, and the last
// cursor among them.
func readEvents(t *testing.T, sub *chatclient.Subscription, n int) (got []string, cursor string) {
	t.Helper()
	for range n {
		ev := nextEvent(t, sub)
		got = append(got, describe(ev))
		if ev.Cursor != nil {
			cursor = *ev.Cursor
		}
	}
	return got, cursor
}

func sameEvents(t *testing.T, who string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s got\n  %s\nwant\n  %s", who, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// roomChanges makes one change of every kind the log keeps, as alice
// (poster of m0, which she hides) with carol leaving and erin joining.
func roomChanges(t *testing.T, alice, carol, erin *chatclient.Client, room, m0 string) []string {
	t.Helper()
	mustDo(t, alice, postMessage, map[string]any{"r": room, "c": "m1"}, nil)
	mustDo(t, alice, hideQ, map[string]any{"id": m0}, nil)
	mustDo(t, carol, leaveRoom, map[string]any{"r": room}, nil)
	mustDo(t, erin, joinRoom, map[string]any{"r": room}, nil)
	mustDo(t, alice, postMessage, map[string]any{"r": room, "c": "m2"}, nil)
	return []string{
		"MESSAGE_POSTED alice m1",
		"MESSAGE_HIDDEN alice ", // a hidden message's content is blank to others
		"PARTICIPANT_LEFT carol carol left the room",
		"PARTICIPANT_JOINED erin erin joined the room",
		"MESSAGE_POSTED alice m2",
	}
}

func TestResumeReplaysEveryEventKind(t *testing.T) {
	forEachStore(t, testResumeReplaysEveryEventKind)
}

// A subscriber away while every kind of change happens resumes from its
// cursor with all of them, once each, then goes live; one who left while
// away replays up to their own leave, and no further.
func testResumeReplaysEveryEventKind(t *testing.T, cfg server.Config) {
	ts := startServer(t, cfg)
	alice, bob, carol, erin := ts.user(t, "alice"), ts.user(t, "bob"), ts.user(t, "carol"), ts.user(t, "erin")
	mustDo(t, alice, createRoom, map[string]any{"n": "away"}, nil)
	for _, c := range []*chatclient.Client{bob, carol} {
		mustDo(t, c, joinRoom, map[string]any{"r": "away"}, nil)
	}
	var m0 struct{ PostMessage struct{ ID string } }
	mustDo(t, alice, postMessage, map[string]any{"r": "away", "c": "m0"}, &m0)
	// Each learns a cursor and goes away.
	var cursors []string
	for i, c := range []*chatclient.Client{bob, carol} {
		sub := ts.subscribe(t, c, chatclient.GraphQLTransportWS, "away", m0.PostMessage.ID)
		mustDo(t, alice, postMessage, map[string]any{"r": "away", "c": []string{"seen by bob", "seen by carol"}[i]}, nil)
		_, cursor := readEvents(t, sub, 1)
		cursors = append(cursors, cursor)
		sub.Close()
	}
	want := roomChanges(t, alice, carol, erin, "away", m0.PostMessage.ID)

	back := ts.subscribe(t, bob, chatclient.GraphQLTransportWS, "away", cursors[0])
	got, _ := readEvents(t, back, len(want)+1) // carol's "seen by" came after bob's cursor
	sameEvents(t, "bob, back", got, append([]string{"MESSAGE_POSTED alice seen by carol"}, want...))
	mustDo(t, alice, postMessage, map[string]any{"r": "away", "c": "live"}, nil)
	got, _ = readEvents(t, back, 1)
	sameEvents(t, "bob, live", got, []string{"MESSAGE_POSTED alice live"})

	// carol left while away: she no longer takes part, so her resume is
	// refused.
	sub, err := carol.Subscribe(testContext(t), chatclient.GraphQLTransportWS, roomEvents, map[string]any{"r": "away", "after": cursors[1]})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if resp, err := sub.Next(testContext(t)); err == nil || !strings.Contains(fmt.Sprint(err), "not a participant") {
		t.Fatalf("carol resumed after leaving: %s, %v", resp.Data, err)
	}
}

func TestInboxResume(t *testing.T) { forEachStore(t, testInboxResume) }

// inboxEvents(after:) replays what reached the inbox while its owner was
// away: direct messages, unread changes, groups joined; then goes live.
func testInboxResume(t *testing.T, cfg server.Config) {
	ts := startServer(t, cfg)
	alice, bob := ts.user(t, "alice"), ts.user(t, "bob")
	started := ts.Streams().Started()
	sub, err := bob.Subscribe(testContext(t), chatclient.GraphQLTransportWS, inboxAfter, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return ts.Streams().Started() > started })
	mustDo(t, alice, sendDirect, map[string]any{"to": "bob", "c": "first"}, nil)
	resp, err := sub.Next(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	var first struct{ InboxEvents struct{ Cursor string } }
	if err := json.Unmarshal(resp.Data, &first); err != nil || first.InboxEvents.Cursor == "" {
		t.Fatalf("first inbox event %s: %v", resp.Data, err)
	}
	sub.Close()

	mustDo(t, alice, sendDirect, map[string]any{"to": "bob", "c": "while away"}, nil)
	mustDo(t, alice, createKind, map[string]any{"n": "club", "k": "PRIVATE_GROUP"}, nil)
	mustDo(t, alice, addMember, map[string]any{"g": "club", "l": "bob"}, nil)
	mustDo(t, alice, postMessage, map[string]any{"r": "club", "c": "welcome"}, nil)

	back, err := bob.Subscribe(testContext(t), chatclient.GraphQLTransportWS, inboxAfter, map[string]any{"after": first.InboxEvents.Cursor})
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	next := func() string {
		t.Helper()
		resp, err := back.Next(testContext(t))
		if err != nil {
			t.Fatal(err)
		}
		var out struct {
			InboxEvents struct {
				Kind, ConversationID, Cursor string
				Message                      *struct{ Content string }
			}
		}
		if err := json.Unmarshal(resp.Data, &out); err != nil {
			t.Fatal(err)
		}
		ev := out.InboxEvents
		if ev.ConversationID == "" || ev.Cursor == "" {
			t.Errorf("inbox event without a conversation or cursor: %s", resp.Data)
		}
		s := ev.Kind + " " + ev.ConversationID
		if ev.Message != nil {
			s += " " + ev.Message.Content
		}
		return s
	}
	var got []string
	for range 3 {
		got = append(got, next())
	}
	sameEvents(t, "bob's inbox", got, []string{
		"DIRECT_MESSAGE alice:bob while away",
		"ADDED_TO_GROUP club alice added bob to the group",
		"UNREAD_CHANGED club welcome",
	})
	mustDo(t, alice, sendDirect, map[string]any{"to": "bob", "c": "live"}, nil)
	sameEvents(t, "bob's inbox, live", []string{next()}, []string{"DIRECT_MESSAGE alice:bob live"})
}

// TestClusterResyncsEveryEventKind stops Redis while every kind of change
// is made on one instance: subscribers on the other, which stay connected,
// end with every change exactly once, in order, caught up from the log;
// the one who left in the outage ends at their leave.
func TestClusterResyncsEveryEventKind(t *testing.T) {
	redisURL(t)
	rs := startPrivateRedis(t)
	cl, alice, bob := acrossCluster(t, across{redisURL: rs.url(), room: "outage"})
	a, b := cl.instances[0], cl.instances[1]
	erin, carol := a.user(t, "erin"), cl.on(1, a.user(t, "carol"))
	mustDo(t, carol, joinRoom, map[string]any{"r": "outage"}, nil)
	stays := b.subscribe(t, bob, chatclient.GraphQLTransportWS, "outage", nil)
	leaves := b.subscribe(t, carol, chatclient.GraphQLTransportWS, "outage", nil)
	var m0 struct{ PostMessage struct{ ID string } }
	mustDo(t, alice, postMessage, map[string]any{"r": "outage", "c": "m0"}, &m0)
	for _, sub := range []*chatclient.Subscription{stays, leaves} {
		got := []string{describe(nextAfterJoins(t, sub))}
		sameEvents(t, "before the outage", got, []string{"MESSAGE_POSTED alice m0"})
	}

	rs.stop(t)
	// carol leaves through instance 0: instance 1 learns of it from the log.
	want := roomChanges(t, alice, cl.on(0, carol), erin, "outage", m0.PostMessage.ID)
	rs.start(t)
	mustDo(t, alice, postMessage, map[string]any{"r": "outage", "c": "after"}, nil)

	got, _ := readEvents(t, stays, len(want)+1)
	sameEvents(t, "bob, connected through the outage", got, append(want, "MESSAGE_POSTED alice after"))
	got, _ = readEvents(t, leaves, 3)
	sameEvents(t, "carol, who left in the outage", got, want[:3])
	wantEnded(t, leaves)
}

// TestClusterRoomDeletedDuringOutage: a room deleted while Redis is down
// takes its log with it; the subscriber on the other instance learns of it
// when Redis returns, with ROOM_DELETED, and its stream ends.
func TestClusterRoomDeletedDuringOutage(t *testing.T) {
	redisURL(t)
	rs := startPrivateRedis(t)
	cl, alice, bob := acrossCluster(t, across{redisURL: rs.url(), room: "doomed"})
	sub := cl.instances[1].subscribe(t, bob, chatclient.GraphQLTransportWS, "doomed", nil)

	rs.stop(t)
	mustDo(t, alice, deleteRoom, map[string]any{"r": "doomed"}, nil)
	rs.start(t)

	if ev := nextAfterJoins(t, sub); ev.Kind != "ROOM_DELETED" || ev.Cursor != nil {
		t.Fatalf("after the outage: %+v, want ROOM_DELETED without a cursor", ev)
	}
	wantEnded(t, sub)
}

// TestDeletedGroupLeavesNoInboxEntry: deleting a private group removes it
// from the inbox of members who had left too, and a later group of the
// same name shows them nothing of it.
func TestDeletedGroupLeavesNoInboxEntry(t *testing.T) {
	forEachStore(t, testDeletedGroupLeavesNoInboxEntry)
}

func testDeletedGroupLeavesNoInboxEntry(t *testing.T, cfg server.Config) {
	ts := startServer(t, cfg)
	alice, bob := ts.user(t, "alice"), ts.user(t, "bob")
	mustDo(t, alice, createKind, map[string]any{"n": "cabal", "k": "PRIVATE_GROUP"}, nil)
	mustDo(t, alice, addMember, map[string]any{"g": "cabal", "l": "bob"}, nil)
	mustDo(t, alice, postMessage, map[string]any{"r": "cabal", "c": "the secret plan"}, nil)
	mustDo(t, bob, leaveRoom, map[string]any{"r": "cabal"}, nil)
	if _, ok := inbox(t, bob)["cabal"]; !ok {
		t.Fatal("bob's inbox lost the group when he left; it should keep it until the group is deleted")
	}
	mustDo(t, alice, deleteRoom, map[string]any{"r": "cabal"}, nil)
	if e, ok := inbox(t, bob)["cabal"]; ok {
		t.Fatalf("bob's inbox keeps the deleted group: %+v", e)
	}
	mustDo(t, alice, createKind, map[string]any{"n": "cabal", "k": "PRIVATE_GROUP"}, nil)
	var out struct{ Room *struct{ Name string } }
	mustDo(t, bob, `query($n: String!) { room(name: $n) { name } }`, map[string]any{"n": "cabal"}, &out)
	if out.Room != nil {
		t.Fatalf("bob sees the new group of the same name: %+v", out.Room)
	}
	if _, ok := inbox(t, bob)["cabal"]; ok {
		t.Fatal("the new group is in bob's inbox")
	}
}

func TestResumeUnderConcurrentPosts(t *testing.T) { forEachStore(t, testResumeUnderConcurrentPosts) }

// testResumeUnderConcurrentPosts: with eight users posting to one room at
// once, a subscriber gets the posts in the order of their ids (the log's),
// and one that drops its subscription halfway and resumes after the last
// cursor it got has every post once: nothing missed, nothing twice. Their
// ids are taken before their writes, which end in any order: published as
// they ended, a fifth of them came after a greater id, and such a resume
// lost or repeated posts.
func testResumeUnderConcurrentPosts(t *testing.T, cfg server.Config) {
	ts := startServer(t, cfg)
	alice, bob := ts.user(t, "alice"), ts.user(t, "bob")
	mustDo(t, alice, createRoom, map[string]any{"n": "busy"}, nil)
	mustDo(t, bob, joinRoom, map[string]any{"r": "busy"}, nil)
	var posters []*chatclient.Client
	for i := range 8 {
		c := ts.user(t, fmt.Sprintf("poster%d", i))
		mustDo(t, c, joinRoom, map[string]any{"r": "busy"}, nil)
		posters = append(posters, c)
	}
	stays := ts.subscribe(t, alice, chatclient.GraphQLTransportWS, "busy", nil)
	drops := ts.subscribe(t, bob, chatclient.GraphQLTransportWS, "busy", nil)
	const each = 40
	total := len(posters) * each
	var wg sync.WaitGroup
	for i, c := range posters {
		wg.Go(func() {
			for k := range each {
				if err := c.Do(testContext(t), postMessage, map[string]any{"r": "busy", "c": fmt.Sprintf("%d.%d", i, k)}, nil); err != nil {
					t.Errorf("post %d.%d: %v", i, k, err)
				}
			}
		})
	}
	defer wg.Wait()

	// posts reads sub's posts until it has n, in the order they came, which
	// must be the order of their ids if inOrder.
	posts := func(name string, sub *chatclient.Subscription, n int, inOrder bool) (contents []string, cursor string) {
		t.Helper()
		var last store.MessageID
		for len(contents) < n {
			ev := nextEvent(t, sub)
			if ev.Kind != "MESSAGE_POSTED" {
				continue
			}
			id, err := store.ParseMessageID(*ev.Cursor)
			if err != nil {
				t.Fatal(err)
			}
			if inOrder && id.Compare(last) <= 0 {
				t.Fatalf("%s: post %s (%q) came after %s, a greater id", name, id, ev.Message.Content, last)
			}
			last, cursor = id, *ev.Cursor
			contents = append(contents, ev.Message.Content)
		}
		return contents, cursor
	}
	before, cursor := posts("dropped", drops, total/2, true)
	drops.Close()
	resumed := ts.subscribe(t, bob, chatclient.GraphQLTransportWS, "busy", cursor)
	// Not in order: a post written while the resumed stream read the log
	// can come live after a greater one the log had (see README).
	after, _ := posts("resumed", resumed, total-len(before), false)
	all, _ := posts("stayed", stays, total, true)

	got := map[string]int{}
	for _, c := range append(before, after...) {
		got[c]++
	}
	for _, c := range all {
		if got[c] != 1 {
			t.Errorf("post %q reached the resumed subscriber %d times; want once", c, got[c])
		}
	}
	if len(got) != total {
		t.Errorf("the resumed subscriber got %d distinct posts; want %d", len(got), total)
	}
}
