package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

func testDirectConversationID(t *testing.T, _ ConversationStore) {
	a, b := newLogin(t, "alice"), newLogin(t, "bob")
	ab, ba := store.DirectConversationID(a, b), store.DirectConversationID(b, a)
	if ab != ba {
		t.Errorf("DirectConversationID(%q, %q) = %q but DirectConversationID(%q, %q) = %q, want equal", a, b, ab, b, a, ba)
	}
	if !store.IsDirectConversation(ab) {
		t.Errorf("IsDirectConversation(%q) = false, want true", ab)
	}
	if room := newRoomName(t, "room"); store.IsDirectConversation(room) {
		t.Errorf("IsDirectConversation(%q) of a room name = true, want false", room)
	}
	if ab == store.DirectConversationID(a, newLogin(t, "carol")) {
		t.Errorf("DirectConversationID(%q, …) is the same for two peers", a)
	}
}

// testSendDirect sends one message: both users list the conversation with
// the other as peer and the message as newest; only the recipient has it
// unread.
func testSendDirect(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	alice, bob, id := dmUsers(t, ctx, s)
	m := mustSendDirect(t, ctx, s, alice, bob, store.NewMessageID(), "hi bob 👋")

	wantAlice := store.Conversation{ID: id, Kind: store.DirectConversation, Peer: bob, LastMessage: m, Unread: 0}
	wantBob := store.Conversation{ID: id, Kind: store.DirectConversation, Peer: alice, LastMessage: m, Unread: 1}
	checkConversation(t, "Conversation(alice)", mustConversation(t, ctx, s, alice.Login, id), wantAlice)
	checkConversation(t, "Conversation(bob)", mustConversation(t, ctx, s, bob.Login, id), wantBob)
	for login, want := range map[string]store.Conversation{alice.Login: wantAlice, bob.Login: wantBob} {
		inbox := mustInbox(t, ctx, s, login)
		if len(inbox) != 1 {
			t.Errorf("Inbox(%q) = %s, want one entry", login, fmtInbox(inbox))
		}
		checkInboxEntry(t, fmt.Sprintf("Inbox(%q)", login), inbox, want)
	}

	// The reply: bob's entry now shows it, alice has it unread, and bob has
	// read up to it: replying reads the conversation.
	r := mustSendDirect(t, ctx, s, bob, alice, store.NewMessageID(), "hi alice")
	wantAlice.LastMessage, wantAlice.Unread = r, 1
	wantBob.LastMessage, wantBob.Unread = r, 0
	checkConversation(t, "Conversation(alice) after the reply", mustConversation(t, ctx, s, alice.Login, id), wantAlice)
	checkConversation(t, "Conversation(bob) after the reply", mustConversation(t, ctx, s, bob.Login, id), wantBob)
}

// testDirectHistory reads a conversation's messages, both ways, as a room's:
// Messages newest first, paged, and each in both inbox logs.
func testDirectHistory(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	alice, bob, id := dmUsers(t, ctx, s)
	var sent []store.Message
	for i := range 7 {
		from, to := alice, bob
		if i%2 == 1 {
			from, to = bob, alice
		}
		// Some of yesterday's, so the history crosses buckets.
		at := store.NewMessageID()
		if i < 3 {
			at = store.MessageIDAt(time.Now().Add(-24*time.Hour + time.Duration(i)*time.Minute))
		}
		sent = append(sent, mustSendDirect(t, ctx, s, from, to, at, fmt.Sprintf("dm %d", i)))
	}
	want := newestFirst(sent)
	checkMessages(t, "Messages of the conversation", mustMessages(t, ctx, s, id, store.MessageID{}, 10), want)
	checkMessages(t, "Messages of the conversation paged by 2", pageNewestFirst(t, ctx, s, id, store.MessageID{}, 2), want)
	for _, u := range []store.UserRef{alice, bob} {
		events, err := s.InboxEvents(ctx, u.Login, sent[0].ID, 10)
		if err != nil {
			t.Fatalf("InboxEvents(%q) = %v", u.Login, err)
		}
		var got []store.Message
		for _, ev := range events {
			if ev.Kind == store.DirectMessage && ev.Room == id && ev.Message != nil && ev.ID == ev.Message.ID && ev.User == ev.Message.Author {
				got = append(got, *ev.Message)
			}
		}
		checkMessages(t, "DirectMessage events in the inbox log of "+u.Login, got, sent[1:])
	}

	// The pair's conversation is theirs alone.
	carol := mustCreateUser(t, ctx, s, "carol").UserRef
	other := mustSendDirect(t, ctx, s, alice, carol, store.NewMessageID(), "hi carol")
	checkMessages(t, "Messages of the conversation after a message to carol", mustMessages(t, ctx, s, id, store.MessageID{}, 10), want)
	checkMessages(t, "Messages of alice and carol", mustMessages(t, ctx, s, other.Room, store.MessageID{}, 10), []store.Message{other})
}

