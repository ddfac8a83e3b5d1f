package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

// chatRoom makes a user and a room of its own for a messages test.
func chatRoom(t *testing.T, ctx context.Context, s store.Store, prefix string) (store.Account, store.Room) {
	t.Helper()
	u := mustCreateUser(t, ctx, s, "author")
	return u, mustCreateRoom(t, ctx, s, prefix, u.UserRef)
}

// mustMessages reads a page newest first.
func mustMessages(t *testing.T, ctx context.Context, s store.Store, room string, before store.MessageID, limit int) []store.Message {
	t.Helper()
	msgs, err := s.Messages(ctx, room, before, limit)
	if err != nil {
		t.Fatalf("Messages(%q, %v, %d) = %v, want nil", room, before, limit, err)
	}
	return msgs
}

// mustPostedAfter reads a page of the room's log, oldest first, and
// returns its messages: the log of a room where messages were only posted
// holds their MessagePosted events, one each, in order.
func mustPostedAfter(t *testing.T, ctx context.Context, s store.Store, room string, after store.MessageID, limit int) []store.Message {
	t.Helper()
	events, err := s.RoomEvents(ctx, room, after, limit)
	if err != nil {
		t.Fatalf("RoomEvents(%q, %v, %d) = %v, want nil", room, after, limit, err)
	}
	msgs := []store.Message{}
	for _, ev := range events {
		if ev.Kind != store.MessagePosted {
			continue // a hide, a join: see the event log tests
		}
		if ev.Message == nil || !sameEvent(ev, store.PostedEvent(*ev.Message)) || ev.Room != room {
			t.Fatalf("RoomEvents(%q): %s, want the MessagePosted event of its message", room, fmtEvent(ev))
		}
		msgs = append(msgs, *ev.Message)
	}
	return msgs
}

// postSequence posts n messages with fresh ids, oldest first.
func postSequence(t *testing.T, ctx context.Context, s store.Store, room string, author store.UserRef, n int) []store.Message {
	t.Helper()
	msgs := make([]store.Message, n)
	for i := range msgs {
		msgs[i] = mustPost(t, ctx, s, room, store.NewMessageID(), author, fmt.Sprintf("message %d ✓", i))
	}
	return msgs
}

// spreadTimes returns 25 instants of the last ten days: several per bucket,
// days with none between, the last and first ticks of two adjacent days,
// and three equal instants whose ids only differ in their low bytes. All are
// in the past.
func spreadTimes(now time.Time) []time.Time {
	const day = 24 * time.Hour
	today := store.BucketOf(now).Start()
	at := func(daysAgo int, d time.Duration) time.Time {
		return today.Add(-time.Duration(daysAgo)*day + d)
	}
	return []time.Time{
		at(10, time.Hour), at(10, time.Hour+time.Minute), at(10, 2*time.Hour),
		at(9, day-100*time.Nanosecond), // last tick of a day...
		at(8, 0), at(8, 12*time.Hour),  // ...and first of the next
		// Nothing 7, 6 and 5 days ago.
		at(4, 6*time.Hour), at(4, 6*time.Hour), at(4, 6*time.Hour), at(4, 7*time.Hour),
		at(3, 2*time.Hour), at(3, 3*time.Hour), at(3, 4*time.Hour), at(3, 5*time.Hour),
		at(2, 23*time.Hour),
		at(1, time.Minute), at(1, time.Hour), at(1, 5*time.Hour), at(1, 10*time.Hour), at(1, 15*time.Hour), at(1, 20*time.Hour),
		now.Add(-time.Hour), now.Add(-30 * time.Minute), now.Add(-time.Minute), now.Add(-time.Second),
	}
}

