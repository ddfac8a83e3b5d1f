package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

// The outbox's shards are shared by every subtest, and by the runs of
// -count on one Cassandra keyspace: each test reads the notices of its own
// recipients, with a limit far above what the others write, and the tests
// that page with small limits or move a cursor do so in a time of their
// own, in the past (notices carry their message's id, whatever its time).

// allNotices is a limit above every notice the suite writes to a shard.
const allNotices = 100000

// newLoginInShard returns a fresh login whose notices go to shard.
func newLoginInShard(t *testing.T, prefix string, shard int) string {
	t.Helper()
	for {
		if login := newLogin(t, prefix); store.NoticeShard(login) == shard {
			return login
		}
	}
}

// pendingOf returns the pending notices of shard after after, checking
// their order, that are for one of recipients.
func pendingOf(t *testing.T, ctx context.Context, s store.Store, shard int, after store.MessageID, recipients ...string) []store.Notice {
	t.Helper()
	all, err := s.PendingNotices(ctx, shard, after, allNotices)
	if err != nil {
		t.Fatalf("PendingNotices(%d, %v) = %v", shard, after, err)
	}
	checkNoticeOrder(t, all, after)
	var mine []store.Notice
	for _, n := range all {
		if slices.Contains(recipients, n.Recipient) {
			mine = append(mine, n)
		}
	}
	return mine
}

// checkNoticeOrder checks that notices are after after, oldest first by id
// then recipient, with no duplicate.
func checkNoticeOrder(t *testing.T, notices []store.Notice, after store.MessageID) {
	t.Helper()
	for i, n := range notices {
		if !after.IsZero() && n.ID.Compare(after) <= 0 {
			t.Errorf("notice %d, %v, is not after %v", i, n, after)
		}
		if i > 0 && store.CompareNotices(notices[i-1], n) >= 0 {
			t.Errorf("notice %d, %v, does not come after %v", i, n, notices[i-1])
		}
	}
}

// checkNotices compares notices whole.
func checkNotices(t *testing.T, what string, got, want []store.Notice) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s:\n got %s\nwant %s", what, fmtNotices(got), fmtNotices(want))
	}
}

func fmtNotices(ns []store.Notice) string {
	var b strings.Builder
	for _, n := range ns {
		fmt.Fprintf(&b, "\n\t%v (room %q, from %q)", n, n.Room, n.From.Login)
	}
	return b.String()
}

