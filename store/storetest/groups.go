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

// newGroup returns a valid private group called name created by creator,
// as CreateRoom takes it.
func newGroup(name string, creator store.UserRef, createdAt time.Time) store.Room {
	r := newRoom(name, creator)
	r.Kind, r.CreatedAt = store.PrivateGroup, createdAt
	return r
}

// mustCreateGroup creates a fresh private group whose name starts with
// prefix.
func mustCreateGroup(t *testing.T, ctx context.Context, s store.Store, prefix string, creator store.UserRef) store.Room {
	t.Helper()
	return mustCreateGroupAt(t, ctx, s, prefix, creator, time.Now())
}

// mustCreateGroupAt creates a fresh private group created at createdAt.
func mustCreateGroupAt(t *testing.T, ctx context.Context, s store.Store, prefix string, creator store.UserRef, createdAt time.Time) store.Room {
	t.Helper()
	r := newGroup(newRoomName(t, prefix), creator, createdAt)
	if err := s.CreateRoom(ctx, r); err != nil {
		t.Fatalf("CreateRoom(%q, private) = %v, want nil", r.Name, err)
	}
	return r
}

// mustAddMember adds u to the group on behalf of by, at at.
func mustAddMember(t *testing.T, ctx context.Context, s store.Conversations, group, by string, u store.UserRef, at time.Time) store.Room {
	t.Helper()
	r, _, err := s.AddGroupMember(ctx, group, store.UserRef{Login: by}, u, at)
	if err != nil {
		t.Fatalf("AddGroupMember(%q, by %q, %q) = %v, want nil", group, by, u.Login, err)
	}
	return r
}

// mustLeaveGroup makes u leave the group at at.
func mustLeaveGroup(t *testing.T, ctx context.Context, s store.Conversations, group string, u store.UserRef, at time.Time) {
	t.Helper()
	if _, err := s.LeaveGroup(ctx, group, u, at); err != nil {
		t.Fatalf("LeaveGroup(%q, %q) = %v, want nil", group, u.Login, err)
	}
}

// groupEntry is the inbox entry of a group member with no message yet.
func groupEntry(group string, windows ...store.Window) store.Conversation {
	return store.Conversation{ID: group, Kind: store.GroupConversation, Windows: windows}
}

// testRoomKind stores a public room and a private group: each reads back
// with its kind, alone and in Rooms.
func testRoomKind(t *testing.T, s ConversationStore) {
	// Rooms may page through many rooms of other tests and runs.
	ctx, cancel := context.WithTimeout(t.Context(), 4*subtestTimeout)
	defer cancel()
	creator := mustCreateUser(t, ctx, s, "creator").UserRef
	public := mustCreateRoom(t, ctx, s, "public", creator)
	private := mustCreateGroup(t, ctx, s, "private", creator)
	own := map[string]store.Room{public.Name: public, private.Name: private}
	for _, want := range own {
		checkRoom(t, fmt.Sprintf("Room(%q)", want.Name), mustRoom(t, ctx, s, want.Name), want)
	}
	seen := 0
	for after, page := "", 0; seen < len(own); page++ {
		rooms, err := s.Rooms(ctx, after, 100)
		if err != nil {
			t.Fatalf("Rooms(%q, 100) = %v, want nil", after, err)
		}
		if len(rooms) == 0 {
			t.Fatalf("Rooms paging ended having listed %d of rooms %q and %q", seen, public.Name, private.Name)
		}
		for _, r := range rooms {
			if want, ok := own[r.Name]; ok {
				checkRoomHeader(t, fmt.Sprintf("Rooms page %d: room %q", page, r.Name), r, want)
				seen++
			}
		}
		after = rooms[len(rooms)-1].Name
	}
}

// testGroupCreate creates private groups: the creator is their only
// participant and has an inbox entry with one open window from the
// creation.
func testGroupCreate(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	alice := mustCreateUser(t, ctx, s, "alice").UserRef
	now := mustCreateGroup(t, ctx, s, "group", alice)
	past := mustCreateGroupAt(t, ctx, s, "old", alice, time.Now().Add(-50*time.Hour).Truncate(time.Second))
	for _, g := range []store.Room{now, past} {
		checkRoom(t, fmt.Sprintf("Room(%q)", g.Name), mustRoom(t, ctx, s, g.Name), g)
		wantChatRooms(t, ctx, s, alice.Login, g.Name, true)
		want := groupEntry(g.Name, store.Window{From: g.CreatedAt})
		checkConversation(t, fmt.Sprintf("Conversation(creator, %q)", g.Name), mustConversation(t, ctx, s, alice.Login, g.Name), want)
		checkInboxEntry(t, "Inbox(creator)", mustInbox(t, ctx, s, alice.Login), want)
	}
	if inbox := mustInbox(t, ctx, s, alice.Login); len(inbox) != 2 {
		t.Errorf("Inbox(creator) = %s, want the two groups", fmtInbox(inbox))
	}
}