// postSpread posts a message at each of spreadTimes, in random order, and
// returns them oldest first.
func postSpread(t *testing.T, ctx context.Context, s store.Store, room string, authors ...store.UserRef) []store.Message {
	t.Helper()
	times := spreadTimes(time.Now())
	msgs := make([]store.Message, len(times))
	for i, at := range times {
		id := store.MessageIDAt(at)
		if i >= 6 && i <= 8 {
			// The equal instants: make byte 9 decide their order, with values
			// that sort differently as signed (Cassandra's timeuuid order,
			// MessageID.Compare) and as unsigned bytes.
			id[8] = 0x80 | 0x15
			id[9] = [...]byte{0x10, 0x90, 0xf0}[i-6]
		}
		msgs[i] = store.Message{
			Room:    room,
			ID:      id,
			Author:  authors[i%len(authors)],
			Content: fmt.Sprintf("spread %02d", i),
			System:  i%7 == 3,
		}
	}
	for _, i := range rand.Perm(len(msgs)) {
		if err := s.PostMessage(ctx, msgs[i]); err != nil {
			t.Fatalf("PostMessage(%s) = %v, want nil", fmtMessage(msgs[i]), err)
		}
	}
	return oldestFirst(msgs)
}

// pageNewestFirst reads the room's messages older than before, limit at a
// time, following each page's last id, until an empty page. Each page must
// be newest first, within its bound, and full unless it is the last.
func pageNewestFirst(t *testing.T, ctx context.Context, s store.Store, room string, before store.MessageID, limit int) []store.Message {
	t.Helper()
	return pageDown(t, fmt.Sprintf("Messages(%q)", room), before, limit, func(before store.MessageID, limit int) ([]store.Message, error) {
		return s.Messages(ctx, room, before, limit)
	})
}

// pageDown pages through a newest-first listing older than before, limit at
// a time, following each page's last id, until an empty page. Each page must
// be newest first, within its bound, and full unless it is the last. what
// names the listing in failures.
func pageDown(t *testing.T, what string, before store.MessageID, limit int, read func(before store.MessageID, limit int) ([]store.Message, error)) []store.Message {
	t.Helper()
	var all []store.Message
	short := -1 // the first page with fewer than limit messages
	for page := 0; ; page++ {
		if page > 1000 {
			t.Fatalf("%s paging with limit %d never ends", what, limit)
		}
		call := fmt.Sprintf("%s before %v, limit %d (page %d)", what, before.Time().Format(time.RFC3339Nano), limit, page)
		msgs, err := read(before, limit)
		if err != nil {
			t.Fatalf("%s = %v, want nil", call, err)
		}
		if len(msgs) == 0 {
			break
		}
		if len(msgs) > limit {
			t.Fatalf("%s returned %d messages, want at most %d", call, len(msgs), limit)
		}
		if short >= 0 {
			t.Errorf("%s returned %d messages after page %d came short, want full pages until the last", call, len(msgs), short)
		}
		if len(msgs) < limit {
			short = page
		}
		for i, m := range msgs {
			if !before.IsZero() && m.ID.Compare(before) >= 0 {
				t.Fatalf("%s[%d] = %s, not older than the cursor", call, i, fmtMessage(m))
			}
			before = m.ID
		}
		all = append(all, msgs...)
	}
	return all
}

// pageUp pages through an oldest-first listing newer than after, limit at a
// time, following each page's last id, as pageDown does the other way.
func pageUp(t *testing.T, what string, after store.MessageID, limit int, read func(after store.MessageID, limit int) ([]store.Message, error)) []store.Message {
	t.Helper()
	var all []store.Message
	short := -1 // the first page with fewer than limit messages
	for page := 0; ; page++ {
		if page > 1000 {
			t.Fatalf("%s paging with limit %d never ends", what, limit)
		}
		call := fmt.Sprintf("%s after %v, limit %d (page %d)", what, after.Time().Format(time.RFC3339Nano), limit, page)
		msgs, err := read(after, limit)
		if err != nil {
			t.Fatalf("%s = %v, want nil", call, err)
		}
		if len(msgs) == 0 {
			break
		}
		if len(msgs) > limit {
			t.Fatalf("%s returned %d messages, want at most %d", call, len(msgs), limit)
		}
		if short >= 0 {
			t.Errorf("%s returned %d messages after page %d came short, want full pages until the last", call, len(msgs), short)
		}
		if len(msgs) < limit {
			short = page
		}
		for i, m := range msgs {
			if !after.IsZero() && m.ID.Compare(after) <= 0 {
				t.Fatalf("%s[%d] = %s, not newer than the cursor", call, i, fmtMessage(m))
			}
			after = m.ID
		}
		all = append(all, msgs...)
	}
	return all
}

