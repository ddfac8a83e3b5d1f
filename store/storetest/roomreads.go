package storetest

import (
	"testing"

	"github.com/killrchat/chatql/store"
)

// testRoomReads: a public room's entry counts the others' messages after
// the reader's mark, which only moves forward; the room's marks say who
// read how far, a limit at a time; a room's delete takes them.
func testRoomReads(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	alice, room := chatRoom(t, ctx, s, "reads")
	bob := mustCreateUser(t, ctx, s, "bob").UserRef
	mustJoinRoom(t, ctx, s, room.Name, bob)
	var msgs []store.Message
	for _, author := range []store.UserRef{alice.UserRef, alice.UserRef, alice.UserRef, bob, alice.UserRef} {
		msgs = append(msgs, mustPost(t, ctx, s, room.Name, store.NewMessageID(), author, "hi"))
	}
	entry := func(login string, wantUnread int, wantMark store.MessageID) {
		t.Helper()
		got, err := s.RoomConversations(ctx, login, []string{room.Name, room.Name + "-none"})
		if err != nil {
			t.Fatalf("RoomConversations = %v", err)
		}
		if len(got) != 1 || got[0].ID != room.Name || got[0].Kind != store.RoomConversation || !sameMessage(got[0].LastMessage, msgs[4]) || got[0].Unread != wantUnread || got[0].ReadUpTo != wantMark {
			t.Errorf("RoomConversations(%s) = %+v; want the room, last message %v, %d unread, read up to %v", login, got, msgs[4].ID, wantUnread, wantMark)
		}
	}
	entry(bob.Login, 4, store.MessageID{}) // the system message of his join is not counted
	mark := func(u store.UserRef, upTo store.MessageID) {
		t.Helper()
		if err := s.MarkRoomRead(ctx, room.Name, u, upTo); err != nil {
			t.Fatalf("MarkRoomRead = %v", err)
		}
	}
	mark(bob, msgs[1].ID)
	entry(bob.Login, 2, msgs[1].ID)
	mark(bob, msgs[0].ID) // back: no change
	entry(bob.Login, 2, msgs[1].ID)
	mark(alice.UserRef, msgs[4].ID)
	entry(alice.Login, 0, msgs[4].ID)

	marks, err := s.RoomReadMarks(ctx, room.Name, "", 10)
	want := []store.ReadMark{{User: alice.UserRef, UpTo: msgs[4].ID}, {User: bob, UpTo: msgs[1].ID}}
	if err != nil || len(marks) != 2 || marks[0] != want[0] || marks[1] != want[1] {
		t.Errorf("RoomReadMarks = %+v, %v; want %+v", marks, err, want)
	}
	if marks, err := s.RoomReadMarks(ctx, room.Name, "", 1); err != nil || len(marks) != 1 || marks[0] != want[0] {
		t.Errorf("RoomReadMarks limited to 1 = %+v, %v; want %+v", marks, err, want[:1])
	}
	// Paging on by login: after alice comes bob, after bob nothing, and a
	// login between the two (no mark of its own) starts at bob.
	if marks, err := s.RoomReadMarks(ctx, room.Name, alice.Login, 10); err != nil || len(marks) != 1 || marks[0] != want[1] {
		t.Errorf("RoomReadMarks after %q = %+v, %v; want %+v", alice.Login, marks, err, want[1:])
	}
	if marks, err := s.RoomReadMarks(ctx, room.Name, bob.Login, 10); err != nil || len(marks) != 0 {
		t.Errorf("RoomReadMarks after %q = %+v, %v; want none", bob.Login, marks, err)
	}
	if marks, err := s.RoomReadMarks(ctx, room.Name, alice.Login+"0", 10); err != nil || len(marks) != 1 || marks[0] != want[1] {
		t.Errorf("RoomReadMarks after %q = %+v, %v; want %+v", alice.Login+"0", marks, err, want[1:])
	}

	if _, _, err := s.DeleteRoom(ctx, room.Name, alice.UserRef); err != nil {
		t.Fatal(err)
	}
	if marks, err := s.RoomReadMarks(ctx, room.Name, "", 10); err != nil || len(marks) != 0 {
		t.Errorf("RoomReadMarks after the room's delete = %+v, %v; want none", marks, err)
	}
	if got, err := s.RoomConversations(ctx, bob.Login, []string{room.Name}); err != nil || len(got) != 0 {
		t.Errorf("RoomConversations after the room's delete = %+v, %v; want none", got, err)
	}
}
