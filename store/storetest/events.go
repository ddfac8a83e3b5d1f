package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

// The event logs: every change is logged by the operation that makes it,
// once, with the id the operation returns, and read back oldest first,
// strictly after a cursor, joined with its message as it is now; events
// whose message is gone are left out without shortening a page.
//
// Every comparison here is of whole events (id, kind, room, user and
// message, every field), in order.

// fmtEvent writes an event for failure messages.
func fmtEvent(ev store.Event) string {
	msg := "none"
	if ev.Message != nil {
		msg = fmtMessage(*ev.Message)
	}
	return fmt.Sprintf("{%s ID:%v (%s) Room:%s User:%+v Message:%s}",
		ev.Kind, ev.ID, ev.ID.Time().Format(time.RFC3339Nano), ev.Room, ev.User, msg)
}

func fmtEvents(events []store.Event) string {
	parts := make([]string, len(events))
	for i, ev := range events {
		parts[i] = fmtEvent(ev)
	}
	return "[" + strings.Join(parts, "\n  ") + "]"
}

// sameEvent compares every field of two events, the message's included. A
// want.User with a login alone matches that login with any names: MarkRead
// is given the owner's login only.
func sameEvent(got, want store.Event) bool {
	if got.ID != want.ID || got.Kind != want.Kind || got.Room != want.Room {
		return false
	}
	if want.User.Firstname == "" && want.User.Lastname == "" {
		if got.User.Login != want.User.Login {
			return false
		}
	} else if got.User != want.User {
		return false
	}
	if got.Message == nil || want.Message == nil {
		return got.Message == nil && want.Message == nil
	}
	return sameMessage(*got.Message, *want.Message)
}

// checkEvent compares one event.
func checkEvent(t *testing.T, what string, got, want store.Event) {
	t.Helper()
	if !sameEvent(got, want) {
		t.Errorf("%s =\n  %s\nwant\n  %s", what, fmtEvent(got), fmtEvent(want))
	}
}

// checkNoEvent checks that an operation returned the zero Event.
func checkNoEvent(t *testing.T, what string, got store.Event) {
	t.Helper()
	if !got.ID.IsZero() || got.Kind != "" || got.Room != "" || got.User != (store.UserRef{}) || got.Message != nil {
		t.Errorf("%s = %s, want the zero Event (nothing logged)", what, fmtEvent(got))
	}
}

// checkEvents compares logs: the same events, in the same order.
func checkEvents(t *testing.T, what string, got []store.Event, want ...store.Event) {
	t.Helper()
	if len(got) == len(want) {
		same := true
		for i := range got {
			same = same && sameEvent(got[i], want[i])
		}
		if same {
			return
		}
	}
	t.Errorf("%s:\n got  %s\n want %s", what, fmtEvents(got), fmtEvents(want))
}

// A logReader reads a page of one log, as RoomEvents or InboxEvents.
type logReader func(ctx context.Context, owner string, after store.MessageID, limit int) ([]store.Event, error)

func roomLog(t *testing.T, s store.EventLog, room string, after store.MessageID) []store.Event {
	t.Helper()
	return readLog(t, "RoomEvents", s.RoomEvents, room, after)
}

func inboxLog(t *testing.T, s store.EventLog, login string, after store.MessageID) []store.Event {
	t.Helper()
	return readLog(t, "InboxEvents", s.InboxEvents, login, after)
}

// readLog reads a whole log after the cursor in one page.
func readLog(t *testing.T, what string, read logReader, owner string, after store.MessageID) []store.Event {
	t.Helper()
	events, err := read(newContext(t), owner, after, 1000)
	if err != nil {
		t.Fatalf("%s(%q, %v) = %v, want nil", what, owner, after, err)
	}
	return events
}

// pageLog reads a log after the cursor, limit at a time, each page after
// the last id of the one before, until a page comes short. Every page must
// be oldest first, strictly after its cursor, and full unless it is the
// last: events left out do not shorten a page.
func pageLog(t *testing.T, what string, read logReader, owner string, after store.MessageID, limit int) []store.Event {
	t.Helper()
	ctx := newContext(t)
	var all []store.Event
	for page := 0; ; page++ {
		if page > 1000 {
			t.Fatalf("%s(%q) paging by %d never ends", what, owner, limit)
		}
		call := fmt.Sprintf("%s(%q, after %v, %d) (page %d)", what, owner, after, limit, page)
		events, err := read(ctx, owner, after, limit)
		if err != nil {
			t.Fatalf("%s = %v, want nil", call, err)
		}
		if len(events) > limit {
			t.Fatalf("%s returned %d events, want at most %d", call, len(events), limit)
		}
		for i, ev := range events {
			if !after.IsZero() && ev.ID.Compare(after) <= 0 {
				t.Fatalf("%s[%d] = %s, not after the cursor %v", call, i, fmtEvent(ev), after)
			}
			after = ev.ID
		}
		all = append(all, events...)
		if len(events) < limit {
			// The end of the log: reading on finds nothing more.
			if more, err := read(ctx, owner, after, limit); err != nil || len(more) != 0 {
				t.Errorf("%s came short, but the log goes on: %s, %v", call, fmtEvents(more), err)
			}
			return all
		}
	}
}

// systemMessage is a system message of the store, by u.
func systemMessage(room string, id store.MessageID, u store.UserRef, content string) store.Message {
	return store.Message{Room: room, ID: id, Author: u, Content: content, System: true}
}