// testDirectLastMessageOutOfOrder stores an older message after a newer
// one: the newer stays the last message of both entries. Each author has
// read up to their own message: alice, who wrote the newer, has nothing
// unread; bob has alice's.
func testDirectLastMessageOutOfOrder(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	alice, bob, id := dmUsers(t, ctx, s)
	olderID := store.NewMessageID()
	newer := mustSendDirect(t, ctx, s, alice, bob, store.NewMessageID(), "newer")
	older := mustSendDirect(t, ctx, s, bob, alice, olderID, "older, stored last")

	checkConversation(t, "Conversation(alice)", mustConversation(t, ctx, s, alice.Login, id),
		store.Conversation{ID: id, Kind: store.DirectConversation, Peer: bob, LastMessage: newer, Unread: 0})
	checkConversation(t, "Conversation(bob)", mustConversation(t, ctx, s, bob.Login, id),
		store.Conversation{ID: id, Kind: store.DirectConversation, Peer: alice, LastMessage: newer, Unread: 1})
	checkMessages(t, "Messages", mustMessages(t, ctx, s, id, store.MessageID{}, 10), []store.Message{newer, older})

	// An old message from days ago changes nothing either: alice has read
	// past it, and bob's mark stays at his newer one.
	mustSendDirect(t, ctx, s, bob, alice, store.MessageIDAt(time.Now().Add(-72*time.Hour)), "ancient")
	if c := mustConversation(t, ctx, s, alice.Login, id); !sameMessage(c.LastMessage, newer) || c.Unread != 0 || c.ReadUpTo != newer.ID {
		t.Errorf("Conversation(alice) after an old message = %s, want last message %s, read up to it", fmtConversation(c), fmtMessage(newer))
	}
	if c := mustConversation(t, ctx, s, bob.Login, id); c.Unread != 1 || c.ReadUpTo != older.ID {
		t.Errorf("Conversation(bob) after an old message of his = %s, want 1 unread, read up to %s", fmtConversation(c), fmtMessage(older))
	}
}

