package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

// reply posts a reply to root in its room.
func reply(t *testing.T, s ConversationStore, root store.Message, author store.UserRef, content string) store.Message {
	t.Helper()
	m := store.Message{Room: root.Room, ID: store.NewMessageID(), Author: author, Content: content, ReplyTo: root.ID}
	if err := s.PostMessage(newContext(t), m); err != nil {
		t.Fatalf("PostMessage(%s) = %v", fmtMessage(m), err)
	}
	return m
}

// checkThread checks a root's summary.
func checkThread(t *testing.T, got map[store.MessageID]store.Thread, root store.MessageID, replies int, latest ...store.UserRef) {
	t.Helper()
	th, ok := got[root]
	if replies == 0 {
		if ok {
			t.Errorf("thread of %v = %+v, want none", root, th)
		}
		return
	}
	if th.Replies != replies || !slices.Equal(th.LatestRepliers, latest) {
		t.Errorf("thread of %v = %+v, want %d replies, latest repliers %+v", root, th, replies, latest)
	}
}

// testThreads: replies are messages of the room that name their root; a
// page of roots sums up their threads in one call; a thread pages newest
// first; a deleted reply keeps its place; deleting the room takes them.
func testThreads(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	alice, room := chatRoom(t, ctx, s, "threads")
	bob, carol := mustCreateUser(t, ctx, s, "bob").UserRef, mustCreateUser(t, ctx, s, "carol").UserRef
	old := mustPost(t, ctx, s, room.Name, store.MessageIDAt(time.Now().Add(-49*time.Hour)), alice.UserRef, "an old root")
	root := mustPost(t, ctx, s, room.Name, store.NewMessageID(), alice.UserRef, "a root")
	lonely := mustPost(t, ctx, s, room.Name, store.NewMessageID(), alice.UserRef, "no replies")
	replies := []store.Message{
		reply(t, s, root, bob, "one"),
		reply(t, s, root, carol, "two"),
		reply(t, s, root, bob, "three"),
		reply(t, s, root, alice.UserRef, "four"),
	}
	late := reply(t, s, old, carol, "to the old one")

	got, err := s.ThreadSummaries(ctx, []store.Message{old, root, lonely})
	if err != nil {
		t.Fatalf("ThreadSummaries = %v", err)
	}
	checkThread(t, got, root.ID, 4, alice.UserRef, bob, carol)
	checkThread(t, got, old.ID, 1, carol)
	checkThread(t, got, lonely.ID, 0)

	if m := mustMessage(t, ctx, s, late.ID); !sameMessage(m, late) {
		t.Errorf("Message(reply) = %s, want %s", fmtMessage(m), fmtMessage(late))
	}
	checkMessages(t, "Messages of the room", mustMessages(t, ctx, s, room.Name, store.MessageID{}, 10),
		[]store.Message{late, replies[3], replies[2], replies[1], replies[0], lonely, root, old})

	if _, err := s.DeleteMessage(ctx, replies[1], carol); err != nil {
		t.Fatal(err)
	}
	gone := deleted(replies[1])
	var paged []store.Message
	before := store.MessageID{}
	for {
		page, err := s.ThreadReplies(ctx, root, before, 3)
		if err != nil {
			t.Fatalf("ThreadReplies = %v", err)
		}
		paged = append(paged, page...)
		if len(page) < 3 {
			break
		}
		before = page[len(page)-1].ID
	}
	checkMessages(t, "ThreadReplies paged by 3", paged, []store.Message{replies[3], replies[2], gone, replies[0]})
	up := pageUp(t, "ThreadRepliesAfter", store.MessageID{}, 3, func(after store.MessageID, limit int) ([]store.Message, error) {
		return s.ThreadRepliesAfter(ctx, root, after, limit)
	})
	checkMessages(t, "ThreadRepliesAfter paged by 3", up, []store.Message{replies[0], gone, replies[2], replies[3]})
	up = pageUp(t, "ThreadRepliesAfter", replies[0].ID, 2, func(after store.MessageID, limit int) ([]store.Message, error) {
		return s.ThreadRepliesAfter(ctx, root, after, limit)
	})
	checkMessages(t, "ThreadRepliesAfter the first reply", up, []store.Message{gone, replies[2], replies[3]})

	if _, _, err := s.DeleteRoom(ctx, room.Name, alice.UserRef); err != nil {
		t.Fatal(err)
	}
	got, err = s.ThreadSummaries(ctx, []store.Message{old, root})
	if err != nil || len(got) != 0 {
		t.Errorf("ThreadSummaries after the room's delete = %+v, %v; want none", got, err)
	}
}

// testThreadsElsewhere: replies in a group and in a direct conversation.
func testThreadsElsewhere(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	alice, bob, _ := dmUsers(t, ctx, s)
	g := mustCreateGroup(t, ctx, s, "group", alice)
	members := mustAddMember(t, ctx, s, g.Name, alice.Login, bob, time.Now()).Participants
	groupRoot := mustPostGroup(t, ctx, s, g.Name, store.NewMessageID(), alice, "agenda?", members)
	groupReply := store.Message{Room: g.Name, ID: store.NewMessageID(), Author: bob, Content: "item one", ReplyTo: groupRoot.ID}
	if err := s.PostGroupMessage(ctx, groupReply, members); err != nil {
		t.Fatal(err)
	}
	dmRoot := mustSendDirect(t, ctx, s, alice, bob, store.NewMessageID(), "lunch?")
	dmReply := directMessage(bob, alice, store.NewMessageID(), "yes")
	dmReply.ReplyTo = dmRoot.ID
	if err := s.SendDirect(ctx, dmReply, alice); err != nil {
		t.Fatal(err)
	}
	got, err := s.ThreadSummaries(ctx, []store.Message{groupRoot, dmRoot})
	if err != nil {
		t.Fatal(err)
	}
	checkThread(t, got, groupRoot.ID, 1, bob)
	checkThread(t, got, dmRoot.ID, 1, bob)
	for _, c := range [][2]store.Message{{groupRoot, groupReply}, {dmRoot, dmReply}} {
		root, want := c[0], c[1]
		page, err := s.ThreadReplies(ctx, root, store.MessageID{}, 10)
		if err != nil || len(page) != 1 || !sameMessage(page[0], want) {
			t.Errorf("ThreadReplies(%s) = %s, %v; want %s", root.Room, fmtMessages(page), err, fmtMessage(want))
		}
	}
	// The inbox entries' last message is the reply, in its thread, as the
	// message itself is; a later message that is no reply is in none.
	for _, login := range []string{alice.Login, bob.Login} {
		for conv, want := range map[string]store.MessageID{g.Name: groupRoot.ID, dmRoot.Room: dmRoot.ID} {
			c, err := s.Conversation(ctx, login, conv)
			if err != nil || c.LastMessage.ReplyTo != want {
				t.Errorf("%s's entry of %s: last message %s, %v; want a reply to %s", login, conv, fmtMessage(c.LastMessage), err, want)
			}
		}
	}
	plain := mustSendDirect(t, ctx, s, alice, bob, store.NewMessageID(), "see you")
	if c, err := s.Conversation(ctx, bob.Login, plain.Room); err != nil || c.LastMessage.ID != plain.ID || !c.LastMessage.ReplyTo.IsZero() {
		t.Errorf("bob's entry after a message that is no reply: last message %s, %v", fmtMessage(c.LastMessage), err)
	}
}