// testGroupAddMember adds members, one by a member who was added: each is a
// participant, lists the group among its rooms and has an entry with one
// window. Adding a member again changes nothing.
func testGroupAddMember(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	alice := mustCreateUser(t, ctx, s, "alice").UserRef
	bob := mustCreateUser(t, ctx, s, "bob").UserRef
	carol := mustCreateUser(t, ctx, s, "carol").UserRef
	g := mustCreateGroup(t, ctx, s, "group", alice)
	atBob := time.Now().Truncate(time.Second)
	atCarol := atBob.Add(time.Second)

	got := mustAddMember(t, ctx, s, g.Name, alice.Login, bob, atBob)
	g.Participants = append(g.Participants, bob)
	checkRoom(t, "AddGroupMember(bob)", got, g)
	got = mustAddMember(t, ctx, s, g.Name, bob.Login, carol, atCarol)
	g.Participants = append(g.Participants, carol)
	checkRoom(t, "AddGroupMember(carol) by bob", got, g)
	checkRoom(t, "Room", mustRoom(t, ctx, s, g.Name), g)

	for u, at := range map[store.UserRef]time.Time{bob: atBob, carol: atCarol} {
		wantChatRooms(t, ctx, s, u.Login, g.Name, true)
		want := groupEntry(g.Name, store.Window{From: at})
		checkConversation(t, fmt.Sprintf("Conversation(%q)", u.Login), mustConversation(t, ctx, s, u.Login, g.Name), want)
		checkInboxEntry(t, fmt.Sprintf("Inbox(%q)", u.Login), mustInbox(t, ctx, s, u.Login), want)
	}

	// Again, later, by another member: harmless, no second window.
	got = mustAddMember(t, ctx, s, g.Name, carol.Login, bob, atCarol.Add(time.Hour))
	checkRoom(t, "AddGroupMember(bob) again", got, g)
	checkConversation(t, "Conversation(bob) after being added again", mustConversation(t, ctx, s, bob.Login, g.Name),
		groupEntry(g.Name, store.Window{From: atBob}))
	checkConversation(t, "Conversation(alice) after the adds", mustConversation(t, ctx, s, alice.Login, g.Name),
		groupEntry(g.Name, store.Window{From: g.CreatedAt}))
}

func testGroupAddMemberErrors(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	alice := mustCreateUser(t, ctx, s, "alice").UserRef
	bob := mustCreateUser(t, ctx, s, "bob").UserRef
	stranger := mustCreateUser(t, ctx, s, "stranger").UserRef
	at := time.Now()

	// An unknown group.
	name := newRoomName(t, "nowhere")
	r, _, err := s.AddGroupMember(ctx, name, store.UserRef{Login: alice.Login}, bob, at)
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("AddGroupMember(%q) of an unknown group = %+v, %v; want ErrNotFound", name, r, err)
	}
	wantRoomNotFound(t, ctx, s, name)
	wantNoConversation(t, ctx, s, bob.Login, name)
	wantChatRooms(t, ctx, s, bob.Login, name, false)

	// A public room, by its creator: public rooms are joined.
	public := mustCreateRoom(t, ctx, s, "public", alice)
	r, _, err = s.AddGroupMember(ctx, public.Name, store.UserRef{Login: alice.Login}, bob, at)
	if !errors.Is(err, store.ErrInvalid) {
		t.Errorf("AddGroupMember(%q) of a public room = %+v, %v; want ErrInvalid", public.Name, r, err)
	}
	checkRoom(t, "public Room after AddGroupMember", mustRoom(t, ctx, s, public.Name), public)
	wantNoConversation(t, ctx, s, bob.Login, public.Name)
	wantChatRooms(t, ctx, s, bob.Login, public.Name, false)

	// A private group, by someone not in it.
	g := mustCreateGroup(t, ctx, s, "group", alice)
	r, _, err = s.AddGroupMember(ctx, g.Name, store.UserRef{Login: stranger.Login}, bob, at)
	if !errors.Is(err, store.ErrForbidden) {
		t.Errorf("AddGroupMember(%q) by a non-member = %+v, %v; want ErrForbidden", g.Name, r, err)
	}
	r, _, err = s.AddGroupMember(ctx, g.Name, store.UserRef{Login: stranger.Login}, stranger, at)
	if !errors.Is(err, store.ErrForbidden) {
		t.Errorf("AddGroupMember(%q) of oneself by a non-member = %+v, %v; want ErrForbidden", g.Name, r, err)
	}
	checkRoom(t, "Room after the forbidden adds", mustRoom(t, ctx, s, g.Name), g)
	for _, u := range []store.UserRef{bob, stranger} {
		wantNoConversation(t, ctx, s, u.Login, g.Name)
		wantChatRooms(t, ctx, s, u.Login, g.Name, false)
	}
}