// testDirectConcurrent races sends both ways with each other and with
// mark-reads, in rounds: each round sends a batch of messages at once, one
// goroutine each, in random order, while both users mark read up to
// messages of earlier rounds. No update is lost: after each round the last
// message of both entries is the round's newest, and each user's unread
// count is exactly the number of the other's messages after the newest one
// it marked read or wrote.
func testDirectConcurrent(t *testing.T, s ConversationStore) {
	const (
		rounds   = 10
		perRound = 8
		markable = (rounds - 2) * perRound // the last two rounds stay unread
	)
	ctx := newContext(t)
	alice, bob, id := dmUsers(t, ctx, s)
	msgs := make([]store.Message, rounds*perRound)
	to := make([]store.UserRef, len(msgs))
	for i := range msgs {
		from, peer := alice, bob
		if i%3 == 0 {
			from, peer = bob, alice
		}
		msgs[i], to[i] = directMessage(from, peer, store.NewMessageID(), fmt.Sprintf("race %02d", i)), peer
	}

	marked := map[string]int{} // login → highest index it marked read up to
	for round := range rounds {
		first := round * perRound
		upTo := map[string]int{} // this round's mark-reads
		if first > 0 {
			for _, u := range []store.UserRef{alice, bob} {
				upTo[u.Login] = rand.IntN(min(first, markable))
			}
		}
		start := make(chan struct{})
		var wg sync.WaitGroup
		for _, i := range rand.Perm(perRound) {
			i += first
			wg.Go(func() {
				<-start
				if err := s.SendDirect(ctx, msgs[i], to[i]); err != nil {
					t.Errorf("SendDirect(%s) = %v, want nil", fmtMessage(msgs[i]), err)
				}
			})
		}
		for login, i := range upTo {
			wg.Go(func() {
				<-start
				if _, err := s.MarkRead(ctx, login, id, msgs[i].ID); err != nil {
					t.Errorf("MarkRead(%q, %q, message %d) = %v, want nil", login, id, i, err)
				}
			})
			marked[login] = max(marked[login], i)
		}
		close(start)
		wg.Wait()
		if t.Failed() {
			return
		}
		newest := msgs[first+perRound-1]
		for _, u := range []store.UserRef{alice, bob} {
			c := mustConversation(t, ctx, s, u.Login, id)
			if !sameMessage(c.LastMessage, newest) {
				t.Fatalf("round %d: Conversation(%q).LastMessage = %s, want the newest, %s", round, u.Login, fmtMessage(c.LastMessage), fmtMessage(newest))
			}
			upTo, ok := marked[u.Login]
			if !ok {
				upTo = -1
			}
			if want := unreadAfter(msgs[:first+perRound], u, upTo); c.Unread != want {
				t.Fatalf("round %d: Conversation(%q).Unread = %d, marked read up to message %d, want %d (the peer's messages after it)", round, u.Login, c.Unread, upTo, want)
			}
		}
	}

	for _, u := range []store.UserRef{alice, bob} {
		upTo, ok := marked[u.Login]
		if ok {
			mustMarkRead(t, ctx, s, u.Login, id, msgs[upTo].ID)
		} else {
			upTo = -1
		}
		want := unreadAfter(msgs, u, upTo)
		if c := mustConversation(t, ctx, s, u.Login, id); c.Unread != want {
			t.Errorf("Conversation(%q).Unread = %d after marking read up to message %d, want %d (the peer's messages after it)", u.Login, c.Unread, upTo, want)
		}
	}
	checkMessages(t, "Messages of the conversation", pageNewestFirst(t, ctx, s, id, store.MessageID{}, 25), newestFirst(msgs))
}

// unreadAfter counts the messages of msgs, oldest first, not written by u
// after index upTo and after u's own newest.
func unreadAfter(msgs []store.Message, u store.UserRef, upTo int) int {
	for i, m := range msgs {
		if m.Author == u {
			upTo = max(upTo, i)
		}
	}
	n := 0
	for _, m := range msgs[upTo+1:] {
		if m.Author != u {
			n++
		}
	}
	return n
}

func testInboxEmpty(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	u := mustCreateUser(t, ctx, s, "loner")
	if inbox := mustInbox(t, ctx, s, u.Login); len(inbox) != 0 {
		t.Errorf("Inbox(%q) of a new user = %s, want empty", u.Login, fmtInbox(inbox))
	}
	if inbox := mustInbox(t, ctx, s, newLogin(t, "nobody")); len(inbox) != 0 {
		t.Errorf("Inbox of an unknown login = %s, want empty", fmtInbox(inbox))
	}
	// A public room is not a conversation.
	mustCreateRoom(t, ctx, s, "public", u.UserRef)
	if inbox := mustInbox(t, ctx, s, u.Login); len(inbox) != 0 {
		t.Errorf("Inbox(%q) after creating a public room = %s, want empty", u.Login, fmtInbox(inbox))
	}
}

