package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

// The event logs: every change is logged by the operation that makes it,
// once, and read back oldest first after a cursor, joined with its message
// as it is now.

// eventLine writes an event as "KIND user content" (content of its message,
// "-" for none), for comparing logs.
func eventLine(ev store.Event) string {
	content := "-"
	if ev.Message != nil {
		content = ev.Message.Content
		if ev.Message.Hidden {
			content += " (hidden)"
		}
	}
	return fmt.Sprintf("%s %s %s", ev.Kind, ev.User.Login, content)
}

func eventLines(events []store.Event) []string {
	lines := make([]string, len(events))
	for i, ev := range events {
		lines[i] = eventLine(ev)
	}
	return lines
}

func checkLog(t *testing.T, what string, got []store.Event, want ...string) {
	t.Helper()
	if g := eventLines(got); strings.Join(g, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\n got  %q\n want %q", what, g, want)
	}
}

func roomLog(t *testing.T, s store.EventLog, room string, after store.MessageID) []store.Event {
	t.Helper()
	return readLog(t, "RoomEvents", s.RoomEvents, room, after)
}

func inboxLog(t *testing.T, s store.EventLog, login string, after store.MessageID) []store.Event {
	t.Helper()
	return readLog(t, "InboxEvents", s.InboxEvents, login, after)
}

// readLog reads a whole log after the cursor with read.
func readLog(t *testing.T, what string, read func(context.Context, string, store.MessageID, int) ([]store.Event, error), owner string, after store.MessageID) []store.Event {
	t.Helper()
	events, err := read(newContext(t), owner, after, 1000)
	if err != nil {
		t.Fatalf("%s(%q) = %v", what, owner, err)
	}
	return events
}

// testRoomLog makes one change of each kind in a public room and reads
// them back, whole and paged, with the returned events' ids.
func testRoomLog(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	alice, room := chatRoom(t, ctx, s, "log")
	bob := mustCreateUser(t, ctx, s, "bob").UserRef
	_, joined, err := s.JoinRoom(ctx, room.Name, bob)
	if err != nil || joined.Kind != store.ParticipantJoined || joined.Message == nil || joined.ID != joined.Message.ID {
		t.Fatalf("JoinRoom = %+v, %v; want its ParticipantJoined event", joined, err)
	}
	if _, again, err := s.JoinRoom(ctx, room.Name, bob); err != nil || !again.ID.IsZero() {
		t.Fatalf("JoinRoom again = %+v, %v; want no event", again, err)
	}
	m := mustPost(t, ctx, s, room.Name, store.NewMessageID(), bob, "hello")
	hid, err := s.HideMessage(ctx, m, alice.UserRef)
	if err != nil || hid.Kind != store.MessageHidden || hid.ID.Compare(m.ID) <= 0 || hid.User != alice.UserRef {
		t.Fatalf("HideMessage = %+v, %v; want a MessageHidden event by alice, after the message", hid, err)
	}
	left, err := s.LeaveRoom(ctx, room.Name, bob)
	if err != nil || left.Kind != store.ParticipantLeft {
		t.Fatalf("LeaveRoom = %+v, %v; want its ParticipantLeft event", left, err)
	}
	all := roomLog(t, s, room.Name, store.MessageID{})
	checkLog(t, "the room's log", all,
		"PARTICIPANT_JOINED "+bob.Login+" "+bob.Login+" joined the room",
		"MESSAGE_POSTED "+bob.Login+" hello (hidden)", // as it is now
		"MESSAGE_HIDDEN "+alice.Login+" hello (hidden)",
		"PARTICIPANT_LEFT "+bob.Login+" "+bob.Login+" left the room")
	ids := []store.MessageID{joined.ID, m.ID, hid.ID, left.ID}
	for i, ev := range all {
		if i < len(ids) && ev.ID != ids[i] {
			t.Errorf("event %d has id %v, want %v (the id its operation returned)", i, ev.ID, ids[i])
		}
	}
	checkLog(t, "after the post", roomLog(t, s, room.Name, m.ID), eventLines(all[2:])...)
	// Paged one at a time, the log is the same.
	var paged []store.Event
	for after := (store.MessageID{}); ; {
		page, err := s.RoomEvents(ctx, room.Name, after, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		paged = append(paged, page...)
		after = page[0].ID
	}
	checkLog(t, "paged by 1", paged, eventLines(all)...)
}

// testRoomLogAcrossDays pages a log whose events lie in several days.
func testRoomLogAcrossDays(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	author, room := chatRoom(t, ctx, s, "days")
	var want []string
	for i, ago := range []time.Duration{72 * time.Hour, 71 * time.Hour, 24 * time.Hour, time.Hour, 0} {
		id := store.MessageIDAt(time.Now().Add(-ago))
		mustPost(t, ctx, s, room.Name, id, author.UserRef, fmt.Sprint("day ", i))
		want = append(want, fmt.Sprintf("MESSAGE_POSTED %s day %d", author.Login, i))
	}
	for _, limit := range []int{1, 2, 3, 10} {
		var got []store.Event
		for after := (store.MessageID{}); len(got) < 20; {
			page, err := s.RoomEvents(ctx, room.Name, after, limit)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, page...)
			if len(page) < limit {
				break
			}
			after = page[len(page)-1].ID
		}
		checkLog(t, fmt.Sprintf("paged by %d", limit), got, want...)
	}
}