// testOutboxWrites: the notices of a post, a direct message, a group post
// and a group add are pending in their recipients' shards, with the
// message's id; written again by a retried write, each is stored once,
// and one marked done stays done; the add's take the system message's id, and adding again writes none.
func testOutboxWrites(t *testing.T, s store.Store) {
	ctx := newContext(t)
	alice := mustCreateUser(t, ctx, s, "alice").UserRef
	bob := mustCreateUser(t, ctx, s, "bob").UserRef
	carol := mustCreateUser(t, ctx, s, "carol").UserRef
	start := store.MessageIDAt(time.Now().Add(-time.Second))
	room := mustCreateRoom(t, ctx, s, "outbox", alice)

	post := store.Message{Room: room.Name, ID: store.NewMessageID(), Author: alice, Content: "@bob look"}
	postNotices := []store.Notice{
		{Recipient: carol.Login, Kind: store.NoticeReply, From: alice},
		{Recipient: bob.Login, Kind: store.NoticeMention, From: alice},
	}
	direct := store.Message{Room: store.DirectConversationID(alice.Login, bob.Login), ID: store.NewMessageID(), Author: alice, Content: "psst"}
	directNotice := store.Notice{ID: direct.ID, Recipient: bob.Login, Kind: store.NoticeDirectMessage, From: alice}
	group := mustCreateGroup(t, ctx, s, "outbox", alice)
	added := store.Notice{Recipient: bob.Login, Kind: store.NoticeAddedToGroup, From: alice}
	groupPost := store.Message{Room: group.Name, Author: alice, Content: "@bob @carol hi"}
	groupNotices := []store.Notice{
		{Recipient: bob.Login, Kind: store.NoticeMention, From: alice},
		{Recipient: carol.Login, Kind: store.NoticeMention, From: alice},
	}

	var addID store.MessageID
	for try := range 2 { // the second time as a retry
		if err := s.PostMessage(ctx, post, postNotices...); err != nil {
			t.Fatalf("PostMessage with notices (try %d) = %v", try, err)
		}
		if err := s.SendDirect(ctx, direct, bob, directNotice); err != nil {
			t.Fatalf("SendDirect with a notice (try %d) = %v", try, err)
		}
		_, joined, err := s.AddGroupMember(ctx, group.Name, alice, bob, time.Now(), added)
		if err != nil {
			t.Fatalf("AddGroupMember with a notice (try %d) = %v", try, err)
		}
		if try == 0 {
			addID = joined.ID
			groupPost.ID = store.NewMessageID()
		} else if !joined.ID.IsZero() {
			t.Errorf("adding bob again = event %v, want none", joined.ID)
		}
		members := []store.UserRef{alice, bob}
		if err := s.PostGroupMessage(ctx, groupPost, members, groupNotices...); err != nil {
			t.Fatalf("PostGroupMessage with notices (try %d) = %v", try, err)
		}

		wantBob := []store.Notice{
			directNotice,
			{ID: addID, Recipient: bob.Login, Kind: store.NoticeAddedToGroup, Room: group.Name, From: alice},
			{ID: groupPost.ID, Recipient: bob.Login, Kind: store.NoticeMention, Room: group.Name, From: alice},
		}
		wantBob[0].Room = direct.Room
		mention := store.Notice{ID: post.ID, Recipient: bob.Login, Kind: store.NoticeMention, Room: room.Name, From: alice}
		if try == 0 {
			wantBob = append([]store.Notice{mention}, wantBob...)
		}
		wantCarol := []store.Notice{
			{ID: post.ID, Recipient: carol.Login, Kind: store.NoticeReply, Room: room.Name, From: alice},
			{ID: groupPost.ID, Recipient: carol.Login, Kind: store.NoticeMention, Room: group.Name, From: alice},
		}
		checkNotices(t, fmt.Sprintf("bob's notices (try %d)", try), pendingOf(t, ctx, s, store.NoticeShard(bob.Login), start, bob.Login), wantBob)
		checkNotices(t, fmt.Sprintf("carol's notices (try %d)", try), pendingOf(t, ctx, s, store.NoticeShard(carol.Login), start, carol.Login), wantCarol)
		if got := pendingOf(t, ctx, s, store.NoticeShard(alice.Login), start, alice.Login); len(got) != 0 {
			t.Errorf("alice's notices = %s, want none", fmtNotices(got))
		}
		// Handled before the retry: the retry must not bring it back.
		if err := s.MarkNoticesDone(ctx, store.NoticeShard(bob.Login), []store.Notice{mention}); err != nil {
			t.Fatalf("MarkNoticesDone = %v", err)
		}
	}

	other := store.Message{Room: room.Name, ID: store.NewMessageID(), Author: alice, Content: "x"}
	err := s.PostMessage(ctx, other, store.Notice{ID: post.ID, Recipient: bob.Login, Kind: store.NoticeMention})
	wantErr(t, "PostMessage with a notice of another message", err, store.ErrInvalid)
	err = s.PostMessage(ctx, other, store.Notice{Kind: store.NoticeMention})
	wantErr(t, "PostMessage with a notice to nobody", err, store.ErrInvalid)
}

// outboxWindow returns a time of the test's own, some days back, up to 12
// hours earlier. The tests that run at once must not read each other's
// notices: each takes its days back, and its notices lie in the day after
// the time (testOutboxBacklog's in the 31 hours after: it takes 6 days
// back, clear of the others' 2 and 3).
func outboxWindow(daysBack int) time.Time {
	return time.Now().Add(-time.Duration(daysBack)*24*time.Hour - time.Duration(rand.Int64N(int64(12*time.Hour)))).Truncate(time.Millisecond)
}

// postNoticesAt posts, to room, a message at each time with a notice to
// each recipient, and returns the notices oldest first.
func postNoticesAt(t *testing.T, ctx context.Context, s store.Store, room string, from store.UserRef, recipients []string, times ...time.Time) []store.Notice {
	t.Helper()
	var want []store.Notice
	for i, at := range times {
		m := store.Message{Room: room, ID: store.MessageIDAt(at), Author: from, Content: fmt.Sprintf("message %d", i)}
		var ns []store.Notice
		for _, r := range recipients {
			ns = append(ns, store.Notice{ID: m.ID, Recipient: r, Kind: store.NoticeMention, Room: room, From: from})
		}
		if err := s.PostMessage(ctx, m, ns...); err != nil {
			t.Fatalf("PostMessage at %v = %v", at, err)
		}
		want = append(want, ns...)
	}
	slices.SortFunc(want, store.CompareNotices)
	return want
}