// arrival is the event of kind recording the arrival of m, a system
// message by the user the event is about: a join, a leave, an addition.
func arrival(kind store.EventKind, m store.Message) store.Event {
	return store.Event{ID: m.ID, Kind: kind, Room: m.Room, User: m.Author, Message: &m}
}

// inboxEvent is an event of an inbox log, about a message of the
// conversation m.Room.
func inboxEvent(kind store.EventKind, user store.UserRef, m store.Message) store.Event {
	return store.Event{ID: m.ID, Kind: kind, Room: m.Room, User: user, Message: &m}
}

// postedEvents are the MessagePosted events of msgs, in order.
func postedEvents(msgs []store.Message) []store.Event {
	events := make([]store.Event, len(msgs))
	for i, m := range msgs {
		events[i] = store.PostedEvent(m)
	}
	return events
}

// withHidden returns the events with the message of id hidden, as a log
// joins it after a hide.
func withHidden(events []store.Event, id store.MessageID) []store.Event {
	out := slices.Clone(events)
	for i, ev := range out {
		if ev.Message != nil && ev.Message.ID == id {
			m := hidden(*ev.Message)
			out[i].Message = &m
		}
	}
	return out
}

// checkAt checks that an event the caller timed at `at` has an id of that
// time (to the 100 ns of a timeuuid).
func checkAt(t *testing.T, what string, ev store.Event, at time.Time) {
	t.Helper()
	if want := at.Truncate(100 * time.Nanosecond); !ev.ID.Time().Equal(want) {
		t.Errorf("%s has an id of time %v, want %v (MessageIDAt of the time given)", what, ev.ID.Time(), want.UTC())
	}
}

// checkFresh checks that ev has a fresh id: newer than every id of before.
func checkFresh(t *testing.T, what string, ev store.Event, before ...store.MessageID) {
	t.Helper()
	for _, id := range before {
		if ev.ID.Compare(id) <= 0 {
			t.Errorf("%s has id %v (%s), want a fresh one, newer than %v", what, ev.ID, ev.ID.Time().Format(time.RFC3339Nano), id)
		}
	}
}

// Room logs (RunTests).

// testRoomEventsPosts: each post is logged once, as PostedEvent of the
// message (the id is the message's, the message whole), oldest first;
// reading after a cursor returns what follows it.
func testRoomEventsPosts(t *testing.T, s store.Store) {
	ctx := newContext(t)
	alice, room := chatRoom(t, ctx, s, "posts")
	if got := roomLog(t, s, room.Name, store.MessageID{}); len(got) != 0 {
		t.Errorf("RoomEvents of a new room = %s, want none: creating a room logs nothing", fmtEvents(got))
	}
	bob := mustCreateUser(t, ctx, s, "bob").UserRef
	_, joined, err := s.JoinRoom(ctx, room.Name, bob)
	if err != nil {
		t.Fatalf("JoinRoom = %v", err)
	}
	posts := []store.Message{
		mustPost(t, ctx, s, room.Name, store.NewMessageID(), alice.UserRef, "first ✓"),
		mustPost(t, ctx, s, room.Name, store.NewMessageID(), bob, "second"),
	}
	sys := store.Message{Room: room.Name, ID: store.NewMessageID(), Author: bob, Content: "posted as a system message", System: true}
	if err := s.PostMessage(ctx, sys); err != nil {
		t.Fatalf("PostMessage(%s) = %v", fmtMessage(sys), err)
	}
	posts = append(posts, sys, mustPost(t, ctx, s, room.Name, store.NewMessageID(), alice.UserRef, "fourth"))
	all := append([]store.Event{joined}, postedEvents(posts)...)

	checkEvents(t, "RoomEvents(zero)", roomLog(t, s, room.Name, store.MessageID{}), all...)
	for i, ev := range all {
		checkEvents(t, fmt.Sprintf("RoomEvents(after event %d)", i), roomLog(t, s, room.Name, ev.ID), all[i+1:]...)
	}
	page, err := s.RoomEvents(ctx, room.Name, store.MessageID{}, 2)
	if err != nil {
		t.Fatal(err)
	}
	checkEvents(t, "RoomEvents(zero, 2)", page, all[:2]...)
	page, err = s.RoomEvents(ctx, room.Name, all[1].ID, 2)
	if err != nil {
		t.Fatal(err)
	}
	checkEvents(t, "RoomEvents(event 1, 2)", page, all[2:4]...)
	for _, limit := range []int{1, 2, 3, 5, 100} {
		checkEvents(t, fmt.Sprintf("RoomEvents paged by %d", limit), pageLog(t, "RoomEvents", s.RoomEvents, room.Name, store.MessageID{}, limit), all...)
	}
	if got := roomLog(t, s, newRoomName(t, "nowhere"), store.MessageID{}); len(got) != 0 {
		t.Errorf("RoomEvents of no room = %s, want none", fmtEvents(got))
	}
}