// testGroupPost posts to a group: every member's entry shows the newest
// message; each has as unread the others' messages after their own
// newest, but the system messages of the additions.
func testGroupPost(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	alice := mustCreateUser(t, ctx, s, "alice").UserRef
	bob := mustCreateUser(t, ctx, s, "bob").UserRef
	carol := mustCreateUser(t, ctx, s, "carol").UserRef
	g := mustCreateGroup(t, ctx, s, "group", alice)
	mustAddMember(t, ctx, s, g.Name, alice.Login, bob, time.Now())
	members := mustAddMember(t, ctx, s, g.Name, alice.Login, carol, time.Now()).Participants

	m1 := mustPostGroup(t, ctx, s, g.Name, store.NewMessageID(), alice, "hello all", members)
	m2 := mustPostGroup(t, ctx, s, g.Name, store.NewMessageID(), bob, "hi alice", members)
	for login, unread := range map[string]int{alice.Login: 1, bob.Login: 0, carol.Login: 2} {
		c := mustConversation(t, ctx, s, login, g.Name)
		if c.Kind != store.GroupConversation || !sameMessage(c.LastMessage, m2) || c.Unread != unread || len(c.Windows) != 1 {
			t.Errorf("Conversation(%q) = %s, want a group with last message %s, %d unread and one window", login, fmtConversation(c), fmtMessage(m2), unread)
		}
		checkInboxEntry(t, fmt.Sprintf("Inbox(%q)", login), mustInbox(t, ctx, s, login), c)
	}
	checkMessages(t, "Messages of the group", mustMessages(t, ctx, s, g.Name, store.MessageID{}, 10), []store.Message{m2, m1})
	windows := mustConversation(t, ctx, s, carol.Login, g.Name).Windows
	checkMessages(t, "GroupMessages for carol", mustGroupMessages(t, ctx, s, g.Name, windows, store.MessageID{}, 10), []store.Message{m2, m1})

	mustMarkRead(t, ctx, s, carol.Login, g.Name, m1.ID)
	wantUnread(t, ctx, s, carol.Login, g.Name, 1)
	wantUnread(t, ctx, s, alice.Login, g.Name, 1)
	mustMarkRead(t, ctx, s, carol.Login, g.Name, m2.ID)
	wantUnread(t, ctx, s, carol.Login, g.Name, 0)
}