// testOutboxPaging: a shard's notices come by id then recipient, limit
// at a time; the done ones are skipped, marking is idempotent, marking a
// notice not kept changes nothing, and after skips what is before.
func testOutboxPaging(t *testing.T, s store.Store) {
	ctx := newContext(t)
	author := mustCreateUser(t, ctx, s, "pager").UserRef
	room := mustCreateRoom(t, ctx, s, "paging", author)
	shard := rand.IntN(store.NoticeShards)
	recipients := []string{newLoginInShard(t, "ra", shard), newLoginInShard(t, "rb", shard), newLoginInShard(t, "rc", shard)}
	base := outboxWindow(2)
	want := postNoticesAt(t, ctx, s, room.Name, author, recipients, base, base.Add(time.Millisecond), base.Add(2*time.Millisecond))
	after := store.MessageIDAt(base.Add(-time.Millisecond))

	checkNotices(t, "the shard's notices", pendingOf(t, ctx, s, shard, after, recipients...), want)
	page, err := s.PendingNotices(ctx, shard, after, 4)
	if err != nil {
		t.Fatal(err)
	}
	checkNotices(t, "a page of 4", page, want[:4])
	if got, err := s.PendingNotices(ctx, shard, after, 0); err != nil || len(got) != 0 {
		t.Errorf("PendingNotices(limit 0) = %v, %v; want none", got, err)
	}

	for range 2 { // marking again changes nothing
		if err := s.MarkNoticesDone(ctx, shard, page); err != nil {
			t.Fatalf("MarkNoticesDone = %v", err)
		}
	}
	ghost := store.Notice{ID: store.MessageIDAt(base.Add(time.Millisecond / 2)), Recipient: recipients[0], Kind: store.NoticeMention}
	if err := s.MarkNoticesDone(ctx, shard, []store.Notice{ghost}); err != nil {
		t.Fatalf("MarkNoticesDone of a notice never written = %v", err)
	}
	if page, err = s.PendingNotices(ctx, shard, after, 4); err != nil {
		t.Fatal(err)
	}
	checkNotices(t, "the page after marking the first done", page, want[4:8])
	checkNotices(t, "the shard's notices after marking", pendingOf(t, ctx, s, shard, after, recipients...), want[4:])
	checkNotices(t, "the notices after the second message", pendingOf(t, ctx, s, shard, want[3].ID, recipients...), want[6:])
	if err := s.MarkNoticesDone(ctx, shard, want[4:]); err != nil {
		t.Fatal(err)
	}
	checkNotices(t, "the notices once all are done", pendingOf(t, ctx, s, shard, after, recipients...), nil)
}

// testOutboxBacklog: notices spread over hours, with empty hours between,
// are read in order across them, a page at a time, as a reader catching
// up after an outage does: read from the cursor, mark done, read again.
func testOutboxBacklog(t *testing.T, s store.Store) {
	ctx := newContext(t)
	author := mustCreateUser(t, ctx, s, "backlog").UserRef
	room := mustCreateRoom(t, ctx, s, "backlog", author)
	shard := rand.IntN(store.NoticeShards)
	recipients := []string{newLoginInShard(t, "ra", shard), newLoginInShard(t, "rb", shard)}
	base := outboxWindow(6)
	var times []time.Time
	for _, h := range []int{0, 1, 1, 2, 5, 9, 30} { // hours 3-4, 6-8 and 10-29 empty
		times = append(times, base.Add(time.Duration(h)*time.Hour+time.Duration(len(times))*time.Minute))
	}
	want := postNoticesAt(t, ctx, s, room.Name, author, recipients, times...)
	cursor := store.MessageIDAt(base.Add(-time.Millisecond))

	// Past the window come the notices of other tests: the reading stops
	// at its end.
	last := want[len(want)-1]
	var got []store.Notice
	for len(got) < len(want) {
		page, err := s.PendingNotices(ctx, shard, cursor, 3)
		if err != nil {
			t.Fatalf("PendingNotices = %v", err)
		}
		checkNoticeOrder(t, page, cursor)
		page = slices.DeleteFunc(page, func(n store.Notice) bool { return store.CompareNotices(n, last) > 0 })
		if len(page) == 0 {
			break
		}
		for _, n := range page {
			if !slices.Contains(recipients, n.Recipient) {
				t.Fatalf("a notice not of this test in its window: %v", n)
			}
		}
		got = append(got, page...)
		if err := s.MarkNoticesDone(ctx, shard, page); err != nil {
			t.Fatal(err)
		}
	}
	checkNotices(t, "the backlog, read 3 at a time", got, want)
}

