package storetest

import (
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

// testMentions: the unread messages that mention a member count in their
// entry, of a group and of a public room, unless the member blocked their
// author; a logged mention is in the mentioned inbox logs only.
func testMentions(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	alice, bob, _ := dmUsers(t, ctx, s)
	g := mustCreateGroup(t, ctx, s, "group", alice)
	members := mustAddMember(t, ctx, s, g.Name, alice.Login, bob, time.Now()).Participants
	mustPostGroup(t, ctx, s, g.Name, store.NewMessageID(), alice, "hello all", members)
	m := mustPostGroup(t, ctx, s, g.Name, store.NewMessageID(), alice, "@"+bob.Login+": your turn", members)
	if c := mustConversation(t, ctx, s, bob.Login, g.Name); c.Unread != 2 || c.Mentions != 1 {
		t.Errorf("bob's entry of the group: %d unread, %d mentions; want 2, 1", c.Unread, c.Mentions)
	}
	room := mustCreateRoom(t, ctx, s, "room", alice)
	mustJoinRoom(t, ctx, s, room.Name, bob)
	mustPost(t, ctx, s, room.Name, store.NewMessageID(), alice, "cc @"+bob.Login)
	got, err := s.RoomConversations(ctx, bob.Login, []string{room.Name})
	if err != nil || len(got) != 1 || got[0].Unread != 1 || got[0].Mentions != 1 {
		t.Errorf("bob's entry of the room = %+v, %v; want 1 unread, 1 mention", got, err)
	}

	// The mentions of a user bob blocked do not count; the messages stay
	// unread.
	carol := mustCreateUser(t, ctx, s, "carol").UserRef
	if err := s.Block(ctx, bob.Login, carol); err != nil {
		t.Fatalf("Block = %v", err)
	}
	members = mustAddMember(t, ctx, s, g.Name, alice.Login, carol, time.Now()).Participants
	mustPostGroup(t, ctx, s, g.Name, store.NewMessageID(), carol, "@"+bob.Login+" hi", members)
	if c := mustConversation(t, ctx, s, bob.Login, g.Name); c.Unread != 3 || c.Mentions != 1 {
		t.Errorf("bob's entry of the group after a mention by carol, whom he blocked: %d unread, %d mentions; want 3, 1", c.Unread, c.Mentions)
	}
	mustJoinRoom(t, ctx, s, room.Name, carol)
	mustPost(t, ctx, s, room.Name, store.NewMessageID(), carol, "@"+bob.Login+" hi")
	got, err = s.RoomConversations(ctx, bob.Login, []string{room.Name})
	if err != nil || len(got) != 1 || got[0].Unread != 2 || got[0].Mentions != 1 {
		t.Errorf("bob's entry of the room after a mention by carol, whom he blocked = %+v, %v; want 2 unread, 1 mention", got, err)
	}

	ev, err := s.LogMention(ctx, m, []string{bob.Login})
	if err != nil {
		t.Fatalf("LogMention = %v", err)
	}
	want := store.Event{ID: ev.ID, Kind: store.Mentioned, Room: g.Name, User: alice, Message: &m}
	checkEvent(t, "LogMention's event", ev, want)
	checkFresh(t, "LogMention's event", ev, m.ID)
	if log := inboxLog(t, s, bob.Login, m.ID); len(log) == 0 || !sameEvent(log[len(log)-1], want) {
		t.Errorf("bob's inbox log: %s, want it to end with the mention", fmtEvents(log))
	}
	for _, ev := range inboxLog(t, s, alice.Login, store.MessageID{}) {
		if ev.Kind == store.Mentioned {
			t.Errorf("alice's inbox log holds %s", fmtEvent(ev))
		}
	}
}