// testRoomEventsAcrossDays pages a log whose events lie in several days,
// with days without events between, posted out of order.
func testRoomEventsAcrossDays(t *testing.T, s store.Store) {
	ctx := newContext(t)
	author, room := chatRoom(t, ctx, s, "days")
	const day = 24 * time.Hour
	today := store.BucketOf(time.Now()).Start()
	d := func(daysAgo int, offset time.Duration) time.Time {
		return today.Add(-time.Duration(daysAgo)*day + offset)
	}
	times := []time.Time{
		d(6, time.Hour), d(6, 2*time.Hour), // nothing 5 and 4 days ago
		d(3, day-100*time.Nanosecond), d(2, 0), // the last tick of a day, the first of the next
		d(2, time.Minute), d(1, 12*time.Hour),
	}
	var msgs []store.Message
	for i, at := range times {
		msgs = append(msgs, store.Message{Room: room.Name, ID: store.MessageIDAt(at), Author: author.UserRef, Content: fmt.Sprint("day ", i)})
	}
	msgs = append(msgs, store.Message{Room: room.Name, ID: store.NewMessageID(), Author: author.UserRef, Content: "today"})
	for _, i := range rand.Perm(len(msgs)) {
		if err := s.PostMessage(ctx, msgs[i]); err != nil {
			t.Fatalf("PostMessage(%s) = %v", fmtMessage(msgs[i]), err)
		}
	}
	want := postedEvents(msgs)
	for _, limit := range []int{1, 2, 3, 10} {
		checkEvents(t, fmt.Sprintf("RoomEvents paged by %d", limit), pageLog(t, "RoomEvents", s.RoomEvents, room.Name, store.MessageID{}, limit), want...)
	}
	for _, c := range []struct {
		what   string
		cursor store.MessageID
		rest   []store.Event
	}{
		{"before every day", store.MessageIDAt(d(9, 0)), want},
		{"between two events of a day", store.MessageIDAt(d(6, 90*time.Minute)), want[1:]},
		{"in a day without events", store.MessageIDAt(d(4, 0)), want[2:]},
		{"at the last tick of a day", msgs[2].ID, want[3:]},
		{"at the newest event", msgs[len(msgs)-1].ID, nil},
		{"in the future", store.MessageIDAt(time.Now().Add(time.Hour)), nil},
	} {
		checkEvents(t, "RoomEvents after a cursor "+c.what+" paged by 2", pageLog(t, "RoomEvents", s.RoomEvents, room.Name, c.cursor, 2), c.rest...)
	}
}

// testRoomEventsJoin: a join stores its system message and logs
// ParticipantJoined with it; joining again logs nothing.
func testRoomEventsJoin(t *testing.T, s store.Store) {
	ctx := newContext(t)
	creator, room := chatRoom(t, ctx, s, "join")
	joiner := mustCreateUser(t, ctx, s, "joiner").UserRef
	before := mustPost(t, ctx, s, room.Name, store.NewMessageID(), creator.UserRef, "before")

	_, joined, err := s.JoinRoom(ctx, room.Name, joiner)
	if err != nil {
		t.Fatalf("JoinRoom = %v", err)
	}
	if joined.Message == nil {
		t.Fatalf("JoinRoom returned %s, want an event with its system message", fmtEvent(joined))
	}
	m := systemMessage(room.Name, joined.ID, joiner, joiner.Login+" joined the room")
	checkEvent(t, "JoinRoom's event", joined, arrival(store.ParticipantJoined, m))
	checkFresh(t, "JoinRoom's event", joined, before.ID)

	_, again, err := s.JoinRoom(ctx, room.Name, joiner)
	if err != nil {
		t.Fatalf("JoinRoom again = %v", err)
	}
	checkNoEvent(t, "JoinRoom again", again)
	// The creator is a participant already: joining logs nothing either.
	_, own, err := s.JoinRoom(ctx, room.Name, creator.UserRef)
	if err != nil {
		t.Fatalf("JoinRoom by the creator = %v", err)
	}
	checkNoEvent(t, "JoinRoom by the creator", own)

	checkEvents(t, "RoomEvents", roomLog(t, s, room.Name, store.MessageID{}), store.PostedEvent(before), arrival(store.ParticipantJoined, m))
	checkMessages(t, "Messages", mustMessages(t, ctx, s, room.Name, store.MessageID{}, 10), []store.Message{m, before})
}

// testRoomEventsLeave: a leave stores its system message and logs
// ParticipantLeft with it; a leave that fails logs nothing.
func testRoomEventsLeave(t *testing.T, s store.Store) {
	ctx := newContext(t)
	_, room := chatRoom(t, ctx, s, "leave")
	leaver := mustCreateUser(t, ctx, s, "leaver").UserRef
	stranger := mustCreateUser(t, ctx, s, "stranger").UserRef
	_, joined, err := s.JoinRoom(ctx, room.Name, leaver)
	if err != nil {
		t.Fatalf("JoinRoom = %v", err)
	}
	post := mustPost(t, ctx, s, room.Name, store.NewMessageID(), leaver, "bye")

	left, err := s.LeaveRoom(ctx, room.Name, leaver)
	if err != nil {
		t.Fatalf("LeaveRoom = %v", err)
	}
	if left.Message == nil {
		t.Fatalf("LeaveRoom returned %s, want an event with its system message", fmtEvent(left))
	}
	m := systemMessage(room.Name, left.ID, leaver, leaver.Login+" left the room")
	checkEvent(t, "LeaveRoom's event", left, arrival(store.ParticipantLeft, m))
	checkFresh(t, "LeaveRoom's event", left, post.ID)

	_, err = s.LeaveRoom(ctx, room.Name, leaver)
	wantErr(t, "LeaveRoom again", err, store.ErrNotFound)
	_, err = s.LeaveRoom(ctx, room.Name, stranger)
	wantErr(t, "LeaveRoom by a non-participant", err, store.ErrNotFound)

	want := []store.Event{joined, store.PostedEvent(post), arrival(store.ParticipantLeft, m)}
	checkEvents(t, "RoomEvents", roomLog(t, s, room.Name, store.MessageID{}), want...)
	checkEvents(t, "RoomEvents after the post", roomLog(t, s, room.Name, post.ID), want[2:]...)
	checkMessages(t, "Messages", mustMessages(t, ctx, s, room.Name, store.MessageID{}, 10), []store.Message{m, post, *joined.Message})
}

