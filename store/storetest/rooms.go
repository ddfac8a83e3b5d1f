package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

func testCreateRoomOK(t *testing.T, s store.Store) {
	ctx := newContext(t)
	creator := mustCreateUser(t, ctx, s, "creator")
	want := mustCreateRoom(t, ctx, s, "games", creator.UserRef)

	got := mustRoom(t, ctx, s, want.Name)
	checkRoom(t, "Room", got, want)
	wantChatRooms(t, ctx, s, creator.Login, want.Name, true)
}

func testCreateRoomConflict(t *testing.T, s store.Store) {
	ctx := newContext(t)
	creator := mustCreateUser(t, ctx, s, "creator")
	intruder := mustCreateUser(t, ctx, s, "intruder")
	want := mustCreateRoom(t, ctx, s, "taken", creator.UserRef)

	dup := newRoom(want.Name, intruder.UserRef)
	dup.Banner = "hijacked"
	dup.CreatedAt = want.CreatedAt.Add(time.Hour)
	err := s.CreateRoom(ctx, dup)
	wantErr(t, fmt.Sprintf("second CreateRoom(%q)", want.Name), err, store.ErrConflict)

	got := mustRoom(t, ctx, s, want.Name)
	checkRoom(t, "Room after the conflict", got, want)
	wantChatRooms(t, ctx, s, creator.Login, want.Name, true)
	wantChatRooms(t, ctx, s, intruder.Login, want.Name, false)
}

func testRoomNotFound(t *testing.T, s store.Store) {
	ctx := newContext(t)
	wantRoomNotFound(t, ctx, s, newRoomName(t, "nowhere"))
}

// testRoomsPaging pages through every room of the store, three at a time:
// each of this test's rooms shows up exactly once and no room twice, however
// many rooms other tests add meanwhile.
func testRoomsPaging(t *testing.T, s store.Store) {
	// The store may hold many rooms from other tests and runs.
	ctx, cancel := context.WithTimeout(t.Context(), 4*subtestTimeout)
	defer cancel()
	creator := mustCreateUser(t, ctx, s, "pager")
	own := map[string]store.Room{}
	for range 7 {
		r := mustCreateRoom(t, ctx, s, "page", creator.UserRef)
		own[r.Name] = r
	}

	const limit = 3
	seen := map[string]int{} // room name → page it was on
	after := ""
	for page := 0; ; page++ {
		rooms, err := s.Rooms(ctx, after, limit)
		if err != nil {
			t.Fatalf("Rooms(%q, %d) = %v, want nil (page %d)", after, limit, err, page)
		}
		if len(rooms) > limit {
			t.Errorf("Rooms(%q, %d) returned %d rooms, want at most %d", after, limit, len(rooms), limit)
		}
		if len(rooms) == 0 {
			break
		}
		for _, r := range rooms {
			if p, dup := seen[r.Name]; dup {
				t.Fatalf("room %q on pages %d and %d: paging must visit every room once", r.Name, p, page)
			}
			seen[r.Name] = page
			if want, ok := own[r.Name]; ok {
				checkRoomHeader(t, fmt.Sprintf("Rooms page %d: room %q", page, r.Name), r, want)
			}
		}
		after = rooms[len(rooms)-1].Name
	}
	for name := range own {
		if _, ok := seen[name]; !ok {
			t.Errorf("room %q never listed by Rooms paging (%d rooms seen)", name, len(seen))
		}
	}
}

func testJoinRoomOK(t *testing.T, s store.Store) {
	ctx := newContext(t)
	creator := mustCreateUser(t, ctx, s, "creator")
	// Logins sorting before and after the creator's.
	early := mustCreateUser(t, ctx, s, "aaa")
	late := mustCreateUser(t, ctx, s, "zzz")
	want := mustCreateRoom(t, ctx, s, "join", creator.UserRef)

	got := mustJoinRoom(t, ctx, s, want.Name, late.UserRef)
	want.Participants = []store.UserRef{creator.UserRef, late.UserRef}
	checkRoom(t, "JoinRoom", got, want)

	got = mustJoinRoom(t, ctx, s, want.Name, early.UserRef)
	want.Participants = append(want.Participants, early.UserRef)
	checkRoom(t, "second JoinRoom", got, want)

	checkRoom(t, "Room", mustRoom(t, ctx, s, want.Name), want)
	for _, u := range []store.Account{creator, early, late} {
		wantChatRooms(t, ctx, s, u.Login, want.Name, true)
	}
}