// pageOldestFirst reads the messages posted to the room after the cursor
// from its log, limit at a time, as pageNewestFirst does.
func pageOldestFirst(t *testing.T, ctx context.Context, s store.Store, room string, after store.MessageID, limit int) []store.Message {
	t.Helper()
	var all []store.Message
	short := -1
	for page := 0; ; page++ {
		if page > 1000 {
			t.Fatalf("RoomEvents(%q) paging with limit %d never ends", room, limit)
		}
		msgs := mustPostedAfter(t, ctx, s, room, after, limit)
		if len(msgs) == 0 {
			break
		}
		what := fmt.Sprintf("RoomEvents(%q, %v, %d) (page %d)", room, after.Time().Format(time.RFC3339Nano), limit, page)
		if len(msgs) > limit {
			t.Fatalf("%s returned %d messages, want at most %d", what, len(msgs), limit)
		}
		if short >= 0 {
			t.Errorf("%s returned %d messages after page %d came short, want full pages until the last", what, len(msgs), short)
		}
		if len(msgs) < limit {
			short = page
		}
		for i, m := range msgs {
			if m.ID.Compare(after) <= 0 {
				t.Fatalf("%s[%d] = %s, not newer than the cursor", what, i, fmtMessage(m))
			}
			after = m.ID
		}
		all = append(all, msgs...)
	}
	return all
}

func testMessagesNewestFirst(t *testing.T, s store.Store) {
	ctx := newContext(t)
	author, room := chatRoom(t, ctx, s, "newest")
	posted := postSequence(t, ctx, s, room.Name, author.UserRef, 5)
	want := newestFirst(posted)

	checkMessages(t, "Messages(zero, 10)", mustMessages(t, ctx, s, room.Name, store.MessageID{}, 10), want)
	checkMessages(t, "Messages(zero, 5)", mustMessages(t, ctx, s, room.Name, store.MessageID{}, 5), want)
	checkMessages(t, "Messages(zero, 3)", mustMessages(t, ctx, s, room.Name, store.MessageID{}, 3), want[:3])
	checkMessages(t, "Messages(zero, 1)", mustMessages(t, ctx, s, room.Name, store.MessageID{}, 1), want[:1])
	checkMessages(t, "Messages(3rd newest, 10)", mustMessages(t, ctx, s, room.Name, want[2].ID, 10), want[3:])
	checkMessages(t, "Messages(oldest, 10)", mustMessages(t, ctx, s, room.Name, want[4].ID, 10), nil)
}

func testMessagesEmpty(t *testing.T, s store.Store) {
	ctx := newContext(t)
	_, room := chatRoom(t, ctx, s, "silent")
	checkMessages(t, "Messages(zero, 10)", mustMessages(t, ctx, s, room.Name, store.MessageID{}, 10), nil)
	checkMessages(t, "Messages(now, 10)", mustMessages(t, ctx, s, room.Name, store.NewMessageID(), 10), nil)
	after := store.MessageIDAt(time.Now().Add(-72 * time.Hour))
	checkMessages(t, "RoomEvents(3 days ago, 10)", mustPostedAfter(t, ctx, s, room.Name, after, 10), nil)
}