// testRoomEventsHide: a hide logs MessageHidden with a fresh id, by whoever
// hid it, in the day it happened, also when no message was posted that
// day; the replayed MessagePosted shows the message hidden.
func testRoomEventsHide(t *testing.T, s store.Store) {
	ctx := newContext(t)
	creator, room := chatRoom(t, ctx, s, "hide")
	author := mustCreateUser(t, ctx, s, "author").UserRef
	// Two days ago, the room's only day with messages.
	old := mustPost(t, ctx, s, room.Name, store.MessageIDAt(time.Now().Add(-49*time.Hour)), author, "regrettable")
	kept := mustPost(t, ctx, s, room.Name, store.MessageIDAt(old.ID.Time().Add(time.Second)), author, "fine")

	hid, err := s.HideMessage(ctx, old, creator.UserRef)
	if err != nil {
		t.Fatalf("HideMessage = %v", err)
	}
	want := store.Event{ID: hid.ID, Kind: store.MessageHidden, Room: room.Name, User: creator.UserRef, Message: new(hidden(old))}
	checkEvent(t, "HideMessage's event", hid, want)
	checkFresh(t, "HideMessage's event", hid, old.ID, kept.ID)

	all := []store.Event{store.PostedEvent(hidden(old)), store.PostedEvent(kept), want}
	checkEvents(t, "RoomEvents", roomLog(t, s, room.Name, store.MessageID{}), all...)
	checkEvents(t, "RoomEvents after the posts", roomLog(t, s, room.Name, kept.ID), want)
	checkEvents(t, "RoomEvents paged by 1", pageLog(t, "RoomEvents", s.RoomEvents, room.Name, store.MessageID{}, 1), all...)
	checkEvents(t, "RoomEvents after the hide", roomLog(t, s, room.Name, hid.ID))
}

// testRoomEventsDeleted: deleting a room deletes its log; a room of the
// same name starts a log of its own, empty.
func testRoomEventsDeleted(t *testing.T, s store.Store) {
	ctx := newContext(t)
	creator, room := chatRoom(t, ctx, s, "gone")
	joiner := mustCreateUser(t, ctx, s, "joiner").UserRef
	mustJoinRoom(t, ctx, s, room.Name, joiner)
	old := mustPost(t, ctx, s, room.Name, store.MessageIDAt(time.Now().Add(-72*time.Hour)), creator.UserRef, "old")
	m := mustPost(t, ctx, s, room.Name, store.NewMessageID(), joiner, "before")
	if _, err := s.HideMessage(ctx, m, creator.UserRef); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LeaveRoom(ctx, room.Name, joiner); err != nil {
		t.Fatal(err)
	}
	if n := len(roomLog(t, s, room.Name, store.MessageID{})); n != 5 {
		t.Fatalf("RoomEvents before the delete has %d events, want 5", n)
	}

	_, ev, err := s.DeleteRoom(ctx, room.Name, creator.UserRef)
	if err != nil {
		t.Fatalf("DeleteRoom = %v", err)
	}
	checkEvent(t, "DeleteRoom's event", ev, store.Event{ID: ev.ID, Kind: store.RoomDeleted, Room: room.Name, User: creator.UserRef})
	checkFresh(t, "DeleteRoom's event", ev, m.ID)
	for _, after := range []store.MessageID{{}, store.MessageIDAt(old.ID.Time().Add(-time.Hour)), old.ID} {
		if got, err := s.RoomEvents(ctx, room.Name, after, 10); err != nil && !errors.Is(err, store.ErrNotFound) || len(got) != 0 {
			t.Errorf("RoomEvents(%v) of the deleted room = %s, %v; want none", after, fmtEvents(got), err)
		}
	}

	if err := s.CreateRoom(ctx, newRoom(room.Name, joiner)); err != nil {
		t.Fatal(err)
	}
	checkEvents(t, "RoomEvents of the new room of the same name", roomLog(t, s, room.Name, store.MessageID{}))
	checkEvents(t, "RoomEvents of the new room after an old cursor", roomLog(t, s, room.Name, store.MessageIDAt(old.ID.Time().Add(-time.Hour))))
	after := mustPost(t, ctx, s, room.Name, store.NewMessageID(), joiner, "after")
	checkEvents(t, "RoomEvents of the new room", roomLog(t, s, room.Name, store.MessageID{}), store.PostedEvent(after))
}