// testGroupLeave leaves a group, which closes the member's window and keeps
// the entry; the member may be added again, with a second window.
func testGroupLeave(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	alice := mustCreateUser(t, ctx, s, "alice").UserRef
	bob := mustCreateUser(t, ctx, s, "bob").UserRef
	carol := mustCreateUser(t, ctx, s, "carol").UserRef
	g := mustCreateGroup(t, ctx, s, "group", alice)
	now := time.Now().Truncate(time.Second)
	joined, left, back := now.Add(-time.Hour), now.Add(-30*time.Minute), now.Add(-10*time.Minute)

	mustAddMember(t, ctx, s, g.Name, alice.Login, bob, joined)
	mustLeaveGroup(t, ctx, s, g.Name, bob, left)
	checkRoom(t, "Room after bob left", mustRoom(t, ctx, s, g.Name), g)
	wantChatRooms(t, ctx, s, bob.Login, g.Name, false)
	checkConversation(t, "Conversation(bob) after leaving", mustConversation(t, ctx, s, bob.Login, g.Name),
		groupEntry(g.Name, store.Window{From: joined, To: left}))

	_, err := s.LeaveGroup(ctx, g.Name, bob, now)
	wantErr(t, "LeaveGroup again", err, store.ErrNotFound)
	_, err = s.LeaveGroup(ctx, g.Name, carol, now)
	wantErr(t, "LeaveGroup by a non-member", err, store.ErrNotFound)
	_, err = s.LeaveGroup(ctx, newRoomName(t, "nowhere"), bob, now)
	wantErr(t, "LeaveGroup of an unknown group", err, store.ErrNotFound)
	_, _, err = s.AddGroupMember(ctx, g.Name, store.UserRef{Login: bob.Login}, carol, now)
	wantErr(t, "AddGroupMember by a member who left", err, store.ErrForbidden)
	checkConversation(t, "Conversation(bob) after the failed calls", mustConversation(t, ctx, s, bob.Login, g.Name),
		groupEntry(g.Name, store.Window{From: joined, To: left}))

	got := mustAddMember(t, ctx, s, g.Name, alice.Login, bob, back)
	g.Participants = append(g.Participants, bob)
	checkRoom(t, "AddGroupMember(bob) back", got, g)
	wantChatRooms(t, ctx, s, bob.Login, g.Name, true)
	checkConversation(t, "Conversation(bob) back", mustConversation(t, ctx, s, bob.Login, g.Name),
		groupEntry(g.Name, store.Window{From: joined, To: left}, store.Window{From: back}))

	// The creator may leave too.
	leaves := time.Now()
	mustLeaveGroup(t, ctx, s, g.Name, alice, leaves)
	checkConversation(t, "Conversation(alice) after leaving", mustConversation(t, ctx, s, alice.Login, g.Name),
		groupEntry(g.Name, store.Window{From: g.CreatedAt, To: leaves}))
	wantChatRooms(t, ctx, s, alice.Login, g.Name, false)
}

// testGroupDelete deletes a group: its current participants lose their
// entries with the room.
func testGroupDelete(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	alice := mustCreateUser(t, ctx, s, "alice").UserRef
	bob := mustCreateUser(t, ctx, s, "bob").UserRef
	g := mustCreateGroup(t, ctx, s, "doomed", alice)
	members := mustAddMember(t, ctx, s, g.Name, alice.Login, bob, time.Now()).Participants
	old := mustPostGroup(t, ctx, s, g.Name, store.MessageIDAt(time.Now().Add(-48*time.Hour)), bob, "old", members)
	mustPostGroup(t, ctx, s, g.Name, store.NewMessageID(), alice, "new", members)

	if _, _, err := s.DeleteRoom(ctx, g.Name, store.UserRef{Login: alice.Login}); err != nil {
		t.Fatalf("DeleteRoom(%q) = %v, want nil", g.Name, err)
	}
	wantRoomNotFound(t, ctx, s, g.Name)
	for _, u := range []store.UserRef{alice, bob} {
		wantNoConversation(t, ctx, s, u.Login, g.Name)
		wantChatRooms(t, ctx, s, u.Login, g.Name, false)
	}
	wantNoMessages(t, ctx, s, g.Name, old.ID, true)
	_, _, err := s.AddGroupMember(ctx, g.Name, store.UserRef{Login: alice.Login}, bob, time.Now())
	wantErr(t, "AddGroupMember after DeleteRoom", err, store.ErrNotFound)
	wantNoConversation(t, ctx, s, bob.Login, g.Name)
}

// mustGroupMessages reads a page of the group for a member with windows.
func mustGroupMessages(t *testing.T, ctx context.Context, s store.Conversations, group string, windows []store.Window, before store.MessageID, limit int) []store.Message {
	t.Helper()
	msgs, err := s.GroupMessages(ctx, group, windows, before, limit)
	if err != nil {
		t.Fatalf("GroupMessages(%q, %s, %v, %d) = %v, want nil", group, fmtWindows(windows), before, limit, err)
	}
	return msgs
}

// inWindows returns the messages of msgs that fall in one of the windows
// and before the cursor, newest first.
func inWindows(msgs []store.Message, windows []store.Window, before store.MessageID) []store.Message {
	var out []store.Message
	for _, m := range msgs {
		if !before.IsZero() && m.ID.Compare(before) >= 0 {
			continue
		}
		t := m.PostedAt()
		for _, w := range windows {
			if !t.Before(w.From) && (w.To.IsZero() || t.Before(w.To)) {
				out = append(out, m)
				break
			}
		}
	}
	return newestFirst(out)
}