// testRoomLogDeleted: a deleted room's log goes with it, and a room of the
// same name starts a log of its own.
func testRoomLogDeleted(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	creator, room := chatRoom(t, ctx, s, "gone")
	mustJoinRoom(t, ctx, s, room.Name, mustCreateUser(t, ctx, s, "joiner").UserRef)
	mustPost(t, ctx, s, room.Name, store.NewMessageID(), creator.UserRef, "before")
	_, ev, err := s.DeleteRoom(ctx, room.Name, creator.UserRef)
	if err != nil || ev.Kind != store.RoomDeleted || ev.User.Login != creator.Login {
		t.Fatalf("DeleteRoom = %+v, %v; want its RoomDeleted event", ev, err)
	}
	checkLog(t, "the deleted room's log", roomLog(t, s, room.Name, store.MessageID{}))
	if err := s.CreateRoom(ctx, newRoom(room.Name, creator.UserRef)); err != nil {
		t.Fatal(err)
	}
	mustPost(t, ctx, s, room.Name, store.NewMessageID(), creator.UserRef, "after")
	checkLog(t, "the new room's log", roomLog(t, s, room.Name, store.MessageID{}), "MESSAGE_POSTED "+creator.Login+" after")
}

// testRoomLogConcurrent: concurrent posts are each logged once.
func testRoomLogConcurrent(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	author, room := chatRoom(t, ctx, s, "busy")
	const posts = 50
	var wg sync.WaitGroup
	for i := range posts {
		wg.Go(func() {
			m := store.Message{Room: room.Name, ID: store.NewMessageID(), Author: author.UserRef, Content: fmt.Sprint(i)}
			if err := s.PostMessage(ctx, m); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	events := roomLog(t, s, room.Name, store.MessageID{})
	seen := map[string]bool{}
	for i, ev := range events {
		if ev.Kind != store.MessagePosted || ev.Message == nil || seen[ev.Message.Content] {
			t.Fatalf("event %d: %s (a repeat or not a post)", i, eventLine(ev))
		}
		seen[ev.Message.Content] = true
		if i > 0 && events[i-1].ID.Compare(ev.ID) >= 0 {
			t.Fatalf("events %d and %d out of order", i-1, i)
		}
	}
	if len(seen) != posts {
		t.Fatalf("%d posts logged, want %d", len(seen), posts)
	}
}

// testGroupLogs: a group's changes in its log and in its members' inbox
// logs; deleting it removes every member's and former member's entry, and
// their inbox logs no longer show its messages.
func testGroupLogs(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	alice := mustCreateUser(t, ctx, s, "alice").UserRef
	bob := mustCreateUser(t, ctx, s, "bob").UserRef
	g := mustCreateGroup(t, ctx, s, "logs", alice)
	now := time.Now()
	_, added, err := s.AddGroupMember(ctx, g.Name, alice, bob, now)
	if err != nil || added.Kind != store.ParticipantJoined || added.User != bob {
		t.Fatalf("AddGroupMember = %+v, %v; want a ParticipantJoined event of bob", added, err)
	}
	if _, again, err := s.AddGroupMember(ctx, g.Name, alice, bob, now); err != nil || !again.ID.IsZero() {
		t.Fatalf("AddGroupMember again = %+v, %v; want no event", again, err)
	}
	m := store.Message{Room: g.Name, ID: store.NewMessageID(), Author: alice, Content: "plan"}
	if err := s.PostGroupMessage(ctx, m, []store.UserRef{alice, bob}); err != nil {
		t.Fatal(err)
	}
	left, err := s.LeaveGroup(ctx, g.Name, bob, time.Now())
	if err != nil || left.Kind != store.ParticipantLeft {
		t.Fatalf("LeaveGroup = %+v, %v", left, err)
	}
	addedText := alice.Login + " added " + bob.Login + " to the group"
	checkLog(t, "the group's log", roomLog(t, s, g.Name, store.MessageID{}),
		"PARTICIPANT_JOINED "+bob.Login+" "+addedText,
		"MESSAGE_POSTED "+alice.Login+" plan",
		"PARTICIPANT_LEFT "+bob.Login+" "+bob.Login+" left the room")
	checkLog(t, "bob's inbox log", inboxLog(t, s, bob.Login, store.MessageID{}),
		"ADDED_TO_GROUP "+alice.Login+" "+addedText,
		"UNREAD_CHANGED "+alice.Login+" plan")
	checkLog(t, "alice's inbox log (her own post is not unread)", inboxLog(t, s, alice.Login, store.MessageID{}))

	if _, _, err := s.DeleteRoom(ctx, g.Name, alice); err != nil {
		t.Fatal(err)
	}
	for _, u := range []store.UserRef{alice, bob} {
		if c, err := s.Conversation(ctx, u.Login, g.Name); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s's entry of the deleted group = %+v, %v; want ErrNotFound", u.Login, c, err)
		}
		inbox, err := s.Inbox(ctx, u.Login)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range inbox {
			if c.ID == g.Name {
				t.Errorf("%s's inbox lists the deleted group: %+v", u.Login, c)
			}
		}
	}
	checkLog(t, "bob's inbox log after the delete", inboxLog(t, s, bob.Login, store.MessageID{}))
	// A new group of the same name is not bob's.
	if err := s.CreateRoom(ctx, newGroup(g.Name, alice, time.Now())); err != nil {
		t.Fatal(err)
	}
	if c, err := s.Conversation(ctx, bob.Login, g.Name); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("bob's entry of the new group of the same name = %+v, %v; want ErrNotFound", c, err)
	}
}

// testInboxLogs: direct messages in both inbox logs, mark-reads in the
// reader's only.
func testInboxLogs(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	alice, bob, id := dmUsers(t, ctx, s)
	m := mustSendDirect(t, ctx, s, alice, bob, store.NewMessageID(), "hi")
	read, err := s.MarkRead(ctx, bob.Login, id, m.ID)
	if err != nil || read.Kind != store.UnreadChanged || read.Room != id || read.Message != nil {
		t.Fatalf("MarkRead = %+v, %v; want an UnreadChanged event of the conversation, without a message", read, err)
	}
	checkLog(t, "bob's inbox log", inboxLog(t, s, bob.Login, store.MessageID{}),
		"DIRECT_MESSAGE "+alice.Login+" hi", "UNREAD_CHANGED "+bob.Login+" -")
	checkLog(t, "alice's inbox log", inboxLog(t, s, alice.Login, store.MessageID{}), "DIRECT_MESSAGE "+alice.Login+" hi")
	for _, ev := range inboxLog(t, s, bob.Login, store.MessageID{}) {
		if ev.Room != id {
			t.Errorf("inbox event %s is of conversation %q, want %q", eventLine(ev), ev.Room, id)
		}
	}
	if hid, err := s.HideMessage(ctx, m, alice); err != nil || !hid.ID.IsZero() {
		t.Errorf("HideMessage of a direct message = %+v, %v; want no room event", hid, err)
	}
}
