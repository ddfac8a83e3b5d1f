package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

// Edits and deletes (ConversationStore): every copy a reader sees changes
// (the stream, by id, by author, the inbox entries' last message), the
// change is logged where the conversation's events go, and a deleted
// message stays a tombstone whatever edit comes after.

// edited returns m with content edited at at, as the store keeps it.
func edited(m store.Message, content string, at time.Time) store.Message {
	m.Content, m.EditedAt, m.Preview = content, at.UTC().Truncate(time.Millisecond), nil
	return m
}

// deleted returns m as a tombstone: no content, no edit, no attachments,
// no preview.
func deleted(m store.Message) store.Message {
	m.Content, m.EditedAt, m.Deleted, m.Attachments, m.Preview = "", time.Time{}, true, nil, nil
	return m
}

// checkCopies checks that every copy of want a reader sees is want: by id,
// by author, in its stream (newest first from just after it), and, when
// it is the last message of the inboxes' entries, there.
func checkCopies(t *testing.T, ctx context.Context, s ConversationStore, want store.Message, inboxes ...string) {
	t.Helper()
	if got := mustMessage(t, ctx, s, want.ID); !sameMessage(got, want) {
		t.Errorf("Message(%v) = %s, want %s", want.ID, fmtMessage(got), fmtMessage(want))
	}
	after := store.MessageIDAt(want.ID.Time().Add(time.Microsecond))
	byAuthor := pageByAuthor(t, ctx, s, want.Author.Login, after, 1)
	if len(byAuthor) == 0 || !sameMessage(byAuthor[0], want) {
		t.Errorf("MessagesByAuthor = %s, want %s first", fmtMessages(byAuthor), fmtMessage(want))
	}
	stream, err := s.Messages(ctx, want.Room, after, 1)
	if err != nil || len(stream) != 1 || !sameMessage(stream[0], want) {
		t.Errorf("Messages(%s) = %s, %v; want %s", want.Room, fmtMessages(stream), err, fmtMessage(want))
	}
	for _, login := range inboxes {
		if c := mustConversation(t, ctx, s, login, want.Room); !sameMessage(c.LastMessage, want) {
			t.Errorf("the last message of %s's entry = %s, want %s", login, fmtMessage(c.LastMessage), fmtMessage(want))
		}
	}
}

// testEditMessage: an edit changes every copy and is logged in the room's
// log; of two edits the later wins, whatever order they arrive in.
func testEditMessage(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	author, room := chatRoom(t, ctx, s, "edit")
	m := mustPost(t, ctx, s, room.Name, store.NewMessageID(), author.UserRef, "teh quick fox")
	at := time.Now()
	ev, err := s.EditMessage(ctx, m, author.UserRef, "the quick fox", at)
	if err != nil {
		t.Fatalf("EditMessage = %v", err)
	}
	fixed := edited(m, "the quick fox", at)
	want := store.Event{ID: ev.ID, Kind: store.MessageEdited, Room: room.Name, User: author.UserRef, Message: &fixed}
	checkEvent(t, "EditMessage's event", ev, want)
	checkFresh(t, "EditMessage's event", ev, m.ID)
	checkCopies(t, ctx, s, fixed)
	checkEvents(t, "RoomEvents", roomLog(t, s, room.Name, store.MessageID{}), store.PostedEvent(fixed), want)

	// The later edit arrives first; the earlier one then loses everywhere.
	later, earlier := at.Add(2*time.Second), at.Add(time.Second)
	if _, err := s.EditMessage(ctx, m, author.UserRef, "the quick brown fox", later); err != nil {
		t.Fatalf("EditMessage = %v", err)
	}
	if _, err := s.EditMessage(ctx, m, author.UserRef, "the brown fox", earlier); err != nil {
		t.Fatalf("EditMessage of an earlier edit = %v", err)
	}
	checkCopies(t, ctx, s, edited(m, "the quick brown fox", later))
}

// testDeleteMessage: a delete leaves a tombstone in every copy and is
// logged; deleting it again changes and logs nothing; it cannot be
// edited, not even by an edit that raced the delete.
func testDeleteMessage(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	author, room := chatRoom(t, ctx, s, "delete")
	m := mustPost(t, ctx, s, room.Name, store.NewMessageID(), author.UserRef, "my password is hunter2")
	ev, err := s.DeleteMessage(ctx, m, author.UserRef)
	if err != nil {
		t.Fatalf("DeleteMessage = %v", err)
	}
	gone := deleted(m)
	want := store.Event{ID: ev.ID, Kind: store.MessageDeleted, Room: room.Name, User: author.UserRef, Message: &gone}
	checkEvent(t, "DeleteMessage's event", ev, want)
	checkCopies(t, ctx, s, gone)
	checkEvents(t, "RoomEvents", roomLog(t, s, room.Name, store.MessageID{}), store.PostedEvent(gone), want)

	again, err := s.DeleteMessage(ctx, m, author.UserRef)
	if err != nil {
		t.Fatalf("DeleteMessage again = %v", err)
	}
	checkNoEvent(t, "DeleteMessage again", again)
	if _, err := s.EditMessage(ctx, m, author.UserRef, "my password is secret", time.Now()); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("EditMessage of a deleted message = %v, want ErrNotFound", err)
	}
	checkCopies(t, ctx, s, gone)
	checkEvents(t, "RoomEvents after the refused changes", roomLog(t, s, room.Name, ev.ID))
}