// testRoomEventsConcurrentPosts: concurrent posts are each logged once.
func testRoomEventsConcurrentPosts(t *testing.T, s store.Store) {
	ctx := newContext(t)
	author, room := chatRoom(t, ctx, s, "busy")
	const posts = 50
	msgs := make([]store.Message, posts)
	var wg sync.WaitGroup
	for i := range msgs {
		wg.Go(func() {
			m := store.Message{Room: room.Name, ID: store.NewMessageID(), Author: author.UserRef, Content: fmt.Sprint("concurrent ", i)}
			if err := s.PostMessage(ctx, m); err != nil {
				t.Errorf("PostMessage(%s) = %v", fmtMessage(m), err)
			}
			msgs[i] = m
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	want := postedEvents(oldestFirst(msgs))
	checkEvents(t, "RoomEvents", roomLog(t, s, room.Name, store.MessageID{}), want...)
	checkEvents(t, "RoomEvents paged by 7", pageLog(t, "RoomEvents", s.RoomEvents, room.Name, store.MessageID{}, 7), want...)
}

// testRoomEventsJoinLeaveOnce races joins of one user, then leaves: exactly
// one of each changes the room, returns its event and logs it.
func testRoomEventsJoinLeaveOnce(t *testing.T, s store.Store) {
	ctx := newContext(t)
	_, room := chatRoom(t, ctx, s, "once")
	u := mustCreateUser(t, ctx, s, "racer").UserRef
	const racers = 8
	race := func(op func() (store.Event, error)) (logged []store.Event, errs []error) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range racers {
			wg.Go(func() {
				<-start
				ev, err := op()
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
				} else if !ev.ID.IsZero() {
					logged = append(logged, ev)
				}
			})
		}
		close(start)
		wg.Wait()
		return logged, errs
	}
	joins, errs := race(func() (store.Event, error) {
		_, ev, err := s.JoinRoom(ctx, room.Name, u)
		return ev, err
	})
	if len(errs) != 0 || len(joins) != 1 {
		t.Fatalf("%d racing joins: %d returned an event, errors %v; want one event, no error", racers, len(joins), errs)
	}
	leaves, errs := race(func() (store.Event, error) { return s.LeaveRoom(ctx, room.Name, u) })
	if len(leaves) != 1 || len(errs) != racers-1 {
		t.Fatalf("%d racing leaves: %d succeeded, errors %v; want one", racers, len(leaves), errs)
	}
	for _, err := range errs {
		wantErr(t, "a losing LeaveRoom", err, store.ErrNotFound)
	}
	checkEvents(t, "RoomEvents", roomLog(t, s, room.Name, store.MessageID{}), joins[0], leaves[0])
	msgs := mustMessages(t, ctx, s, room.Name, store.MessageID{}, 10)
	checkMessages(t, "Messages", msgs, []store.Message{*leaves[0].Message, *joins[0].Message})
}

// Group and inbox logs (RunConversationTests).

// testGroupEvents: adding a member logs ParticipantJoined in the group's
// log and AddedToGroup in the member's inbox log, with the system message
// of time `at`; adding again logs nothing; a post is logged in the group's
// log and, with its message, in the inbox log of every member but its
// author; a leave logs ParticipantLeft at `at`.
func testGroupEvents(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	alice := mustCreateUser(t, ctx, s, "alice").UserRef
	bob := mustCreateUser(t, ctx, s, "bob").UserRef
	carol := mustCreateUser(t, ctx, s, "carol").UserRef
	g := mustCreateGroupAt(t, ctx, s, "events", alice, time.Now().Add(-time.Hour))
	base := time.Now().Add(-time.Minute)
	atBob, atCarol, atLeave := base, base.Add(time.Second), base.Add(3*time.Second)

	add := func(by, u store.UserRef, at time.Time) (store.Room, store.Event) {
		t.Helper()
		r, ev, err := s.AddGroupMember(ctx, g.Name, by, u, at)
		if err != nil {
			t.Fatalf("AddGroupMember(%q by %q) = %v", u.Login, by.Login, err)
		}
		return r, ev
	}
	_, bobJoined := add(alice, bob, atBob)
	bobAdded := systemMessage(g.Name, bobJoined.ID, bob, alice.Login+" added "+bob.Login+" to the group")
	checkEvent(t, "AddGroupMember(bob)'s event", bobJoined, arrival(store.ParticipantJoined, bobAdded))
	checkAt(t, "AddGroupMember(bob)'s event", bobJoined, atBob)
	r, carolJoined := add(bob, carol, atCarol)
	carolAdded := systemMessage(g.Name, carolJoined.ID, carol, bob.Login+" added "+carol.Login+" to the group")
	checkEvent(t, "AddGroupMember(carol) by bob's event", carolJoined, arrival(store.ParticipantJoined, carolAdded))
	checkAt(t, "AddGroupMember(carol)'s event", carolJoined, atCarol)
	// Again, by another member, later: nothing logged.
	_, again := add(carol, bob, atCarol.Add(time.Second))
	checkNoEvent(t, "AddGroupMember(bob) again", again)
	_, own := add(alice, alice, atCarol.Add(time.Second))
	checkNoEvent(t, "AddGroupMember of the creator", own)

	m := mustPostGroup(t, ctx, s, g.Name, store.MessageIDAt(base.Add(2*time.Second)), bob, "plan", r.Participants)
	left, err := s.LeaveGroup(ctx, g.Name, carol, atLeave)
	if err != nil {
		t.Fatalf("LeaveGroup = %v", err)
	}
	carolLeft := systemMessage(g.Name, left.ID, carol, carol.Login+" left the room")
	checkEvent(t, "LeaveGroup's event", left, arrival(store.ParticipantLeft, carolLeft))
	checkAt(t, "LeaveGroup's event", left, atLeave)
	_, err = s.LeaveGroup(ctx, g.Name, carol, atLeave.Add(time.Second))
	wantErr(t, "LeaveGroup again", err, store.ErrNotFound)

	groupLog := []store.Event{
		arrival(store.ParticipantJoined, bobAdded),
		arrival(store.ParticipantJoined, carolAdded),
		store.PostedEvent(m),
		arrival(store.ParticipantLeft, carolLeft),
	}
	checkEvents(t, "the group's log", roomLog(t, s, g.Name, store.MessageID{}), groupLog...)
	checkEvents(t, "the group's log paged by 1", pageLog(t, "RoomEvents", s.RoomEvents, g.Name, store.MessageID{}, 1), groupLog...)
	checkEvents(t, "the group's log after the post", roomLog(t, s, g.Name, m.ID), groupLog[3:]...)

	unread := inboxEvent(store.UnreadChanged, bob, m)
	checkEvents(t, "alice's inbox log", inboxLog(t, s, alice.Login, store.MessageID{}), unread)
	checkEvents(t, "bob's inbox log (his own post is not unread)", inboxLog(t, s, bob.Login, store.MessageID{}),
		inboxEvent(store.AddedToGroup, alice, bobAdded))
	carolLog := []store.Event{inboxEvent(store.AddedToGroup, bob, carolAdded), unread}
	checkEvents(t, "carol's inbox log", inboxLog(t, s, carol.Login, store.MessageID{}), carolLog...)
	checkEvents(t, "carol's inbox log after her addition", inboxLog(t, s, carol.Login, carolAdded.ID), unread)
	checkEvents(t, "carol's inbox log paged by 1", pageLog(t, "InboxEvents", s.InboxEvents, carol.Login, store.MessageID{}, 1), carolLog...)

	// The system messages are the group's messages, in the windows.
	checkMessages(t, "Messages of the group", mustMessages(t, ctx, s, g.Name, store.MessageID{}, 10), []store.Message{carolLeft, m, carolAdded, bobAdded})
	windows := mustConversation(t, ctx, s, carol.Login, g.Name).Windows
	checkMessages(t, "GroupMessages for carol", mustGroupMessages(t, ctx, s, g.Name, windows, store.MessageID{}, 10), []store.Message{m, carolAdded})
}

// testGroupEventsDeleted deletes a group with a member and a member who
// left: both lose their entry, their inbox logs leave its events out, and a
// later group of the same name is none of theirs.
func testGroupEventsDeleted(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	alice := mustCreateUser(t, ctx, s, "alice").UserRef
	bob := mustCreateUser(t, ctx, s, "bob").UserRef
	carol := mustCreateUser(t, ctx, s, "carol").UserRef
	dave := mustCreateUser(t, ctx, s, "dave").UserRef
	g := mustCreateGroup(t, ctx, s, "doomed", alice)
	mustAddMember(t, ctx, s, g.Name, alice.Login, bob, time.Now())
	members := mustAddMember(t, ctx, s, g.Name, alice.Login, carol, time.Now()).Participants
	// A direct message before and after the group's events, which stays.
	dm1 := mustSendDirect(t, ctx, s, alice, carol, store.NewMessageID(), "before")
	mustPostGroup(t, ctx, s, g.Name, store.MessageIDAt(time.Now().Add(-26*time.Hour)), alice, "old secret", members)
	mustPostGroup(t, ctx, s, g.Name, store.NewMessageID(), bob, "the old group's secret", members)
	mustLeaveGroup(t, ctx, s, g.Name, carol, time.Now())
	dm2 := mustSendDirect(t, ctx, s, carol, alice, store.NewMessageID(), "after")
	if n := len(inboxLog(t, s, carol.Login, store.MessageID{})); n != 5 {
		t.Fatalf("carol's inbox log before the delete has %d events, want 5", n)
	}

	if _, _, err := s.DeleteRoom(ctx, g.Name, alice); err != nil {
		t.Fatalf("DeleteRoom = %v", err)
	}
	wantGone := func(when string) {
		t.Helper()
		for _, u := range []store.UserRef{alice, bob, carol} {
			wantNoConversation(t, ctx, s, u.Login, g.Name)
		}
		checkEvents(t, "alice's inbox log "+when, inboxLog(t, s, alice.Login, store.MessageID{}),
			inboxEvent(store.DirectMessage, alice, dm1), inboxEvent(store.DirectMessage, carol, dm2))
		checkEvents(t, "bob's inbox log "+when, inboxLog(t, s, bob.Login, store.MessageID{}))
		carolLog := []store.Event{inboxEvent(store.DirectMessage, alice, dm1), inboxEvent(store.DirectMessage, carol, dm2)}
		checkEvents(t, "carol's inbox log "+when, inboxLog(t, s, carol.Login, store.MessageID{}), carolLog...)
		checkEvents(t, "carol's inbox log paged by 1 "+when, pageLog(t, "InboxEvents", s.InboxEvents, carol.Login, store.MessageID{}, 1), carolLog...)
		checkEvents(t, "carol's inbox log after the first message "+when, inboxLog(t, s, carol.Login, dm1.ID), carolLog[1:]...)
	}
	wantGone("after the delete")
	checkEvents(t, "the deleted group's log", roomLog(t, s, g.Name, store.MessageID{}))

	// A new group of the same name, by someone else.
	reborn := newGroup(g.Name, dave, time.Now())
	if err := s.CreateRoom(ctx, reborn); err != nil {
		t.Fatal(err)
	}
	wantGone("with a new group of the name")
	checkEvents(t, "the new group's log", roomLog(t, s, g.Name, store.MessageID{}))
	checkConversation(t, "dave's entry of the new group", mustConversation(t, ctx, s, dave.Login, g.Name), groupEntry(g.Name, store.Window{From: reborn.CreatedAt}))
}

// testInboxEventsDirect: a direct message is logged in both users' inbox
// logs; a mark-read in the reader's only, without a message, in the day it
// happened; hiding a direct message logs nothing.
func testInboxEventsDirect(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	alice, bob, id := dmUsers(t, ctx, s)
	// Two days ago: the inbox logs' only day until the mark-read.
	m := mustSendDirect(t, ctx, s, alice, bob, store.MessageIDAt(time.Now().Add(-49*time.Hour)), "hi")
	r := mustSendDirect(t, ctx, s, bob, alice, store.MessageIDAt(m.ID.Time().Add(time.Minute)), "hello")
	read, err := s.MarkRead(ctx, bob.Login, id, m.ID)
	if err != nil {
		t.Fatalf("MarkRead = %v", err)
	}
	checkEvent(t, "MarkRead's event", read, store.Event{ID: read.ID, Kind: store.UnreadChanged, Room: id, User: store.UserRef{Login: bob.Login}})
	checkFresh(t, "MarkRead's event", read, m.ID, r.ID)

	both := []store.Event{inboxEvent(store.DirectMessage, alice, m), inboxEvent(store.DirectMessage, bob, r)}
	bobs := append(slices.Clone(both), read)
	checkEvents(t, "bob's inbox log", inboxLog(t, s, bob.Login, store.MessageID{}), bobs...)
	checkEvents(t, "bob's inbox log after the reply", inboxLog(t, s, bob.Login, r.ID), read)
	checkEvents(t, "bob's inbox log paged by 1", pageLog(t, "InboxEvents", s.InboxEvents, bob.Login, store.MessageID{}, 1), bobs...)
	checkEvents(t, "alice's inbox log", inboxLog(t, s, alice.Login, store.MessageID{}), both...)

	hid, err := s.HideMessage(ctx, m, alice)
	if err != nil {
		t.Fatalf("HideMessage of a direct message = %v", err)
	}
	checkNoEvent(t, "HideMessage of a direct message", hid)
	checkEvents(t, "RoomEvents of the direct conversation", roomLog(t, s, id, store.MessageID{}))
	checkEvents(t, "alice's inbox log after the hide", inboxLog(t, s, alice.Login, store.MessageID{}), withHidden(both, m.ID)...)
	checkEvents(t, "bob's inbox log after the hide", inboxLog(t, s, bob.Login, store.MessageID{}), withHidden(bobs, m.ID)...)
}

// testInboxEventsPaging pages an inbox log of direct messages, group
// messages and additions over several days.
func testInboxEventsPaging(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	alice, bob, _ := dmUsers(t, ctx, s)
	const day = 24 * time.Hour
	today := store.BucketOf(time.Now()).Start()
	g := mustCreateGroupAt(t, ctx, s, "paging", alice, today.Add(-6*day))
	r, joined, err := s.AddGroupMember(ctx, g.Name, alice, bob, today.Add(-5*day))
	if err != nil {
		t.Fatal(err)
	}
	want := []store.Event{{ID: joined.ID, Kind: store.AddedToGroup, Room: g.Name, User: alice, Message: joined.Message}}
	for i, at := range []time.Time{
		today.Add(-5*day + time.Hour), today.Add(-3*day - 100*time.Nanosecond), today.Add(-3 * day),
		today.Add(-1*day + time.Minute), today.Add(-1*day + 2*time.Minute),
	} {
		if i%2 == 0 {
			m := mustSendDirect(t, ctx, s, alice, bob, store.MessageIDAt(at), fmt.Sprint("direct ", i))
			want = append(want, inboxEvent(store.DirectMessage, alice, m))
		} else {
			m := mustPostGroup(t, ctx, s, g.Name, store.MessageIDAt(at), alice, fmt.Sprint("group ", i), r.Participants)
			want = append(want, inboxEvent(store.UnreadChanged, alice, m))
		}
	}
	for _, limit := range []int{1, 2, 4, 100} {
		checkEvents(t, fmt.Sprintf("bob's inbox log paged by %d", limit), pageLog(t, "InboxEvents", s.InboxEvents, bob.Login, store.MessageID{}, limit), want...)
	}
	checkEvents(t, "bob's inbox log after a cursor in a day without events", pageLog(t, "InboxEvents", s.InboxEvents, bob.Login, store.MessageIDAt(today.Add(-2*day+time.Hour)), 2), want[4:]...)
	checkEvents(t, "bob's inbox log after a cursor before the events of its day", pageLog(t, "InboxEvents", s.InboxEvents, bob.Login, store.MessageIDAt(today.Add(-4*day)), 2), want[2:]...)
	checkEvents(t, "bob's inbox log after the last tick of a day", inboxLog(t, s, bob.Login, want[2].ID), want[3:]...)
	checkEvents(t, "bob's inbox log after the newest", inboxLog(t, s, bob.Login, want[len(want)-1].ID))
}

// testInboxEventsSkipGone pages an inbox log in which the events of a
// deleted group lie between others: they are left out, and pages stay full.
func testInboxEventsSkipGone(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	alice, bob, dm := dmUsers(t, ctx, s)
	g := mustCreateGroup(t, ctx, s, "skipped", alice)
	r := mustAddMember(t, ctx, s, g.Name, alice.Login, bob, time.Now())
	var want []store.Event
	for i := range 4 {
		m := mustSendDirect(t, ctx, s, alice, bob, store.NewMessageID(), fmt.Sprint("direct ", i))
		want = append(want, inboxEvent(store.DirectMessage, alice, m))
		for j := range 3 {
			mustPostGroup(t, ctx, s, g.Name, store.NewMessageID(), alice, fmt.Sprintf("group %d.%d", i, j), r.Participants)
		}
		if i == 1 {
			read, err := s.MarkRead(ctx, bob.Login, dm, m.ID)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, read)
		}
	}
	if n := len(inboxLog(t, s, bob.Login, store.MessageID{})); n != 1+4+12+1 {
		t.Fatalf("bob's inbox log before the delete has %d events, want %d", n, 1+4+12+1)
	}
	if _, _, err := s.DeleteRoom(ctx, g.Name, alice); err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int{1, 2, 3, 4, 100} {
		checkEvents(t, fmt.Sprintf("bob's inbox log paged by %d", limit), pageLog(t, "InboxEvents", s.InboxEvents, bob.Login, store.MessageID{}, limit), want...)
	}
	checkEvents(t, "bob's inbox log after the first message", inboxLog(t, s, bob.Login, want[0].ID), want[1:]...)
}