// testOutboxCursor: the cursor only moves forward, of racing moves the
// furthest wins, and a notice written with an id at or before it (a write
// that landed late) is not read from it. The test moves the cursor of one
// shard in a time of its own, long past, so that it hides no other test's
// notices; each run moves it a little further.
func testOutboxCursor(t *testing.T, s store.Store) {
	ctx := newContext(t)
	author := mustCreateUser(t, ctx, s, "cursor").UserRef
	room := mustCreateRoom(t, ctx, s, "cursor", author)
	const shard = 7
	c0, err := s.NoticeCursor(ctx, shard)
	if err != nil {
		t.Fatalf("NoticeCursor = %v", err)
	}
	t0 := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	if !c0.IsZero() {
		t0 = c0.Time()
	}
	cursorIs := func(what string, want store.MessageID) {
		t.Helper()
		if got, err := s.NoticeCursor(ctx, shard); err != nil || got != want {
			t.Errorf("NoticeCursor %s = %v, %v; want %v", what, got, err, want)
		}
	}
	c1 := store.MessageIDAt(t0.Add(time.Minute))
	if err := s.SetNoticeCursor(ctx, shard, c1); err != nil {
		t.Fatalf("SetNoticeCursor = %v", err)
	}
	cursorIs("after a move forward", c1)
	for _, back := range []store.MessageID{store.MessageIDAt(t0.Add(time.Second)), c1, {}} {
		if err := s.SetNoticeCursor(ctx, shard, back); err != nil {
			t.Fatalf("SetNoticeCursor(%v) = %v", back, err)
		}
	}
	cursorIs("after moves back", c1)

	var racing []store.MessageID
	for i := range 6 {
		racing = append(racing, store.MessageIDAt(t0.Add(time.Minute+time.Duration(i+1)*time.Second)))
	}
	furthest := racing[len(racing)-1]
	rand.Shuffle(len(racing), func(i, j int) { racing[i], racing[j] = racing[j], racing[i] })
	var wg sync.WaitGroup
	for _, c := range racing {
		wg.Go(func() {
			if err := s.SetNoticeCursor(ctx, shard, c); err != nil {
				t.Errorf("racing SetNoticeCursor(%v) = %v", c, err)
			}
		})
	}
	wg.Wait()
	cursorIs("after racing moves", furthest)

	r := newLoginInShard(t, "late", shard)
	late := postNoticesAt(t, ctx, s, room.Name, author, []string{r}, t0.Add(time.Minute+time.Second), furthest.Time().Add(time.Second))
	checkNotices(t, "the notices after the cursor", pendingOf(t, ctx, s, shard, furthest, r), late[1:])
}