// testChangeNotFound: changing a message that does not exist is ErrNotFound.
func testChangeNotFound(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	author, room := chatRoom(t, ctx, s, "ghost")
	m := store.Message{Room: room.Name, ID: store.NewMessageID(), Author: author.UserRef, Content: "never posted"}
	if _, err := s.EditMessage(ctx, m, author.UserRef, "x", time.Now()); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("EditMessage of no message = %v, want ErrNotFound", err)
	}
	if _, err := s.DeleteMessage(ctx, m, author.UserRef); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("DeleteMessage of no message = %v, want ErrNotFound", err)
	}
}

// testChangeDirect: a direct message's edit and delete reach both users'
// entries while it is their last message, and only then, and are logged
// in both users' inbox logs.
func testChangeDirect(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	alice, bob, id := dmUsers(t, ctx, s)
	m := mustSendDirect(t, ctx, s, alice, bob, store.NewMessageID(), "see you at 5")
	at := time.Now()
	ev, err := s.EditMessage(ctx, m, alice, "see you at 6", at)
	if err != nil {
		t.Fatalf("EditMessage = %v", err)
	}
	moved := edited(m, "see you at 6", at)
	want := store.Event{ID: ev.ID, Kind: store.MessageEdited, Room: id, User: alice, Message: &moved}
	checkEvent(t, "EditMessage's event", ev, want)
	checkCopies(t, ctx, s, moved, alice.Login, bob.Login)
	for _, login := range []string{alice.Login, bob.Login} {
		checkEvents(t, login+"'s inbox log", inboxLog(t, s, login, m.ID), want)
	}
	checkEvents(t, "RoomEvents of the direct conversation", roomLog(t, s, id, store.MessageID{}))
	late, early := at.Add(2*time.Second), at.Add(time.Second)
	for _, e := range []struct {
		at      time.Time
		content string
	}{{late, "see you at 6:30"}, {early, "see you at 6:15"}} {
		if _, err := s.EditMessage(ctx, m, alice, e.content, e.at); err != nil {
			t.Fatalf("EditMessage = %v", err)
		}
	}
	checkCopies(t, ctx, s, edited(m, "see you at 6:30", late), alice.Login, bob.Login)

	// A newer message is the entries' last: changes to the older leave it.
	r := mustSendDirect(t, ctx, s, bob, alice, store.NewMessageID(), "ok")
	if _, err := s.EditMessage(ctx, m, alice, "see you at 7", at.Add(3*time.Second)); err != nil {
		t.Fatalf("EditMessage = %v", err)
	}
	if _, err := s.DeleteMessage(ctx, m, alice); err != nil {
		t.Fatalf("DeleteMessage = %v", err)
	}
	checkCopies(t, ctx, s, r, alice.Login, bob.Login)
	checkCopies(t, ctx, s, deleted(m))

	del, err := s.DeleteMessage(ctx, r, bob)
	if err != nil {
		t.Fatalf("DeleteMessage of the last message = %v", err)
	}
	checkCopies(t, ctx, s, deleted(r), alice.Login, bob.Login)
	gone := deleted(r)
	wantDel := store.Event{ID: del.ID, Kind: store.MessageDeleted, Room: id, User: bob, Message: &gone}
	for _, login := range []string{alice.Login, bob.Login} {
		if log := inboxLog(t, s, login, r.ID); len(log) == 0 || !sameEvent(log[len(log)-1], wantDel) {
			t.Errorf("%s's inbox log after the delete: %s, want it to end with %s", login, fmtEvents(log), fmtEvent(wantDel))
		}
	}
}

// testChangeGroup: a group message's edit and delete reach every member's
// entry and the group's log.
func testChangeGroup(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	alice, bob, _ := dmUsers(t, ctx, s)
	g := mustCreateGroup(t, ctx, s, "group", alice)
	members := mustAddMember(t, ctx, s, g.Name, alice.Login, bob, time.Now()).Participants
	m := mustPostGroup(t, ctx, s, g.Name, store.NewMessageID(), alice, "minutes attached", members)
	at := time.Now()
	if _, err := s.EditMessage(ctx, m, alice, "minutes attached (v2)", at); err != nil {
		t.Fatalf("EditMessage = %v", err)
	}
	checkCopies(t, ctx, s, edited(m, "minutes attached (v2)", at), alice.Login, bob.Login)
	ev, err := s.DeleteMessage(ctx, m, alice)
	if err != nil {
		t.Fatalf("DeleteMessage = %v", err)
	}
	gone := deleted(m)
	checkCopies(t, ctx, s, gone, alice.Login, bob.Login)
	log := roomLog(t, s, g.Name, m.ID)
	if len(log) != 2 || log[0].Kind != store.MessageEdited || !sameEvent(log[1], store.Event{ID: ev.ID, Kind: store.MessageDeleted, Room: g.Name, User: alice, Message: &gone}) {
		t.Errorf("the group's log after the changes: %s, want the edit, then the delete", fmtEvents(log))
	}
}