func testJoinRoomTwice(t *testing.T, s store.Store) {
	ctx := newContext(t)
	creator := mustCreateUser(t, ctx, s, "creator")
	joiner := mustCreateUser(t, ctx, s, "joiner")
	want := mustCreateRoom(t, ctx, s, "twice", creator.UserRef)
	want.Participants = append(want.Participants, joiner.UserRef)

	mustJoinRoom(t, ctx, s, want.Name, joiner.UserRef)
	got := mustJoinRoom(t, ctx, s, want.Name, joiner.UserRef)
	checkRoom(t, "second JoinRoom", got, want)
	checkRoom(t, "Room", mustRoom(t, ctx, s, want.Name), want)
	wantChatRooms(t, ctx, s, joiner.Login, want.Name, true)
}

func testJoinRoomNotFound(t *testing.T, s store.Store) {
	ctx := newContext(t)
	joiner := mustCreateUser(t, ctx, s, "joiner")
	name := newRoomName(t, "nowhere")
	r, _, err := s.JoinRoom(ctx, name, joiner.UserRef)
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("JoinRoom(%q) of an unknown room = %+v, %v; want ErrNotFound", name, r, err)
	}
	wantRoomNotFound(t, ctx, s, name)
	wantChatRooms(t, ctx, s, joiner.Login, name, false)
}

func testLeaveRoomOK(t *testing.T, s store.Store) {
	ctx := newContext(t)
	creator := mustCreateUser(t, ctx, s, "creator")
	stayer := mustCreateUser(t, ctx, s, "stayer")
	leaver := mustCreateUser(t, ctx, s, "leaver")
	want := mustCreateRoom(t, ctx, s, "leave", creator.UserRef)
	mustJoinRoom(t, ctx, s, want.Name, stayer.UserRef)
	mustJoinRoom(t, ctx, s, want.Name, leaver.UserRef)

	if _, err := s.LeaveRoom(ctx, want.Name, leaver.UserRef); err != nil {
		t.Fatalf("LeaveRoom(%q, %q) = %v, want nil", want.Name, leaver.Login, err)
	}
	want.Participants = []store.UserRef{creator.UserRef, stayer.UserRef}
	checkRoom(t, "Room after LeaveRoom", mustRoom(t, ctx, s, want.Name), want)
	wantChatRooms(t, ctx, s, leaver.Login, want.Name, false)
	wantChatRooms(t, ctx, s, stayer.Login, want.Name, true)
	wantChatRooms(t, ctx, s, creator.Login, want.Name, true)

	_, err := s.LeaveRoom(ctx, want.Name, leaver.UserRef)
	wantErr(t, fmt.Sprintf("second LeaveRoom(%q, %q)", want.Name, leaver.Login), err, store.ErrNotFound)
	checkRoom(t, "Room after the second LeaveRoom", mustRoom(t, ctx, s, want.Name), want)
}

func testLeaveRoomNotParticipant(t *testing.T, s store.Store) {
	ctx := newContext(t)
	creator := mustCreateUser(t, ctx, s, "creator")
	stranger := mustCreateUser(t, ctx, s, "stranger")
	want := mustCreateRoom(t, ctx, s, "leave", creator.UserRef)

	_, err := s.LeaveRoom(ctx, want.Name, stranger.UserRef)
	wantErr(t, fmt.Sprintf("LeaveRoom(%q, %q) by a non-participant", want.Name, stranger.Login), err, store.ErrNotFound)
	checkRoom(t, "Room", mustRoom(t, ctx, s, want.Name), want)
	wantChatRooms(t, ctx, s, creator.Login, want.Name, true)
}

func testLeaveRoomNotFound(t *testing.T, s store.Store) {
	ctx := newContext(t)
	u := mustCreateUser(t, ctx, s, "leaver")
	name := newRoomName(t, "nowhere")
	_, err := s.LeaveRoom(ctx, name, u.UserRef)
	wantErr(t, fmt.Sprintf("LeaveRoom(%q) of an unknown room", name), err, store.ErrNotFound)
	wantRoomNotFound(t, ctx, s, name)
}