// testLeaseHolders: one holder at a time; the holder renews, which
// extends its lease; another takes it once it expires. A lease must last
// ttl: the renewal comes after 0.6 ttl, the other's try after 1.2 ttl.
func testLeaseHolders(t *testing.T, s store.Store) {
	ctx := newContext(t)
	const shard, ttl = 3, 2 * time.Second
	lease := func(holder string) bool {
		t.Helper()
		ok, err := s.LeaseNoticeShard(ctx, shard, holder, ttl)
		if err != nil {
			t.Fatalf("LeaseNoticeShard(%s) = %v", holder, err)
		}
		return ok
	}
	h1, h2 := "one-"+randomSuffix(), "two-"+randomSuffix()
	// A run before this one (-count) may hold it for ttl (and a second)
	// still.
	deadline := time.Now().Add(3 * ttl)
	for !lease(h1) {
		if time.Now().After(deadline) {
			t.Fatalf("no lease of shard %d after %v", shard, 3*ttl)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if lease(h2) {
		t.Fatalf("%s took the lease %s holds", h2, h1)
	}
	time.Sleep(1200 * time.Millisecond)
	if !lease(h1) {
		t.Fatalf("%s could not renew its lease", h1)
	}
	time.Sleep(1200 * time.Millisecond) // past the first lease, within the renewal
	if lease(h2) {
		t.Fatalf("%s took the lease %s renewed", h2, h1)
	}
	time.Sleep(ttl + time.Second) // a lease may last a second over ttl
	if !lease(h2) {
		t.Fatalf("%s could not take the lease %s let expire", h2, h1)
	}
	if lease(h1) {
		t.Fatalf("%s took back the lease %s holds", h1, h2)
	}
}

// testLeaseRacing: of holders racing for a free lease exactly one wins,
// and of racers while it runs none.
func testLeaseRacing(t *testing.T, s store.Store) {
	ctx := newContext(t)
	const shard, ttl, racers = 4, 2 * time.Second, 8
	race := func() (winners []string) {
		var (
			mu sync.Mutex
			wg sync.WaitGroup
		)
		for i := range racers {
			holder := fmt.Sprintf("racer-%d-%s", i, randomSuffix())
			wg.Go(func() {
				ok, err := s.LeaseNoticeShard(ctx, shard, holder, ttl)
				if err != nil {
					t.Errorf("LeaseNoticeShard(%s) = %v", holder, err)
				}
				if ok {
					mu.Lock()
					winners = append(winners, holder)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		return winners
	}
	// A run before this one (-count) may hold it for ttl still.
	var winners []string
	for range 20 {
		if winners = race(); len(winners) > 0 || t.Failed() {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if len(winners) != 1 {
		t.Fatalf("racing for a free lease: winners %q, want one", winners)
	}
	if again := race(); len(again) != 0 {
		t.Errorf("racing for %s's lease: winners %q, want none", winners[0], again)
	}
}

// testPushSubscriptions: subscriptions are added, replaced by endpoint,
// listed oldest first and removed; previews are off until set; the cap
// refuses a new endpoint but not a replacement; a deleted account's
// subscriptions and previews go with it.
func testPushSubscriptions(t *testing.T, s store.Store) {
	ctx := newContext(t)
	a := mustCreateUser(t, ctx, s, "pusher")
	login := a.Login
	t0 := time.Now().Add(-time.Hour).Truncate(time.Millisecond).UTC()
	sub := func(i int, at time.Time) store.PushSubscription {
		return store.PushSubscription{
			Endpoint: fmt.Sprintf("https://push.example.com/send/%s/%d", login, i),
			P256dh:   fmt.Sprintf("p256dh-%d", i), Auth: fmt.Sprintf("auth-%d", i),
			Device: fmt.Sprintf("device %d", i), Session: fmt.Sprintf("session-%d", i%2), CreatedAt: at,
		}
	}
	add := func(s2 store.PushSubscription) {
		t.Helper()
		if err := s.AddPushSubscription(ctx, login, s2); err != nil {
			t.Fatalf("AddPushSubscription(%s) = %v", s2.Endpoint, err)
		}
	}
	list := func(what string, want ...store.PushSubscription) {
		t.Helper()
		got, err := s.PushSubscriptions(ctx, login)
		if err != nil {
			t.Fatalf("PushSubscriptions = %v", err)
		}
		if len(got) != len(want) {
			t.Fatalf("PushSubscriptions %s = %d subscriptions, want %d: %+v", what, len(got), len(want), got)
		}
		for i := range got {
			if got[i].Endpoint != want[i].Endpoint || got[i].P256dh != want[i].P256dh || got[i].Auth != want[i].Auth ||
				got[i].Device != want[i].Device || got[i].Session != want[i].Session || !got[i].CreatedAt.Equal(want[i].CreatedAt) {
				t.Errorf("PushSubscriptions %s [%d] = %+v, want %+v", what, i, got[i], want[i])
			}
		}
	}
	previews := func(who string, want bool) {
		t.Helper()
		if got, err := s.PushPreviews(ctx, who); err != nil || got != want {
			t.Errorf("PushPreviews(%s) = %v, %v; want %v", who, got, err, want)
		}
	}
	list("of a new user")
	previews(login, false)

	first, second := sub(1, t0.Add(time.Minute)), sub(2, t0)
	add(first)
	add(second)
	list("after two adds", second, first)
	replaced := sub(2, t0.Add(2*time.Minute))
	replaced.P256dh, replaced.Device = "new keys", "renamed"
	add(replaced)
	list("after a replacement", first, replaced)
	for range 2 { // removing a missing one does nothing
		if err := s.RemovePushSubscription(ctx, login, first.Endpoint); err != nil {
			t.Fatalf("RemovePushSubscription = %v", err)
		}
	}
	list("after a removal", replaced)

	for _, on := range []bool{true, false, true} {
		if err := s.SetPushPreviews(ctx, login, on); err != nil {
			t.Fatalf("SetPushPreviews(%v) = %v", on, err)
		}
		previews(login, on)
	}
	list("after setting previews", replaced)
	bare := mustCreateUser(t, ctx, s, "bare").Login
	if err := s.SetPushPreviews(ctx, bare, true); err != nil {
		t.Fatal(err)
	}
	if got, err := s.PushSubscriptions(ctx, bare); err != nil || len(got) != 0 {
		t.Errorf("PushSubscriptions of a user who only set previews = %+v, %v; want none", got, err)
	}

	for i := 10; i < 10+store.MaxPushSubscriptions-1; i++ {
		add(sub(i, t0.Add(time.Duration(i)*time.Minute)))
	}
	err := s.AddPushSubscription(ctx, login, sub(99, t0))
	wantErr(t, "AddPushSubscription over the cap", err, store.ErrInvalid)
	replaced.Device = "replaced at the cap"
	add(replaced)
	if got, err := s.PushSubscriptions(ctx, login); err != nil || len(got) != store.MaxPushSubscriptions {
		t.Errorf("PushSubscriptions at the cap = %d, %v; want %d", len(got), err, store.MaxPushSubscriptions)
	}

	if _, err := s.DeleteAccount(ctx, login, a.PassHash); err != nil {
		t.Fatalf("DeleteAccount = %v", err)
	}
	list("of a deleted account")
	previews(login, false)
}

// testOutboxRacingAdds: of racing adds of one member, each with its
// notice, the one that adds writes it; the others, which change nothing,
// leave none (on Cassandra they take back what they wrote ahead of their
// compare-and-set).
func testOutboxRacingAdds(t *testing.T, s store.Store) {
	ctx := newContext(t)
	alice := mustCreateUser(t, ctx, s, "alice").UserRef
	bob := mustCreateUser(t, ctx, s, "bob").UserRef
	start := store.MessageIDAt(time.Now().Add(-time.Second))
	group := mustCreateGroup(t, ctx, s, "racing", alice)
	var (
		mu     sync.Mutex
		joined []store.MessageID
		wg     sync.WaitGroup
	)
	for range 4 {
		wg.Go(func() {
			n := store.Notice{Recipient: bob.Login, Kind: store.NoticeAddedToGroup, From: alice}
			_, ev, err := s.AddGroupMember(ctx, group.Name, alice, bob, time.Now(), n)
			if err != nil {
				t.Errorf("racing AddGroupMember = %v", err)
				return
			}
			if !ev.ID.IsZero() {
				mu.Lock()
				joined = append(joined, ev.ID)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(joined) != 1 {
		t.Fatalf("racing adds of bob: %d added him, want 1", len(joined))
	}
	want := []store.Notice{{ID: joined[0], Recipient: bob.Login, Kind: store.NoticeAddedToGroup, Room: group.Name, From: alice}}
	checkNotices(t, "bob's notices after racing adds", pendingOf(t, ctx, s, store.NoticeShard(bob.Login), start, bob.Login), want)
}

// testPushSends: a push send is recorded, one per recipient and
// conversation (a second replaces the first), read back for its
// recipients, and forgotten when notices of its conversation are marked
// done, in the same write; a send that is not whole is refused.
func testPushSends(t *testing.T, s store.Store) {
	ctx := newContext(t)
	author := mustCreateUser(t, ctx, s, "sender").UserRef
	room := mustCreateRoom(t, ctx, s, "sends", author)
	other := mustCreateRoom(t, ctx, s, "sends", author)
	shard := rand.IntN(store.NoticeShards)
	ann, bob := newLoginInShard(t, "ann", shard), newLoginInShard(t, "bob", shard)
	base := outboxWindow(3)
	notices := postNoticesAt(t, ctx, s, room.Name, author, []string{ann, bob}, base, base.Add(time.Millisecond))
	elsewhere := postNoticesAt(t, ctx, s, other.Name, author, []string{ann}, base.Add(2*time.Millisecond))
	ids := func(ns ...store.Notice) []store.MessageID {
		var out []store.MessageID
		for _, n := range ns {
			out = append(out, n.ID)
		}
		return out
	}
	mine := func(who string, ns []store.Notice) []store.Notice {
		return slices.DeleteFunc(slices.Clone(ns), func(n store.Notice) bool { return n.Recipient != who })
	}
	sends := func(recipients ...string) map[string]store.PushSend {
		t.Helper()
		got, err := s.PushSends(ctx, shard, recipients)
		if err != nil {
			t.Fatalf("PushSends = %v", err)
		}
		out := map[string]store.PushSend{}
		for _, ps := range got {
			if !slices.Contains(recipients, ps.Recipient) {
				t.Errorf("PushSends(%v) returned a send to %q", recipients, ps.Recipient)
			}
			out[ps.Recipient+" "+ps.Room] = ps
		}
		return out
	}
	first := store.PushSend{Recipient: ann, Room: room.Name, Notices: ids(mine(ann, notices)[:1]...), Payload: []byte(`{"count":1}`)}
	if err := s.RecordPushSends(ctx, shard, []store.PushSend{first}); err != nil {
		t.Fatalf("RecordPushSends = %v", err)
	}
	// A second send of ann's conversation replaces the first; bob's and
	// ann's other conversation's are written in the same call.
	again := store.PushSend{Recipient: ann, Room: room.Name, Notices: ids(mine(ann, notices)...), Payload: []byte(`{"count":2}`)}
	toBob := store.PushSend{Recipient: bob, Room: room.Name, Notices: ids(mine(bob, notices)...), Payload: []byte(`{"bob":true}`)}
	otherRoom := store.PushSend{Recipient: ann, Room: other.Name, Notices: ids(elsewhere...), Payload: []byte(`{"other":true}`)}
	if err := s.RecordPushSends(ctx, shard, []store.PushSend{again, toBob, otherRoom}); err != nil {
		t.Fatalf("RecordPushSends = %v", err)
	}
	got := sends(ann)
	if len(got) != 2 || !pushSendEqual(got[ann+" "+room.Name], again) || !pushSendEqual(got[ann+" "+other.Name], otherRoom) {
		t.Fatalf("ann's sends = %+v, want the second of her room's and the other room's", got)
	}
	if got := sends(ann, bob); len(got) != 3 || !pushSendEqual(got[bob+" "+room.Name], toBob) {
		t.Fatalf("ann's and bob's sends = %+v", got)
	}

	// Marking ann's notices of the room done forgets her send of it, not
	// bob's nor her other conversation's.
	if err := s.MarkNoticesDone(ctx, shard, mine(ann, notices)); err != nil {
		t.Fatal(err)
	}
	got = sends(ann, bob)
	if _, ok := got[ann+" "+room.Name]; ok || len(got) != 2 {
		t.Fatalf("after ann's notices are done, the sends = %+v; want bob's and ann's other", got)
	}
	if err := s.MarkNoticesDone(ctx, shard, append(mine(bob, notices), elsewhere...)); err != nil {
		t.Fatal(err)
	}
	if got := sends(ann, bob); len(got) != 0 {
		t.Fatalf("after every notice is done, the sends = %+v; want none", got)
	}

	for _, bad := range []store.PushSend{
		{Room: room.Name, Notices: first.Notices, Payload: first.Payload},
		{Recipient: ann, Notices: first.Notices, Payload: first.Payload},
		{Recipient: ann, Room: room.Name, Payload: first.Payload},
		{Recipient: ann, Room: room.Name, Notices: first.Notices},
		{Recipient: ann, Room: room.Name, Notices: first.Notices, Payload: make([]byte, store.MaxPushPayload+1)},
		{Recipient: newLoginInShard(t, "cy", (shard+1)%store.NoticeShards), Room: room.Name, Notices: first.Notices, Payload: first.Payload},
	} {
		wantErr(t, fmt.Sprintf("RecordPushSends(%+v)", bad), s.RecordPushSends(ctx, shard, []store.PushSend{bad}), store.ErrInvalid)
	}
	wantErr(t, "RecordPushSends of shard -1", s.RecordPushSends(ctx, -1, []store.PushSend{first}), store.ErrInvalid)
	if got := sends(ann); len(got) != 0 {
		t.Fatalf("refused sends were recorded: %+v", got)
	}
}

func pushSendEqual(a, b store.PushSend) bool {
	return a.Recipient == b.Recipient && a.Room == b.Room && slices.Equal(a.Notices, b.Notices) && string(a.Payload) == string(b.Payload)
}