// testInboxOrder lists direct conversations and groups newest message first,
// whatever order they were written in, and the group without a message last.
func testInboxOrder(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	me := mustCreateUser(t, ctx, s, "me").UserRef
	peers := make([]store.UserRef, 3)
	for i := range peers {
		peers[i] = mustCreateUser(t, ctx, s, fmt.Sprintf("peer%d", i)).UserRef
	}
	silent := mustCreateGroup(t, ctx, s, "silent", me)
	busy := mustCreateGroup(t, ctx, s, "busy", me)
	ids := make([]store.MessageID, 5)
	for i := range ids {
		ids[i] = store.NewMessageID()
	}
	// Newest first: peers[1], busy, peers[0], peers[2]; written out of order.
	mustSendDirect(t, ctx, s, me, peers[0], ids[2], "to 0")
	mustSendDirect(t, ctx, s, peers[1], me, ids[4], "from 1")
	mustSendDirect(t, ctx, s, peers[2], me, ids[0], "from 2")
	mustPostGroup(t, ctx, s, busy.Name, ids[3], me, "in busy", []store.UserRef{me})
	mustSendDirect(t, ctx, s, peers[0], me, ids[1], "older from 0")

	inbox := mustInbox(t, ctx, s, me.Login)
	want := []string{
		store.DirectConversationID(me.Login, peers[1].Login),
		busy.Name,
		store.DirectConversationID(me.Login, peers[0].Login),
		store.DirectConversationID(me.Login, peers[2].Login),
		silent.Name,
	}
	got := make([]string, len(inbox))
	for i, c := range inbox {
		got[i] = c.ID
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Inbox(%q) lists %q, want %q\n%s", me.Login, got, want, fmtInbox(inbox))
	}
	wantPeer := map[string]store.UserRef{want[0]: peers[1], want[2]: peers[0], want[3]: peers[2]}
	for _, c := range inbox {
		if p, ok := wantPeer[c.ID]; ok && (c.Peer != p || c.Kind != store.DirectConversation) {
			t.Errorf("Inbox(%q) entry %s, want a direct conversation with %q", me.Login, fmtConversation(c), p.Login)
		}
		if (c.ID == busy.Name || c.ID == silent.Name) && c.Kind != store.GroupConversation {
			t.Errorf("Inbox(%q) entry %s, want a group", me.Login, fmtConversation(c))
		}
	}

	// InboxEntries: the same entries, uncounted, in any order.
	entries, err := s.InboxEntries(ctx, me.Login)
	if err != nil {
		t.Fatalf("InboxEntries = %v", err)
	}
	slices.SortFunc(entries, store.ByNewestMessage)
	if len(entries) != len(inbox) {
		t.Fatalf("InboxEntries(%q) = %d entries, Inbox %d", me.Login, len(entries), len(inbox))
	}
	for i, c := range entries {
		counted := inbox[i]
		if counted.Unread == 0 && counted.ID == want[0] {
			t.Errorf("Inbox(%q) entry %s: want unread messages from %s", me.Login, fmtConversation(counted), peers[1].Login)
		}
		counted.Unread, counted.Mentions = 0, 0
		if c.ID != counted.ID || c.Kind != counted.Kind || c.Peer != counted.Peer || !sameMessage(c.LastMessage, counted.LastMessage) || c.Unread != 0 || c.Mentions != 0 {
			t.Errorf("InboxEntries(%q) entry %s, want %s uncounted", me.Login, fmtConversation(c), fmtConversation(counted))
		}
	}
}

func testConversationNotFound(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	alice, bob, id := dmUsers(t, ctx, s)
	wantNoConversation(t, ctx, s, alice.Login, id)
	wantNoConversation(t, ctx, s, alice.Login, newRoomName(t, "nowhere"))
	// A conversation is listed for its two users only.
	mustSendDirect(t, ctx, s, alice, bob, store.NewMessageID(), "just us")
	carol := mustCreateUser(t, ctx, s, "carol")
	wantNoConversation(t, ctx, s, carol.Login, id)
}

