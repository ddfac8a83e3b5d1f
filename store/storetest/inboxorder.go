package storetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

func inboxOrderTests() []storeTest {
	return []storeTest{
		{"ByLastActivity", testInboxOrderByLastActivity},
		{"Paged", testInboxOrderPaged},
		{"RacingActivities", testInboxOrderRacing},
		{"OrderInbox", testOrderInbox},
		{"DropInboxPositions", testDropInboxPositions},
		{"LargeRooms", testInboxLargeRooms},
	}
}

// mustInboxPage reads a page of login's order.
func mustInboxPage(t *testing.T, ctx context.Context, s store.Store, login string, after store.InboxPosition, limit int) []store.InboxPosition {
	t.Helper()
	page, err := s.InboxPage(ctx, login, after, limit)
	if err != nil {
		t.Fatalf("InboxPage(%q, %v, %d) = %v, want nil", login, after, limit, err)
	}
	return page
}

// fmtPositions shows positions as conversation@activity, in order.
func fmtPositions(ps []store.InboxPosition) string {
	var parts []string
	for _, p := range ps {
		parts = append(parts, p.Conversation+"@"+p.Activity.String())
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func checkPositions(t *testing.T, what string, got, want []store.InboxPosition) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s = %s, want %s", what, fmtPositions(got), fmtPositions(want))
	}
}

// testInboxOrderByLastActivity: every kind of activity puts its conversation
// first in the order of whom it concerns, once, at the activity.
func testInboxOrderByLastActivity(t *testing.T, s store.Store) {
	ctx := newContext(t)
	alice, bob, dm := dmUsers(t, ctx, s)
	carol := mustCreateUser(t, ctx, s, "carol").UserRef

	room := mustCreateRoom(t, ctx, s, "order", alice)
	created := mustInboxPage(t, ctx, s, alice.Login, store.InboxPosition{}, 10)
	if len(created) != 1 || created[0].Conversation != room.Name {
		t.Fatalf("InboxPage(alice) after creating a room = %s, want the room", fmtPositions(created))
	}
	mustJoinRoom(t, ctx, s, room.Name, bob)
	group := mustCreateGroup(t, ctx, s, "order", alice)
	added := time.Now()
	mustAddMember(t, ctx, s, group.Name, alice.Login, carol, added)
	members := []store.UserRef{alice, carol}

	d := mustSendDirect(t, ctx, s, alice, bob, store.NewMessageID(), "hi bob")
	r := mustPost(t, ctx, s, room.Name, store.NewMessageID(), bob, "hi room")
	g := mustPostGroup(t, ctx, s, group.Name, store.NewMessageID(), carol, "hi group", members)

	checkPositions(t, "InboxPage(alice)", mustInboxPage(t, ctx, s, alice.Login, store.InboxPosition{}, 10), []store.InboxPosition{
		{Activity: g.ID, Conversation: group.Name},
		{Activity: r.ID, Conversation: room.Name},
		{Activity: d.ID, Conversation: dm},
	})
	checkPositions(t, "InboxPage(bob)", mustInboxPage(t, ctx, s, bob.Login, store.InboxPosition{}, 10), []store.InboxPosition{
		{Activity: r.ID, Conversation: room.Name},
		{Activity: d.ID, Conversation: dm},
	})
	carolPage := mustInboxPage(t, ctx, s, carol.Login, store.InboxPosition{}, 10)
	checkPositions(t, "InboxPage(carol)", carolPage, []store.InboxPosition{{Activity: g.ID, Conversation: group.Name}})

	// A reply moves the direct conversation first, and it is listed once,
	// however often it is read.
	d2 := mustSendDirect(t, ctx, s, bob, alice, store.NewMessageID(), "hi alice")
	want := []store.InboxPosition{
		{Activity: d2.ID, Conversation: dm},
		{Activity: g.ID, Conversation: group.Name},
		{Activity: r.ID, Conversation: room.Name},
	}
	for i := range 2 {
		checkPositions(t, fmt.Sprintf("InboxPage(alice) after the reply, read %d", i+1), mustInboxPage(t, ctx, s, alice.Login, store.InboxPosition{}, 10), want)
	}
}