// testGroupWindows reads a group's history, spread over twelve days, as
// members with different windows: each reads exactly the messages of its
// windows, bounds included ([From, To)), newest first, and paging crosses
// windows and buckets with no gap and no duplicate.
func testGroupWindows(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	const day = 24 * time.Hour
	now := time.Now()
	today := store.BucketOf(now).Start()
	d := func(daysAgo int, offset time.Duration) time.Time {
		return today.Add(-time.Duration(daysAgo)*day + offset)
	}
	alice := mustCreateUser(t, ctx, s, "alice").UserRef
	bob := mustCreateUser(t, ctx, s, "bob").UserRef
	carol := mustCreateUser(t, ctx, s, "carol").UserRef
	g := mustCreateGroupAt(t, ctx, s, "history", alice, d(12, 0))
	w1 := store.Window{From: d(9, 6*time.Hour), To: d(7, 12*time.Hour)}
	w2 := store.Window{From: d(3, 6*time.Hour)}
	w3 := store.Window{From: d(2, 0)}
	mustAddMember(t, ctx, s, g.Name, alice.Login, bob, w1.From)
	mustLeaveGroup(t, ctx, s, g.Name, bob, w1.To)
	mustAddMember(t, ctx, s, g.Name, alice.Login, bob, w2.From)
	members := mustAddMember(t, ctx, s, g.Name, bob.Login, carol, w3.From).Participants

	times := []time.Time{
		d(11, time.Hour),
		d(9, 5*time.Hour), w1.From, d(9, 20*time.Hour), // the day bob joined
		d(8, 0), d(8, 12*time.Hour),
		w1.To.Add(-100 * time.Nanosecond), w1.To, d(7, 13*time.Hour), // the day he left
		d(5, time.Hour),                               // nothing 6 and 4 days ago
		d(3, 5*time.Hour), w2.From, d(3, 9*time.Hour), // the day he came back
		d(2, time.Hour), d(1, 23*time.Hour),
		now.Add(-time.Hour), now.Add(-time.Minute),
	}
	msgs := make([]store.Message, len(times))
	for i, at := range times {
		author := []store.UserRef{alice, bob, carol}[i%3]
		msgs[i] = store.Message{Room: g.Name, ID: store.MessageIDAt(at), Author: author, Content: fmt.Sprintf("history %02d", i)}
	}
	for _, i := range rand.Perm(len(msgs)) {
		if err := s.PostGroupMessage(ctx, msgs[i], members); err != nil {
			t.Fatalf("PostGroupMessage(%s) = %v, want nil", fmtMessage(msgs[i]), err)
		}
	}

	windows := map[string][]store.Window{
		alice.Login: {{From: g.CreatedAt}},
		bob.Login:   {w1, w2},
		carol.Login: {w3},
	}
	for login, want := range windows {
		checkWindows(t, fmt.Sprintf("Conversation(%q).Windows", login), mustConversation(t, ctx, s, login, g.Name).Windows, want)
	}
	checkMessages(t, "Messages of the group", pageNewestFirst(t, ctx, s, g.Name, store.MessageID{}, 100), newestFirst(msgs))

	for login := range windows {
		// The windows as the store keeps them.
		ws := mustConversation(t, ctx, s, login, g.Name).Windows
		want := inWindows(msgs, ws, store.MessageID{})
		checkMessages(t, fmt.Sprintf("GroupMessages for %q", login), mustGroupMessages(t, ctx, s, g.Name, ws, store.MessageID{}, 100), want)
		for _, limit := range []int{1, 2, 3, 5} {
			got := pageDown(t, fmt.Sprintf("GroupMessages(%q) for %q", g.Name, login), store.MessageID{}, limit, func(before store.MessageID, limit int) ([]store.Message, error) {
				return s.GroupMessages(ctx, g.Name, ws, before, limit)
			})
			checkMessages(t, fmt.Sprintf("GroupMessages for %q paged by %d", login, limit), got, want)
			got = pageUp(t, fmt.Sprintf("GroupMessagesAfter(%q) for %q", g.Name, login), store.MessageID{}, limit, func(after store.MessageID, limit int) ([]store.Message, error) {
				return s.GroupMessagesAfter(ctx, g.Name, ws, after, limit)
			})
			checkMessages(t, fmt.Sprintf("GroupMessagesAfter for %q paged by %d", login, limit), newestFirst(got), want)
		}
	}

	// Bob's view from cursors: inside his first window, between his two
	// windows (the later one is after the cursor), and in the day of the
	// second before it opened.
	bobs := windows[bob.Login]
	for _, before := range []store.MessageID{msgs[5].ID, store.MessageIDAt(d(5, 0)), msgs[10].ID, msgs[12].ID} {
		want := inWindows(msgs, bobs, before)
		what := fmt.Sprintf("GroupMessages for bob before %s", before.Time().Format(time.RFC3339Nano))
		checkMessages(t, what, mustGroupMessages(t, ctx, s, g.Name, bobs, before, 100), want)
		got := pageDown(t, what, before, 2, func(before store.MessageID, limit int) ([]store.Message, error) {
			return s.GroupMessages(ctx, g.Name, bobs, before, limit)
		})
		checkMessages(t, what+" paged by 2", got, want)
	}
	// And up from cursors: before his first window, inside it, at its last
	// tick, between his windows, at the start of the second.
	for _, after := range []store.MessageID{msgs[1].ID, msgs[3].ID, msgs[6].ID, store.MessageIDAt(d(5, 0)), msgs[11].ID} {
		var want []store.Message
		for _, m := range inWindows(msgs, bobs, store.MessageID{}) {
			if m.ID.Compare(after) > 0 {
				want = append(want, m)
			}
		}
		what := fmt.Sprintf("GroupMessagesAfter for bob after %s", after.Time().Format(time.RFC3339Nano))
		got := pageUp(t, what, after, 2, func(after store.MessageID, limit int) ([]store.Message, error) {
			return s.GroupMessagesAfter(ctx, g.Name, bobs, after, limit)
		})
		checkMessages(t, what+" paged by 2", newestFirst(got), want)
	}

	// No windows, or a window with no message in it: nothing.
	checkMessages(t, "GroupMessages with no windows", mustGroupMessages(t, ctx, s, g.Name, nil, store.MessageID{}, 10), nil)
	empty := []store.Window{{From: d(7, 14*time.Hour), To: d(5, 0)}}
	checkMessages(t, "GroupMessages in an empty window", mustGroupMessages(t, ctx, s, g.Name, empty, store.MessageID{}, 10), nil)
}