// testGroupEventsAddOnce races additions of one user by two members: one
// applies and logs, in the group's log and in the user's inbox log.
func testGroupEventsAddOnce(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	alice := mustCreateUser(t, ctx, s, "alice").UserRef
	bob := mustCreateUser(t, ctx, s, "bob").UserRef
	carol := mustCreateUser(t, ctx, s, "carol").UserRef
	g := mustCreateGroup(t, ctx, s, "addonce", alice)
	mustAddMember(t, ctx, s, g.Name, alice.Login, bob, time.Now())
	const racers = 6
	var (
		mu     sync.Mutex
		logged []store.Event
		errs   []error
		wg     sync.WaitGroup
	)
	base := time.Now()
	start := make(chan struct{})
	for i := range racers {
		wg.Go(func() {
			<-start
			by := []store.UserRef{alice, bob}[i%2]
			_, ev, err := s.AddGroupMember(ctx, g.Name, by, carol, base.Add(time.Duration(i)*time.Millisecond))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			} else if !ev.ID.IsZero() {
				logged = append(logged, ev)
			}
		})
	}
	close(start)
	wg.Wait()
	if len(errs) != 0 || len(logged) != 1 {
		t.Fatalf("%d racing additions: %d returned an event, errors %v; want one event", racers, len(logged), errs)
	}
	joined := logged[0]
	var carols []store.Event
	for _, ev := range roomLog(t, s, g.Name, store.MessageID{}) {
		if ev.User.Login == carol.Login {
			carols = append(carols, ev)
		}
	}
	checkEvents(t, "carol's events in the group's log", carols, joined)
	by := alice
	if strings.HasPrefix(joined.Message.Content, bob.Login+" ") {
		by = bob
	}
	checkEvents(t, "carol's inbox log", inboxLog(t, s, carol.Login, store.MessageID{}),
		store.Event{ID: joined.ID, Kind: store.AddedToGroup, Room: g.Name, User: by, Message: joined.Message})
	if c := mustConversation(t, ctx, s, carol.Login, g.Name); len(c.Windows) != 1 {
		t.Errorf("carol's entry = %s, want one window", fmtConversation(c))
	}
}