// testInboxOrderPaged: pages of every size, each after the last position of
// the one before, list the whole order once, while moved conversations
// leave positions behind.
func testInboxOrderPaged(t *testing.T, s store.Store) {
	ctx := newContext(t)
	me := mustCreateUser(t, ctx, s, "pager").UserRef
	var peers []store.UserRef
	for range 7 {
		peers = append(peers, mustCreateUser(t, ctx, s, "peer").UserRef)
	}
	newest := map[string]store.MessageID{}
	for round := range 3 {
		for i, p := range peers {
			if round > 0 && i%2 == 0 {
				continue // the odd ones move, the even ones stay behind
			}
			m := mustSendDirect(t, ctx, s, p, me, store.NewMessageID(), "hello")
			newest[m.Room] = m.ID
		}
	}
	var want []store.InboxPosition
	for id, at := range newest {
		want = append(want, store.InboxPosition{Activity: at, Conversation: id})
	}
	slices.SortFunc(want, store.ComparePositions)
	for _, size := range []int{1, 2, 3, 7, 8} {
		var got []store.InboxPosition
		var after store.InboxPosition
		for range 20 {
			page := mustInboxPage(t, ctx, s, me.Login, after, size)
			if len(page) > size {
				t.Fatalf("InboxPage(limit %d) returned %d positions", size, len(page))
			}
			got = append(got, page...)
			if len(page) < size {
				break
			}
			after = page[len(page)-1]
		}
		checkPositions(t, fmt.Sprintf("the pages of %d", size), got, want)
	}
}

// testInboxOrderRacing: racing messages of two conversations leave each
// listed once, at its newest message, whatever order they landed in.
func testInboxOrderRacing(t *testing.T, s store.Store) {
	ctx := newContext(t)
	alice, bob, dm := dmUsers(t, ctx, s)
	group := mustCreateGroup(t, ctx, s, "racing", alice)
	mustAddMember(t, ctx, s, group.Name, alice.Login, bob, time.Now())
	members := []store.UserRef{alice, bob}

	const n = 12
	ids := make([]store.MessageID, 2*n)
	for i := range ids {
		ids[i] = store.NewMessageID()
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(ids))
	for i, id := range slices.Backward(ids) { // the newest first, more or less
		wg.Go(func() {
			if i%2 == 0 {
				errs <- s.SendDirect(ctx, directMessage(alice, bob, id, "race"), bob)
				return
			}
			errs <- s.PostGroupMessage(ctx, store.Message{Room: group.Name, ID: id, Author: bob, Content: "race"}, members)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a racing message: %v", err)
		}
	}
	newestDM, newestGroup := ids[len(ids)-2], ids[len(ids)-1]
	want := []store.InboxPosition{{Activity: newestGroup, Conversation: group.Name}, {Activity: newestDM, Conversation: dm}}
	for _, u := range members {
		checkPositions(t, fmt.Sprintf("InboxPage(%q)", u.Login), mustInboxPage(t, ctx, s, u.Login, store.InboxPosition{}, 10), want)
	}
}

// testOrderInbox: a backfill marks the order complete, and an older activity
// than one recorded does not move the conversation back.
func testOrderInbox(t *testing.T, s store.Store) {
	ctx := newContext(t)
	alice, bob, dm := dmUsers(t, ctx, s)
	if ordered, err := s.InboxOrdered(ctx, alice.Login); err != nil || ordered {
		t.Fatalf("InboxOrdered(a new user) = %v, %v, want false, nil", ordered, err)
	}
	m := mustSendDirect(t, ctx, s, alice, bob, store.NewMessageID(), "newer than the backfill")
	older := store.MessageIDAt(time.Now().Add(-time.Hour))
	elsewhere := store.InboxPosition{Activity: store.MessageIDAt(time.Now().Add(-2 * time.Hour)), Conversation: newRoomName(t, "backfilled")}
	if err := s.OrderInbox(ctx, alice.Login, []store.InboxPosition{{Activity: older, Conversation: dm}, elsewhere}); err != nil {
		t.Fatalf("OrderInbox = %v, want nil", err)
	}
	if ordered, err := s.InboxOrdered(ctx, alice.Login); err != nil || !ordered {
		t.Errorf("InboxOrdered after OrderInbox = %v, %v, want true, nil", ordered, err)
	}
	if ordered, err := s.InboxOrdered(ctx, bob.Login); err != nil || ordered {
		t.Errorf("InboxOrdered(bob) after alice's OrderInbox = %v, %v, want false, nil", ordered, err)
	}
	checkPositions(t, "InboxPage after OrderInbox", mustInboxPage(t, ctx, s, alice.Login, store.InboxPosition{}, 10), []store.InboxPosition{
		{Activity: m.ID, Conversation: dm},
		elsewhere,
	})
}

// testDropInboxPositions: a dropped position is no longer listed; a newer
// one of the same conversation is.
func testDropInboxPositions(t *testing.T, s store.Store) {
	ctx := newContext(t)
	alice := mustCreateUser(t, ctx, s, "alice").UserRef
	room := mustCreateRoom(t, ctx, s, "dropped", alice)
	other := mustCreateRoom(t, ctx, s, "kept", alice)
	page := mustInboxPage(t, ctx, s, alice.Login, store.InboxPosition{}, 10)
	i := slices.IndexFunc(page, func(p store.InboxPosition) bool { return p.Conversation == room.Name })
	if len(page) != 2 || i < 0 {
		t.Fatalf("InboxPage = %s, want both rooms", fmtPositions(page))
	}
	if err := s.DropInboxPositions(ctx, alice.Login, page[i:i+1]); err != nil {
		t.Fatalf("DropInboxPositions = %v, want nil", err)
	}
	got := mustInboxPage(t, ctx, s, alice.Login, store.InboxPosition{}, 10)
	if len(got) != 1 || got[0].Conversation != other.Name {
		t.Errorf("InboxPage after the drop = %s, want %q alone", fmtPositions(got), other.Name)
	}
	m := mustPost(t, ctx, s, room.Name, store.NewMessageID(), alice, "back")
	got = mustInboxPage(t, ctx, s, alice.Login, store.InboxPosition{}, 10)
	if len(got) != 2 || got[0] != (store.InboxPosition{Activity: m.ID, Conversation: room.Name}) {
		t.Errorf("InboxPage after a post = %s, want %q first at the post", fmtPositions(got), room.Name)
	}
}

// checkLarge checks login's large rooms.
func checkLarge(t *testing.T, ctx context.Context, s store.Store, login string, want ...string) {
	t.Helper()
	got, err := s.LargeInboxRooms(ctx, login)
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("LargeInboxRooms(%q) = %v, %v, want %v, nil", login, got, err, want)
	}
}