// testMessagesPaging pages newest first through messages spread over ten
// days: the pages concatenate to all of them, with no gap and no duplicate.
func testMessagesPaging(t *testing.T, s store.Store) {
	ctx := newContext(t)
	alice, room := chatRoom(t, ctx, s, "history")
	bob := mustCreateUser(t, ctx, s, "bob")
	asc := postSpread(t, ctx, s, room.Name, alice.UserRef, bob.UserRef)
	want := newestFirst(asc)

	for _, limit := range []int{4, 1, 7, 100} {
		got := pageNewestFirst(t, ctx, s, room.Name, store.MessageID{}, limit)
		checkMessages(t, fmt.Sprintf("Messages paged by %d", limit), got, want)
	}

	// Cursors that are not message ids: in an empty day, and between the
	// equal instants' ids and the next.
	emptyDay := store.MessageIDAt(store.BucketOf(time.Now()).Start().Add(-6 * 24 * time.Hour))
	checkMessages(t, "Messages before an empty day", pageNewestFirst(t, ctx, s, room.Name, emptyDay, 4), newestFirst(asc[:6]))
	between := store.MessageIDAt(asc[8].ID.Time().Add(time.Minute))
	checkMessages(t, "Messages before the equal instants", pageNewestFirst(t, ctx, s, room.Name, between, 4), newestFirst(asc[:9]))
}

// testMessagesAfter pages oldest first with MessagesAfter through messages
// spread over ten days, from the oldest and from cursors: the pages
// concatenate to the messages newer than the cursor, with no gap and no
// duplicate.
func testMessagesAfter(t *testing.T, s store.Store) {
	ctx := newContext(t)
	alice, room := chatRoom(t, ctx, s, "upward")
	bob := mustCreateUser(t, ctx, s, "bob")
	asc := postSpread(t, ctx, s, room.Name, alice.UserRef, bob.UserRef)
	up := func(after store.MessageID, limit int) []store.Message {
		return pageUp(t, fmt.Sprintf("MessagesAfter(%q)", room.Name), after, limit, func(after store.MessageID, limit int) ([]store.Message, error) {
			return s.MessagesAfter(ctx, room.Name, after, limit)
		})
	}
	for _, limit := range []int{4, 1, 7, 100} {
		checkMessages(t, fmt.Sprintf("MessagesAfter paged by %d", limit), up(store.MessageID{}, limit), asc)
	}
	emptyDay := store.MessageIDAt(store.BucketOf(time.Now()).Start().Add(-6 * 24 * time.Hour))
	checkMessages(t, "MessagesAfter an empty day", up(emptyDay, 4), asc[6:])
	checkMessages(t, "MessagesAfter the second equal instant", up(asc[7].ID, 2), asc[8:])
	checkMessages(t, "MessagesAfter the last tick of a day", up(asc[3].ID, 3), asc[4:])
	checkMessages(t, "MessagesAfter the newest", up(asc[len(asc)-1].ID, 3), nil)

	// A page up from a cursor meets the page down from it.
	mid := asc[12].ID
	down := mustMessages(t, ctx, s, room.Name, mid, 100)
	checkMessages(t, "Messages down and up from a cursor", append(newestFirst(up(mid, 5)), append([]store.Message{asc[12]}, down...)...), newestFirst(asc))
}