// testMarkReadUpTo marks read up to a message, then to an id between two
// messages: the unread count drops to the number of messages after it, and
// never grows back by marking an older one.
func testMarkReadUpTo(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	alice, bob, id := dmUsers(t, ctx, s)
	var msgs []store.Message
	for i := range 6 {
		msgs = append(msgs, mustSendDirect(t, ctx, s, alice, bob, store.NewMessageID(), fmt.Sprintf("unread %d", i)))
	}
	wantUnread(t, ctx, s, bob.Login, id, 6)

	if c := mustConversation(t, ctx, s, bob.Login, id); !c.ReadUpTo.IsZero() {
		t.Errorf("Conversation(bob).ReadUpTo before any mark = %v, want zero", c.ReadUpTo)
	}
	mustMarkRead(t, ctx, s, bob.Login, id, msgs[2].ID)
	wantUnread(t, ctx, s, bob.Login, id, 3)
	mustMarkRead(t, ctx, s, bob.Login, id, msgs[0].ID)
	wantUnread(t, ctx, s, bob.Login, id, 3)
	if c := mustConversation(t, ctx, s, bob.Login, id); c.ReadUpTo != msgs[2].ID {
		t.Errorf("Conversation(bob).ReadUpTo after marking messages 2 then 0 = %v, want message 2's, %v: a mark never moves back", c.ReadUpTo, msgs[2].ID)
	}

	// An upTo that is no message's id: between messages 3 and 4.
	mustMarkRead(t, ctx, s, bob.Login, id, lastIDOfTick(msgs[3].ID))
	wantUnread(t, ctx, s, bob.Login, id, 2)

	// A new message after marking read counts, one marked read twice once.
	fresh := mustSendDirect(t, ctx, s, alice, bob, store.NewMessageID(), "fresh")
	wantUnread(t, ctx, s, bob.Login, id, 3)
	mustMarkRead(t, ctx, s, bob.Login, id, msgs[5].ID)
	mustMarkRead(t, ctx, s, bob.Login, id, msgs[5].ID)
	wantUnread(t, ctx, s, bob.Login, id, 1)

	// Past every message: nothing unread, the entry and its last message stay.
	mustMarkRead(t, ctx, s, bob.Login, id, store.MessageIDAt(time.Now().Add(time.Hour)))
	checkConversation(t, "Conversation(bob) after reading everything", mustConversation(t, ctx, s, bob.Login, id),
		store.Conversation{ID: id, Kind: store.DirectConversation, Peer: alice, LastMessage: fresh, Unread: 0})
	checkInboxEntry(t, "Inbox(bob) after reading everything", mustInbox(t, ctx, s, bob.Login),
		store.Conversation{ID: id, Kind: store.DirectConversation, Peer: alice, LastMessage: fresh, Unread: 0})
}

// testMarkReadUnknown marks read a conversation login is not in: it is
// harmless (nil) and creates no entry.
func testMarkReadUnknown(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	alice, _, id := dmUsers(t, ctx, s)
	mustMarkRead(t, ctx, s, alice.Login, id, store.NewMessageID())
	wantNoConversation(t, ctx, s, alice.Login, id)
	group := newRoomName(t, "nowhere")
	mustMarkRead(t, ctx, s, alice.Login, group, store.NewMessageID())
	wantNoConversation(t, ctx, s, alice.Login, group)
	if inbox := mustInbox(t, ctx, s, alice.Login); len(inbox) != 0 {
		t.Errorf("Inbox(%q) after marking unknown conversations read = %s, want empty", alice.Login, fmtInbox(inbox))
	}
}

// testMarkReadOwnInboxOnly: one user's mark-read leaves the other's count,
// and the user's other conversations, alone.
func testMarkReadOwnInboxOnly(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	alice, bob, id := dmUsers(t, ctx, s)
	carol := mustCreateUser(t, ctx, s, "carol").UserRef
	other := store.DirectConversationID(bob.Login, carol.Login)
	mustSendDirect(t, ctx, s, alice, bob, store.NewMessageID(), "a1")
	mustSendDirect(t, ctx, s, bob, alice, store.NewMessageID(), "b1")
	c1 := mustSendDirect(t, ctx, s, carol, bob, store.NewMessageID(), "c1")
	a2 := mustSendDirect(t, ctx, s, alice, bob, store.NewMessageID(), "a2")

	mustMarkRead(t, ctx, s, alice.Login, id, a2.ID) // alice read b1
	wantUnread(t, ctx, s, alice.Login, id, 0)
	wantUnread(t, ctx, s, bob.Login, id, 1) // a2: writing b1 read a1
	wantUnread(t, ctx, s, bob.Login, other, 1)

	mustMarkRead(t, ctx, s, bob.Login, id, a2.ID)
	wantUnread(t, ctx, s, bob.Login, id, 0)
	wantUnread(t, ctx, s, alice.Login, id, 0)
	wantUnread(t, ctx, s, bob.Login, other, 1)
	if c := mustConversation(t, ctx, s, bob.Login, other); !sameMessage(c.LastMessage, c1) {
		t.Errorf("Conversation(bob, carol) = %s, want last message %s", fmtConversation(c), fmtMessage(c1))
	}
}

// lastIDOfTick returns the greatest id (in Compare order, variant bits kept)
// made at the same 100 ns tick as id: the upper bound of that instant, an
// id between id and any later one.
func lastIDOfTick(id store.MessageID) store.MessageID {
	id[8] = 0xbf // variant 10, then the greatest signed value
	for i := 9; i < 16; i++ {
		id[i] = 0x7f
	}
	return id
}