// testGroupEventsConcurrentPosts: concurrent posts to a group are each
// logged once in its log, and once in the inbox log of each other member.
func testGroupEventsConcurrentPosts(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	alice := mustCreateUser(t, ctx, s, "alice").UserRef
	bob := mustCreateUser(t, ctx, s, "bob").UserRef
	carol := mustCreateUser(t, ctx, s, "carol").UserRef
	g := mustCreateGroup(t, ctx, s, "busy", alice)
	mustAddMember(t, ctx, s, g.Name, alice.Login, bob, time.Now())
	members := mustAddMember(t, ctx, s, g.Name, alice.Login, carol, time.Now()).Participants
	after := roomLog(t, s, g.Name, store.MessageID{})[1].ID // carol's addition
	authors := []store.UserRef{alice, bob}
	const posts = 30
	msgs := make([]store.Message, posts)
	var wg sync.WaitGroup
	for i := range msgs {
		wg.Go(func() {
			m := store.Message{Room: g.Name, ID: store.NewMessageID(), Author: authors[i%2], Content: fmt.Sprint("concurrent ", i)}
			if err := s.PostGroupMessage(ctx, m, members); err != nil {
				t.Errorf("PostGroupMessage(%s) = %v", fmtMessage(m), err)
			}
			msgs[i] = m
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	msgs = oldestFirst(msgs)
	checkEvents(t, "the group's log", roomLog(t, s, g.Name, after), postedEvents(msgs)...)
	for _, u := range []store.UserRef{alice, bob, carol} {
		var want []store.Event
		for _, m := range msgs {
			if m.Author != u {
				want = append(want, inboxEvent(store.UnreadChanged, m.Author, m))
			}
		}
		got := inboxLog(t, s, u.Login, store.MessageID{})
		got = slices.DeleteFunc(got, func(ev store.Event) bool { return ev.Kind == store.AddedToGroup })
		checkEvents(t, u.Login+"'s inbox log", got, want...)
	}
}