// testRoomEventsPaging pages the log of messages spread over ten days,
// oldest first, from several cursors.
func testRoomEventsPaging(t *testing.T, s store.Store) {
	ctx := newContext(t)
	alice, room := chatRoom(t, ctx, s, "resume")
	bob := mustCreateUser(t, ctx, s, "bob")
	asc := postSpread(t, ctx, s, room.Name, alice.UserRef, bob.UserRef)

	// asc[6:9] share their instant: resume from the middle one.
	for _, k := range []int{7, 12, 3, 0, len(asc) - 2} {
		got := pageOldestFirst(t, ctx, s, room.Name, asc[k].ID, 3)
		checkMessages(t, fmt.Sprintf("RoomEvents(message %d) paged by 3", k), got, asc[k+1:])
	}
	checkMessages(t, "RoomEvents(newest, 10)", mustPostedAfter(t, ctx, s, room.Name, asc[len(asc)-1].ID, 10), nil)
	checkMessages(t, "RoomEvents(message 7, 4)", mustPostedAfter(t, ctx, s, room.Name, asc[7].ID, 4), asc[8:12])

	long := store.MessageIDAt(time.Now().Add(-30 * 24 * time.Hour))
	checkMessages(t, "RoomEvents(30 days ago) paged by 4", pageOldestFirst(t, ctx, s, room.Name, long, 4), asc)
	emptyDay := store.MessageIDAt(store.BucketOf(time.Now()).Start().Add(-6 * 24 * time.Hour))
	checkMessages(t, "RoomEvents(an empty day) paged by 5", pageOldestFirst(t, ctx, s, room.Name, emptyDay, 5), asc[6:])
}

// testRoomEventsZero resumes from the zero id, which paging reads as
// "none": every message, oldest first.
func testRoomEventsZero(t *testing.T, s store.Store) {
	ctx := newContext(t)
	alice, room := chatRoom(t, ctx, s, "replay")
	checkMessages(t, "RoomEvents(zero, 10) of an empty room", mustPostedAfter(t, ctx, s, room.Name, store.MessageID{}, 10), nil)
	asc := postSpread(t, ctx, s, room.Name, alice.UserRef)
	checkMessages(t, "RoomEvents(zero, 5)", mustPostedAfter(t, ctx, s, room.Name, store.MessageID{}, 5), asc[:5])
	checkMessages(t, "RoomEvents(zero) paged by 4", pageOldestFirst(t, ctx, s, room.Name, store.MessageID{}, 4), asc)
}

func testRoomEventsNewest(t *testing.T, s store.Store) {
	ctx := newContext(t)
	author, room := chatRoom(t, ctx, s, "tail")
	asc := postSequence(t, ctx, s, room.Name, author.UserRef, 3)
	checkMessages(t, "RoomEvents(newest, 10)", mustPostedAfter(t, ctx, s, room.Name, asc[2].ID, 10), nil)
	checkMessages(t, "RoomEvents(oldest, 10)", mustPostedAfter(t, ctx, s, room.Name, asc[0].ID, 10), asc[1:])
	checkMessages(t, "RoomEvents(oldest, 1)", mustPostedAfter(t, ctx, s, room.Name, asc[0].ID, 1), asc[1:2])
}

func testMessagesSystem(t *testing.T, s store.Store) {
	ctx := newContext(t)
	author, room := chatRoom(t, ctx, s, "system")
	joiner := mustCreateUser(t, ctx, s, "joiner")
	_, joined, err := s.JoinRoom(ctx, room.Name, joiner.UserRef)
	if err != nil || joined.Message == nil || !joined.Message.System || joined.Message.Content != joiner.Login+" joined the room" {
		t.Fatalf("JoinRoom = %+v, %v; want a ParticipantJoined event with its system message", joined, err)
	}
	join := store.Message{Room: room.Name, ID: store.NewMessageID(), Author: joiner.UserRef, Content: joiner.Login + " joined", System: true}
	if err := s.PostMessage(ctx, join); err != nil {
		t.Fatalf("PostMessage(%s) = %v, want nil", fmtMessage(join), err)
	}
	hello := mustPost(t, ctx, s, room.Name, store.NewMessageID(), author.UserRef, "hello")
	checkMessages(t, "Messages", mustMessages(t, ctx, s, room.Name, store.MessageID{}, 10), []store.Message{hello, join, *joined.Message})
}