// testGroupUnreadWindows counts a member's unread messages of a group
// within their windows only: the messages posted while they were away are
// not theirs to read, and a mark-read from before they left still counts.
func testGroupUnreadWindows(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	alice := mustCreateUser(t, ctx, s, "alice").UserRef
	bob := mustCreateUser(t, ctx, s, "bob").UserRef
	g := mustCreateGroup(t, ctx, s, "windows", alice)
	now := time.Now().Truncate(time.Second)
	joined, left, back := now.Add(-time.Hour), now.Add(-30*time.Minute), now.Add(-10*time.Minute)
	post := func(at time.Time, content string) store.Message {
		members := mustRoom(t, ctx, s, g.Name).Participants
		return mustPostGroup(t, ctx, s, g.Name, store.MessageIDAt(at), alice, content, members)
	}

	mustAddMember(t, ctx, s, g.Name, alice.Login, bob, joined)
	first := post(joined.Add(time.Minute), "first, while bob is in")
	post(joined.Add(2*time.Minute), "second, while bob is in")
	mustMarkRead(t, ctx, s, bob.Login, g.Name, first.ID)
	mustLeaveGroup(t, ctx, s, g.Name, bob, left)
	post(left.Add(time.Minute), "while bob is away")
	post(left.Add(2*time.Minute), "while bob is still away")
	wantUnread(t, ctx, s, bob.Login, g.Name, 1)

	mustAddMember(t, ctx, s, g.Name, alice.Login, bob, back)
	last := post(back.Add(time.Minute), "bob is back")
	wantUnread(t, ctx, s, bob.Login, g.Name, 2)
	wantUnread(t, ctx, s, alice.Login, g.Name, 0)
	checkInboxEntry(t, "Inbox(bob)", mustInbox(t, ctx, s, bob.Login),
		store.Conversation{ID: g.Name, Kind: store.GroupConversation, LastMessage: last, Unread: 2,
			Windows: []store.Window{{From: joined, To: left}, {From: back}}})
	mustMarkRead(t, ctx, s, bob.Login, g.Name, last.ID)
	wantUnread(t, ctx, s, bob.Login, g.Name, 0)
}
