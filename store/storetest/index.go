package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

// mustMessage reads a message by id.
func mustMessage(t *testing.T, ctx context.Context, s store.MessageIndex, id store.MessageID) store.Message {
	t.Helper()
	m, err := s.Message(ctx, id)
	if err != nil {
		t.Fatalf("Message(%v) = %v, want nil", id, err)
	}
	return m
}

// pageByAuthor reads login's messages older than before, limit at a time.
func pageByAuthor(t *testing.T, ctx context.Context, s store.MessageIndex, login string, before store.MessageID, limit int) []store.Message {
	t.Helper()
	return pageDown(t, fmt.Sprintf("MessagesByAuthor(%q)", login), before, limit, func(before store.MessageID, limit int) ([]store.Message, error) {
		return s.MessagesByAuthor(ctx, login, before, limit)
	})
}

// hidden returns m hidden.
func hidden(m store.Message) store.Message {
	m.Hidden = true
	return m
}

// testIndexMessage reads back by id messages of a room, a direct
// conversation and a group, every field included.
func testIndexMessage(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	alice, bob, _ := dmUsers(t, ctx, s)
	room := mustCreateRoom(t, ctx, s, "room", alice)
	g := mustCreateGroup(t, ctx, s, "group", alice)
	members := mustAddMember(t, ctx, s, g.Name, alice.Login, bob, time.Now()).Participants

	join := store.Message{Room: room.Name, ID: store.NewMessageID(), Author: bob, Content: bob.Login + " joined", System: true}
	if err := s.PostMessage(ctx, join); err != nil {
		t.Fatalf("PostMessage(%s) = %v, want nil", fmtMessage(join), err)
	}
	msgs := []store.Message{
		join,
		mustPost(t, ctx, s, room.Name, store.MessageIDAt(time.Now().Add(-49*time.Hour)), alice, "old, in a room"),
		mustSendDirect(t, ctx, s, alice, bob, store.NewMessageID(), "direct"),
		mustPostGroup(t, ctx, s, g.Name, store.NewMessageID(), bob, "to the group", members),
	}
	for _, want := range msgs {
		got := mustMessage(t, ctx, s, want.ID)
		if !sameMessage(got, want) {
			t.Errorf("Message(%v) = %s, want %s", want.ID, fmtMessage(got), fmtMessage(want))
		}
	}
}

func testIndexMessageNotFound(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	for _, id := range []store.MessageID{store.NewMessageID(), store.MessageIDAt(time.Now().Add(-72 * time.Hour))} {
		m, err := s.Message(ctx, id)
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Message(%v) of no message = %s, %v; want ErrNotFound", id, fmtMessage(m), err)
		}
	}
}

// testIndexByAuthor pages through an author's messages, spread over ten
// days, two rooms and a direct conversation: newest first, with no gap and
// no duplicate, and none of another author's.
func testIndexByAuthor(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	alice, bob, _ := dmUsers(t, ctx, s)
	if msgs, err := s.MessagesByAuthor(ctx, alice.Login, store.MessageID{}, 10); err != nil || len(msgs) != 0 {
		t.Errorf("MessagesByAuthor(%q) of a new user = %s, %v; want none", alice.Login, fmtMessages(msgs), err)
	}
	rooms := []string{mustCreateRoom(t, ctx, s, "one", alice).Name, mustCreateRoom(t, ctx, s, "two", alice).Name}
	mustJoinRoom(t, ctx, s, rooms[0], bob)

	times := spreadTimes(time.Now())
	var mine, bobs []store.Message
	post := map[store.MessageID]func() error{}
	for i, at := range times {
		var m store.Message
		switch i % 4 {
		case 0, 1:
			m = store.Message{Room: rooms[i%4], ID: store.MessageIDAt(at), Author: alice, Content: fmt.Sprintf("mine %02d", i)}
			post[m.ID] = func() error { return s.PostMessage(ctx, m) }
		case 2:
			m = directMessage(alice, bob, store.MessageIDAt(at), fmt.Sprintf("mine %02d, direct", i))
			post[m.ID] = func() error { return s.SendDirect(ctx, m, bob) }
		case 3: // bob's, in between
			m = store.Message{Room: rooms[0], ID: store.MessageIDAt(at), Author: bob, Content: fmt.Sprintf("bob's %02d", i)}
			post[m.ID] = func() error { return s.PostMessage(ctx, m) }
			bobs = append(bobs, m)
			continue
		}
		mine = append(mine, m)
	}
	all := append(append([]store.Message{}, mine...), bobs...)
	for _, i := range rand.Perm(len(all)) {
		if err := post[all[i].ID](); err != nil {
			t.Fatalf("storing %s = %v, want nil", fmtMessage(all[i]), err)
		}
	}

	want := newestFirst(mine)
	got, err := s.MessagesByAuthor(ctx, alice.Login, store.MessageID{}, 100)
	if err != nil {
		t.Fatalf("MessagesByAuthor(%q) = %v, want nil", alice.Login, err)
	}
	checkMessages(t, "MessagesByAuthor(alice)", got, want)
	for _, limit := range []int{1, 4, 7} {
		checkMessages(t, fmt.Sprintf("MessagesByAuthor(alice) paged by %d", limit), pageByAuthor(t, ctx, s, alice.Login, store.MessageID{}, limit), want)
	}
	checkMessages(t, "MessagesByAuthor(bob) paged by 3", pageByAuthor(t, ctx, s, bob.Login, store.MessageID{}, 3), newestFirst(bobs))

	// From cursors: a message of the author's, and an empty day.
	cursor := want[len(want)/2].ID
	checkMessages(t, "MessagesByAuthor(alice) before her middle message", pageByAuthor(t, ctx, s, alice.Login, cursor, 3), want[len(want)/2+1:])
	emptyDay := store.MessageIDAt(store.BucketOf(time.Now()).Start().Add(-6 * 24 * time.Hour))
	var older []store.Message
	for _, m := range want {
		if m.ID.Compare(emptyDay) < 0 {
			older = append(older, m)
		}
	}
	checkMessages(t, "MessagesByAuthor(alice) before an empty day", pageByAuthor(t, ctx, s, alice.Login, emptyDay, 2), older)
}