// testMessagesReadYourWrites reads each message right after posting it.
func testMessagesReadYourWrites(t *testing.T, s store.Store) {
	ctx := newContext(t)
	author, room := chatRoom(t, ctx, s, "ryw")
	var prev store.Message
	for i := range 10 {
		m := mustPost(t, ctx, s, room.Name, store.NewMessageID(), author.UserRef, fmt.Sprintf("ping %d", i))
		checkMessages(t, fmt.Sprintf("Messages(zero, 1) after post %d", i), mustMessages(t, ctx, s, room.Name, store.MessageID{}, 1), []store.Message{m})
		if i > 0 {
			checkMessages(t, fmt.Sprintf("RoomEvents(post %d)", i-1), mustPostedAfter(t, ctx, s, room.Name, prev.ID, 10), []store.Message{m})
		}
		prev = m
	}
}

// testMessagesConcurrentPosts posts from several goroutines at once: every
// message is stored, once.
func testMessagesConcurrentPosts(t *testing.T, s store.Store) {
	const writers, perWriter = 8, 10
	ctx := newContext(t)
	author, room := chatRoom(t, ctx, s, "busy")
	posted := make([][]store.Message, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				m := store.Message{Room: room.Name, ID: store.NewMessageID(), Author: author.UserRef, Content: fmt.Sprintf("writer %d message %d", w, i)}
				if err := s.PostMessage(ctx, m); err != nil {
					t.Errorf("PostMessage(%s) = %v, want nil", fmtMessage(m), err)
					return
				}
				posted[w] = append(posted[w], m)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	var all []store.Message
	for _, ms := range posted {
		all = append(all, ms...)
	}
	want := newestFirst(all)
	checkMessages(t, "Messages(zero, 100)", mustMessages(t, ctx, s, room.Name, store.MessageID{}, 100), want)
	checkMessages(t, "Messages paged by 9", pageNewestFirst(t, ctx, s, room.Name, store.MessageID{}, 9), want)
}

// testMessagesRoomIsolation keeps the messages of rooms whose names are
// prefixes of one another apart, also when one of them is deleted.
func testMessagesRoomIsolation(t *testing.T, s store.Store) {
	ctx := newContext(t)
	author := mustCreateUser(t, ctx, s, "author")
	base := newRoomName(t, "iso")
	names := []string{base, base + "-1", base + "_1", base + "1", base + "-"}
	posted := map[string][]store.Message{}
	twoDaysAgo := time.Now().Add(-48 * time.Hour)
	for i, name := range names {
		if err := s.CreateRoom(ctx, newRoom(name, author.UserRef)); err != nil {
			t.Fatalf("CreateRoom(%q) = %v, want nil", name, err)
		}
		posted[name] = []store.Message{
			mustPost(t, ctx, s, name, store.MessageIDAt(twoDaysAgo.Add(time.Duration(i)*time.Second)), author.UserRef, "old in "+name),
			mustPost(t, ctx, s, name, store.NewMessageID(), author.UserRef, "new in "+name),
		}
	}
	for _, name := range names {
		want := newestFirst(posted[name])
		checkMessages(t, fmt.Sprintf("Messages(%q)", name), mustMessages(t, ctx, s, name, store.MessageID{}, 10), want)
		checkMessages(t, fmt.Sprintf("RoomEvents(%q)", name), mustPostedAfter(t, ctx, s, name, store.MessageIDAt(twoDaysAgo.Add(-time.Hour)), 10), posted[name])
	}

	if _, _, err := s.DeleteRoom(ctx, base, store.UserRef{Login: author.Login}); err != nil {
		t.Fatalf("DeleteRoom(%q) = %v, want nil", base, err)
	}
	for _, name := range names[1:] {
		checkMessages(t, fmt.Sprintf("Messages(%q) after deleting %q", name, base), mustMessages(t, ctx, s, name, store.MessageID{}, 10), newestFirst(posted[name]))
		wantChatRooms(t, ctx, s, author.Login, name, true)
	}
	wantChatRooms(t, ctx, s, author.Login, base, false)
}