func testDeleteRoomForbidden(t *testing.T, s store.Store) {
	ctx := newContext(t)
	creator := mustCreateUser(t, ctx, s, "creator")
	member := mustCreateUser(t, ctx, s, "member")
	want := mustCreateRoom(t, ctx, s, "keep", creator.UserRef)
	want.Participants = append(want.Participants, member.UserRef)
	mustJoinRoom(t, ctx, s, want.Name, member.UserRef)
	msg := mustPost(t, ctx, s, want.Name, store.NewMessageID(), creator.UserRef, "still here")

	r, _, err := s.DeleteRoom(ctx, want.Name, store.UserRef{Login: member.Login})
	if !errors.Is(err, store.ErrForbidden) {
		t.Errorf("DeleteRoom(%q) by participant %q = %+v, %v; want ErrForbidden", want.Name, member.Login, r, err)
	}
	checkRoom(t, "Room after the forbidden delete", mustRoom(t, ctx, s, want.Name), want)
	wantChatRooms(t, ctx, s, creator.Login, want.Name, true)
	wantChatRooms(t, ctx, s, member.Login, want.Name, true)
	got, err := s.Messages(ctx, want.Name, store.MessageID{}, 10)
	if err != nil {
		t.Fatalf("Messages(%q) = %v, want nil", want.Name, err)
	}
	checkMessages(t, "Messages after the forbidden delete", got, []store.Message{msg})
}

func testDeleteRoomNotFound(t *testing.T, s store.Store) {
	ctx := newContext(t)
	u := mustCreateUser(t, ctx, s, "deleter")
	name := newRoomName(t, "nowhere")
	r, _, err := s.DeleteRoom(ctx, name, store.UserRef{Login: u.Login})
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("DeleteRoom(%q) of an unknown room = %+v, %v; want ErrNotFound", name, r, err)
	}
	wantRoomNotFound(t, ctx, s, name)
}

func testDeleteRoomOK(t *testing.T, s store.Store) {
	ctx := newContext(t)
	creator := mustCreateUser(t, ctx, s, "creator")
	stayer := mustCreateUser(t, ctx, s, "stayer")
	leaver := mustCreateUser(t, ctx, s, "leaver")
	want := mustCreateRoom(t, ctx, s, "doomed", creator.UserRef)
	mustJoinRoom(t, ctx, s, want.Name, stayer.UserRef)
	mustJoinRoom(t, ctx, s, want.Name, leaver.UserRef)
	if _, err := s.LeaveRoom(ctx, want.Name, leaver.UserRef); err != nil {
		t.Fatalf("LeaveRoom(%q, %q) = %v, want nil", want.Name, leaver.Login, err)
	}
	want.Participants = append(want.Participants, stayer.UserRef)
	// Messages in an old bucket and in today's.
	old := mustPost(t, ctx, s, want.Name, store.MessageIDAt(time.Now().Add(-72*time.Hour)), stayer.UserRef, "old")
	mustPost(t, ctx, s, want.Name, store.NewMessageID(), creator.UserRef, "new")

	got, _, err := s.DeleteRoom(ctx, want.Name, store.UserRef{Login: creator.Login})
	if err != nil {
		t.Fatalf("DeleteRoom(%q, %q) = %v, want nil", want.Name, creator.Login, err)
	}
	checkRoom(t, "DeleteRoom", got, want)

	wantRoomNotFound(t, ctx, s, want.Name)
	for _, u := range []store.Account{creator, stayer, leaver} {
		wantChatRooms(t, ctx, s, u.Login, want.Name, false)
	}
	wantNoMessages(t, ctx, s, want.Name, old.ID, true)

	// No resurrection: joining the deleted room fails and leaves no trace.
	r, _, err := s.JoinRoom(ctx, want.Name, stayer.UserRef)
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("JoinRoom(%q) after DeleteRoom = %+v, %v; want ErrNotFound", want.Name, r, err)
	}
	wantRoomNotFound(t, ctx, s, want.Name)
	wantChatRooms(t, ctx, s, stayer.Login, want.Name, false)
	_, err = s.LeaveRoom(ctx, want.Name, stayer.UserRef)
	wantErr(t, fmt.Sprintf("LeaveRoom(%q) after DeleteRoom", want.Name), err, store.ErrNotFound)
	r, _, err = s.DeleteRoom(ctx, want.Name, store.UserRef{Login: creator.Login})
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second DeleteRoom(%q) = %+v, %v; want ErrNotFound", want.Name, r, err)
	}

	// The name is free again, and the new room starts with no messages.
	reborn := newRoom(want.Name, leaver.UserRef)
	if err := s.CreateRoom(ctx, reborn); err != nil {
		t.Fatalf("CreateRoom(%q) after DeleteRoom = %v, want nil", want.Name, err)
	}
	checkRoom(t, "Room re-created", mustRoom(t, ctx, s, want.Name), reborn)
	wantChatRooms(t, ctx, s, leaver.Login, want.Name, true)
	wantChatRooms(t, ctx, s, creator.Login, want.Name, false)
	wantNoMessages(t, ctx, s, want.Name, old.ID, false)
}