// testIndexHide hides messages of a room, a direct conversation and a
// group: every way of reading them shows them hidden, and only them.
func testIndexHide(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	alice, bob, dm := dmUsers(t, ctx, s)
	room := mustCreateRoom(t, ctx, s, "room", alice)
	g := mustCreateGroup(t, ctx, s, "group", alice)
	members := mustAddMember(t, ctx, s, g.Name, alice.Login, bob, time.Now()).Participants

	old := mustPost(t, ctx, s, room.Name, store.MessageIDAt(time.Now().Add(-26*time.Hour)), alice, "regrettable")
	kept := mustPost(t, ctx, s, room.Name, store.NewMessageID(), alice, "fine")
	direct := mustSendDirect(t, ctx, s, alice, bob, store.NewMessageID(), "oops")
	group := mustPostGroup(t, ctx, s, g.Name, store.NewMessageID(), alice, "wrong group", members)
	for _, m := range []store.Message{old, direct, group} {
		if _, err := s.HideMessage(ctx, m, store.UserRef{}); err != nil {
			t.Fatalf("HideMessage(%s) = %v, want nil", fmtMessage(m), err)
		}
	}
	// Again, as read back hidden: harmless.
	if _, err := s.HideMessage(ctx, hidden(old), store.UserRef{}); err != nil {
		t.Fatalf("HideMessage(%s) again = %v, want nil", fmtMessage(old), err)
	}

	for _, m := range []store.Message{old, direct, group} {
		if got := mustMessage(t, ctx, s, m.ID); !sameMessage(got, hidden(m)) {
			t.Errorf("Message(%v) after HideMessage = %s, want %s", m.ID, fmtMessage(got), fmtMessage(hidden(m)))
		}
	}
	if got := mustMessage(t, ctx, s, kept.ID); !sameMessage(got, kept) {
		t.Errorf("Message(%v) of a message not hidden = %s, want %s", kept.ID, fmtMessage(got), fmtMessage(kept))
	}
	checkMessages(t, "Messages of the room", mustMessages(t, ctx, s, room.Name, store.MessageID{}, 10), []store.Message{kept, hidden(old)})
	checkMessages(t, "RoomEvents of the room", mustPostedAfter(t, ctx, s, room.Name, store.MessageIDAt(old.ID.Time().Add(-time.Hour)), 10), []store.Message{hidden(old), kept})
	checkMessages(t, "Messages of the direct conversation", mustMessages(t, ctx, s, dm, store.MessageID{}, 10), []store.Message{hidden(direct)})
	ws := mustConversation(t, ctx, s, bob.Login, g.Name).Windows
	checkMessages(t, "GroupMessages", mustGroupMessages(t, ctx, s, g.Name, ws, store.MessageID{}, 10), []store.Message{hidden(group)})
	checkMessages(t, "MessagesByAuthor(alice)", pageByAuthor(t, ctx, s, alice.Login, store.MessageID{}, 2),
		[]store.Message{hidden(group), hidden(direct), kept, hidden(old)})

	// The inbox entries showing them as last message show them hidden,
	// unread counts unchanged.
	for _, u := range []store.UserRef{alice, bob} {
		unread := 0
		if u == bob {
			unread = 1
		}
		for _, e := range []struct {
			id   string
			last store.Message
		}{{dm, direct}, {g.Name, group}} {
			c := mustConversation(t, ctx, s, u.Login, e.id)
			if !sameMessage(c.LastMessage, hidden(e.last)) || c.Unread != unread {
				t.Errorf("Conversation(%q, %q) after HideMessage = %s, want last message %s, %d unread", u.Login, e.id, fmtConversation(c), fmtMessage(hidden(e.last)), unread)
			}
			checkInboxEntry(t, fmt.Sprintf("Inbox(%q)", u.Login), mustInbox(t, ctx, s, u.Login), c)
		}
	}
	// A newer message, not hidden, is the last message again.
	newer := mustSendDirect(t, ctx, s, bob, alice, store.NewMessageID(), "never mind")
	if c := mustConversation(t, ctx, s, alice.Login, dm); !sameMessage(c.LastMessage, newer) {
		t.Errorf("Conversation(alice) after a newer message = %s, want last message %s", fmtConversation(c), fmtMessage(newer))
	}
	// Hiding a message that is no entry's last changes no entry.
	earlier := mustSendDirect(t, ctx, s, alice, bob, store.MessageIDAt(direct.ID.Time().Add(-time.Second)), "earlier")
	if _, err := s.HideMessage(ctx, earlier, store.UserRef{}); err != nil {
		t.Fatalf("HideMessage(%s) = %v, want nil", fmtMessage(earlier), err)
	}
	if c := mustConversation(t, ctx, s, bob.Login, dm); !sameMessage(c.LastMessage, newer) {
		t.Errorf("Conversation(bob) after hiding an older message = %s, want last message %s", fmtConversation(c), fmtMessage(newer))
	}
}