// testUnreadCap sends more messages than UnreadCap, over two days: the
// count stops at the cap, in the entry and the inbox, and is exact again
// once the backlog is marked read below it.
func testUnreadCap(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	alice, bob, id := dmUsers(t, ctx, s)
	n := store.UnreadCap + 20
	msgs := make([]store.Message, n)
	yesterday := time.Now().Add(-24 * time.Hour)
	var wg sync.WaitGroup
	for i := range msgs {
		at := store.MessageIDAt(yesterday.Add(time.Duration(i) * time.Second))
		if i >= n/2 {
			at = store.MessageIDAt(time.Now().Add(time.Duration(i-n) * time.Millisecond))
		}
		msgs[i] = directMessage(alice, bob, at, fmt.Sprintf("flood %d", i))
		wg.Go(func() {
			if err := s.SendDirect(ctx, msgs[i], bob); err != nil {
				t.Errorf("SendDirect(%s) = %v, want nil", fmtMessage(msgs[i]), err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	last := msgs[n-1]
	want := store.Conversation{ID: id, Kind: store.DirectConversation, Peer: alice, LastMessage: last, Unread: store.UnreadCap}
	checkConversation(t, "Conversation(bob) after a flood", mustConversation(t, ctx, s, bob.Login, id), want)
	checkInboxEntry(t, "Inbox(bob) after a flood", mustInbox(t, ctx, s, bob.Login), want)

	mustMarkRead(t, ctx, s, bob.Login, id, msgs[9].ID)
	wantUnread(t, ctx, s, bob.Login, id, store.UnreadCap)
	mustMarkRead(t, ctx, s, bob.Login, id, msgs[29].ID)
	wantUnread(t, ctx, s, bob.Login, id, n-30)
	mustMarkRead(t, ctx, s, bob.Login, id, msgs[n/2-1].ID) // all of yesterday's
	wantUnread(t, ctx, s, bob.Login, id, n-n/2)
	mustMarkRead(t, ctx, s, bob.Login, id, last.ID)
	wantUnread(t, ctx, s, bob.Login, id, 0)
}

// UnreadBurst is the size of RunUnreadBurst's burst: 100,000 messages, or
// 5,000 under the race detector, which would take minutes over the full
// burst (CI runs it in full without; see .ci/run).
func UnreadBurst() int {
	if raceDetector {
		return 5_000
	}
	return 100_000
}

// RunUnreadBurst sends UnreadBurst() direct messages from one user to
// another, 32 at a time, as a spammer would, and checks that the
// recipient's inbox reads as it should: one entry, UnreadCap unread, the
// newest message last; and that marking it read clears the count. It
// returns the recipient's login, for the backend's own check that the
// burst added no row to the inbox partition.
func RunUnreadBurst(t *testing.T, s ConversationStore) (recipient string) {
	n := UnreadBurst()
	// The whole burst may take longer than one subtest's calls may.
	ctx, stop := context.WithTimeout(t.Context(), 10*time.Minute)
	defer stop()
	spammer, victim, id := dmUsers(t, ctx, s)
	const senders = 32
	ids := make(chan store.MessageID, senders)
	var wg sync.WaitGroup
	for range senders {
		wg.Go(func() {
			for at := range ids {
				if err := s.SendDirect(ctx, directMessage(spammer, victim, at, "buy now"), victim); err != nil {
					t.Errorf("SendDirect = %v, want nil", err)
					stop() // the producer must not wait for senders that quit
					return
				}
			}
		})
	}
	var last store.MessageID
produce:
	for range n {
		last = store.NewMessageID()
		select {
		case ids <- last:
		case <-ctx.Done():
			break produce
		}
	}
	close(ids)
	wg.Wait()
	if t.Failed() {
		return victim.Login
	}
	inbox := mustInbox(t, ctx, s, victim.Login)
	if len(inbox) != 1 || inbox[0].ID != id || inbox[0].Unread != store.UnreadCap || inbox[0].LastMessage.ID != last {
		t.Errorf("Inbox(%q) after %d messages = %s, want one entry, %d unread, last message %v", victim.Login, n, fmtInbox(inbox), store.UnreadCap, last)
	}
	mustMarkRead(t, ctx, s, victim.Login, id, last)
	wantUnread(t, ctx, s, victim.Login, id, 0)
	return victim.Login
}