// wantNoMessages checks that the room has no message, reading newest first
// and oldest first after cursor. A deleted room (gone) may answer
// ErrNotFound instead of an empty page.
func wantNoMessages(t *testing.T, ctx context.Context, s store.Store, room string, cursor store.MessageID, gone bool) {
	t.Helper()
	okErr := func(err error) bool { return err == nil || gone && errors.Is(err, store.ErrNotFound) }
	msgs, err := s.Messages(ctx, room, store.MessageID{}, 10)
	if !okErr(err) || len(msgs) != 0 {
		t.Errorf("Messages(%q) = %s, %v; want none", room, fmtMessages(msgs), err)
	}
	before := store.MessageIDAt(cursor.Time().Add(time.Second))
	msgs, err = s.Messages(ctx, room, before, 10)
	if !okErr(err) || len(msgs) != 0 {
		t.Errorf("Messages(%q, before %v) = %s, %v; want none", room, before.Time(), fmtMessages(msgs), err)
	}
	after := store.MessageIDAt(cursor.Time().Add(-time.Second))
	events, err := s.RoomEvents(ctx, room, after, 10)
	if !okErr(err) || len(events) != 0 {
		t.Errorf("RoomEvents(%q, %v) = %+v, %v; want none", room, after.Time(), events, err)
	}
}

// testJoinRacingDelete races joins with the deletion of the room: afterwards
// the room is gone for good and no joiner still lists it among its rooms.
func testJoinRacingDelete(t *testing.T, s store.Store) {
	const rounds, joiners = 5, 10
	ctx, cancel := context.WithTimeout(t.Context(), 2*subtestTimeout)
	defer cancel()
	creator := mustCreateUser(t, ctx, s, "creator")
	users := make([]store.Account, joiners)
	for i := range users {
		users[i] = mustCreateUser(t, ctx, s, fmt.Sprintf("racer%d", i))
	}

	for round := range rounds {
		room := mustCreateRoom(t, ctx, s, "race", creator.UserRef)
		joinErrs := make([]error, joiners)
		var deleted store.Room
		var deleteErr error
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i, u := range users {
			wg.Go(func() {
				<-start
				var r store.Room
				r, _, joinErrs[i] = s.JoinRoom(ctx, room.Name, u.UserRef)
				if joinErrs[i] == nil && !r.HasParticipant(u.Login) {
					t.Errorf("round %d: JoinRoom(%q, %q) returned participants %s, without the joiner", round, room.Name, u.Login, loginsOf(r.Participants))
				}
			})
			if i == joiners/2 {
				wg.Go(func() {
					<-start
					deleted, _, deleteErr = s.DeleteRoom(ctx, room.Name, store.UserRef{Login: creator.Login})
				})
			}
		}
		close(start)
		wg.Wait()

		if deleteErr != nil {
			t.Fatalf("round %d: DeleteRoom(%q) racing joins = %v, want nil", round, room.Name, deleteErr)
		}
		if deleted.Name != room.Name || !deleted.HasParticipant(creator.Login) {
			t.Errorf("round %d: DeleteRoom(%q) returned %+v, want the room with its creator", round, room.Name, deleted)
		}
		var joined []string
		for i, err := range joinErrs {
			switch {
			case err == nil:
				joined = append(joined, users[i].Login)
				// The join went in while the room existed, so before the
				// delete, which must have seen it.
				if !deleted.HasParticipant(users[i].Login) {
					t.Errorf("round %d: JoinRoom(%q, %q) succeeded but DeleteRoom returned participants %s, without it", round, room.Name, users[i].Login, loginsOf(deleted.Participants))
				}
			case !errors.Is(err, store.ErrNotFound):
				t.Errorf("round %d: JoinRoom(%q, %q) racing the delete = %v, want nil or ErrNotFound", round, room.Name, users[i].Login, err)
			}
		}
		wantRoomNotFound(t, ctx, s, room.Name)
		for _, u := range users {
			wantChatRooms(t, ctx, s, u.Login, room.Name, false)
		}
		wantChatRooms(t, ctx, s, creator.Login, room.Name, false)
		t.Logf("round %d: joins %q went in; the deleted room had participants %s", round, joined, loginsOf(deleted.Participants))
		if t.Failed() {
			return
		}
	}
}

// loginsOf lists the logins of refs, for messages.
func loginsOf(refs []store.UserRef) string {
	logins := make([]string, len(refs))
	for i, r := range refs {
		logins[i] = r.Login
	}
	return strings.Join(slices.Sorted(slices.Values(logins)), ",")
}