// testIndexHideFormerMember hides the last message of a group after a
// member left: the entry the member keeps shows it hidden too.
func testIndexHideFormerMember(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	alice, bob, _ := dmUsers(t, ctx, s)
	g := mustCreateGroup(t, ctx, s, "former", alice)
	members := mustAddMember(t, ctx, s, g.Name, alice.Login, bob, time.Now()).Participants
	m := mustPostGroup(t, ctx, s, g.Name, store.NewMessageID(), alice, "the last word", members)
	mustLeaveGroup(t, ctx, s, g.Name, bob, time.Now())
	if c := mustConversation(t, ctx, s, bob.Login, g.Name); !sameMessage(c.LastMessage, m) {
		t.Fatalf("Conversation(bob) after leaving = %s, want last message %s", fmtConversation(c), fmtMessage(m))
	}
	if _, err := s.HideMessage(ctx, m, alice); err != nil {
		t.Fatalf("HideMessage = %v", err)
	}
	for _, u := range []store.UserRef{alice, bob} {
		c := mustConversation(t, ctx, s, u.Login, g.Name)
		if !sameMessage(c.LastMessage, hidden(m)) {
			t.Errorf("Conversation(%q) after HideMessage = %s, want last message %s", u.Login, fmtConversation(c), fmtMessage(hidden(m)))
		}
		checkInboxEntry(t, fmt.Sprintf("Inbox(%q)", u.Login), mustInbox(t, ctx, s, u.Login), c)
	}
}

// testIndexDeleteRoom deletes a room and a group: their messages go from the
// index too, by id and by author, and the author's other messages stay.
func testIndexDeleteRoom(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	alice, bob, _ := dmUsers(t, ctx, s)
	kept := mustCreateRoom(t, ctx, s, "kept", alice)
	doomed := mustCreateRoom(t, ctx, s, "doomed", alice)
	g := mustCreateGroup(t, ctx, s, "doomed", alice)
	members := mustAddMember(t, ctx, s, g.Name, alice.Login, bob, time.Now()).Participants
	mustJoinRoom(t, ctx, s, doomed.Name, bob)

	twoDaysAgo := time.Now().Add(-48 * time.Hour)
	mine := []store.Message{
		mustPost(t, ctx, s, kept.Name, store.MessageIDAt(twoDaysAgo), alice, "kept, old"),
		mustPost(t, ctx, s, kept.Name, store.NewMessageID(), alice, "kept, new"),
		mustSendDirect(t, ctx, s, alice, bob, store.NewMessageID(), "direct"),
	}
	gone := []store.Message{
		mustPost(t, ctx, s, doomed.Name, store.MessageIDAt(twoDaysAgo.Add(time.Minute)), alice, "doomed, old"),
		mustPost(t, ctx, s, doomed.Name, store.NewMessageID(), bob, "doomed, new"),
		mustPostGroup(t, ctx, s, g.Name, store.MessageIDAt(twoDaysAgo.Add(time.Hour)), bob, "group, old", members),
		mustPostGroup(t, ctx, s, g.Name, store.NewMessageID(), alice, "group, new", members),
	}
	for _, name := range []string{doomed.Name, g.Name} {
		if _, _, err := s.DeleteRoom(ctx, name, store.UserRef{Login: alice.Login}); err != nil {
			t.Fatalf("DeleteRoom(%q) = %v, want nil", name, err)
		}
	}
	for _, m := range gone {
		if got, err := s.Message(ctx, m.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Message(%v) of a deleted room = %s, %v; want ErrNotFound", m.ID, fmtMessage(got), err)
		}
	}
	for _, m := range mine {
		if got := mustMessage(t, ctx, s, m.ID); !sameMessage(got, m) {
			t.Errorf("Message(%v) after deleting other rooms = %s, want %s", m.ID, fmtMessage(got), fmtMessage(m))
		}
	}
	checkMessages(t, "MessagesByAuthor(alice) after DeleteRoom", pageByAuthor(t, ctx, s, alice.Login, store.MessageID{}, 2), newestFirst(mine))
	checkMessages(t, "MessagesByAuthor(bob) after DeleteRoom", pageByAuthor(t, ctx, s, bob.Login, store.MessageID{}, 2), nil)
}