// checkFirst checks the first position of login's order.
func checkFirst(t *testing.T, ctx context.Context, s store.Store, what, login string, want store.InboxPosition) {
	t.Helper()
	page := mustInboxPage(t, ctx, s, login, store.InboxPosition{}, 1)
	if len(page) != 1 || page[0] != want {
		t.Errorf("%s: the first position of %q = %s, want %s", what, login, fmtPositions(page), fmtPositions([]store.InboxPosition{want}))
	}
}

// testInboxLargeRooms: a post to a public room of at most
// store.InboxFanoutLimit participants is an activity of each one's order;
// the join that takes it past the limit marks it large in every
// participant's order, a later join in the joiner's, and its posts then
// write no positions, until leaves take it back to the limit. The marks
// stay until dropped, and a drop spares a mark made after it.
func testInboxLargeRooms(t *testing.T, s store.Store) {
	ctx := newContext(t)
	host := mustCreateUser(t, ctx, s, "host").UserRef
	room := mustCreateRoom(t, ctx, s, "large", host)
	var last store.UserRef
	for n := 1; n < store.InboxFanoutLimit; n++ {
		last = mustCreateUser(t, ctx, s, "crowd").UserRef
		mustJoinRoom(t, ctx, s, room.Name, last)
	}
	atLimit := mustPost(t, ctx, s, room.Name, store.NewMessageID(), last, "at the limit")
	atLimitPos := store.InboxPosition{Activity: atLimit.ID, Conversation: room.Name}
	for _, u := range []store.UserRef{host, last} {
		checkFirst(t, ctx, s, "a post to a room at the limit", u.Login, atLimitPos)
		checkLarge(t, ctx, s, u.Login)
	}

	over := mustCreateUser(t, ctx, s, "over").UserRef
	if r := mustJoinRoom(t, ctx, s, room.Name, over); len(r.Participants) != store.InboxFanoutLimit+1 {
		t.Fatalf("the room has %d participants, want %d", len(r.Participants), store.InboxFanoutLimit+1)
	}
	for _, u := range []store.UserRef{host, last, over} {
		checkLarge(t, ctx, s, u.Login, room.Name)
	}
	mustPost(t, ctx, s, room.Name, store.NewMessageID(), host, "past the limit")
	checkFirst(t, ctx, s, "a post to a room past the limit", host.Login, atLimitPos)
	later := mustCreateUser(t, ctx, s, "later").UserRef
	mustJoinRoom(t, ctx, s, room.Name, later)
	checkLarge(t, ctx, s, later.Login, room.Name)

	// Back at the limit, posts are activities of every order again.
	for _, u := range []store.UserRef{over, later} {
		if _, err := s.LeaveRoom(ctx, room.Name, u); err != nil {
			t.Fatalf("LeaveRoom(%q) = %v", u.Login, err)
		}
	}
	again := mustPost(t, ctx, s, room.Name, store.NewMessageID(), host, "at the limit again")
	checkFirst(t, ctx, s, "a post after leaves back to the limit", last.Login, store.InboxPosition{Activity: again.ID, Conversation: room.Name})
	checkLarge(t, ctx, s, last.Login, room.Name)

	// A drop spares a mark made after it.
	if err := s.DropLargeInboxRooms(ctx, later.Login, []string{room.Name}, time.Now().Add(-time.Hour)); err != nil {
		t.Fatalf("DropLargeInboxRooms = %v", err)
	}
	checkLarge(t, ctx, s, later.Login, room.Name)
	if err := s.DropLargeInboxRooms(ctx, later.Login, []string{room.Name}, time.Now().Add(time.Second)); err != nil {
		t.Fatalf("DropLargeInboxRooms = %v", err)
	}
	checkLarge(t, ctx, s, later.Login)
	checkLarge(t, ctx, s, host.Login, room.Name)
}
