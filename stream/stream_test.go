package stream

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/chatql/broker"
	"github.com/killrchat/chatql/store"
	"github.com/killrchat/chatql/store/embedded"
)

// The stream's logic on the real embedded store and the in-process broker:
// a Resync stands for whatever made the broker lose events.

type fixture struct {
	t   *testing.T
	ctx context.Context
	db  *embedded.DB
	br  broker.Broker
	src *Source
}

func newFixture(t *testing.T) *fixture { return newFixtureOn(t, broker.NewLocal(0)) }

// newFixtureOn is the fixture on br, which it closes at the end.
func newFixtureOn(t *testing.T, br broker.Broker) *fixture {
	t.Helper()
	db, err := embedded.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, ctx: t.Context(), db: db, br: br, src: &Source{Store: db, Broker: br}}
	t.Cleanup(func() {
		if n := f.src.Open(); n != 0 {
			t.Errorf("%d streams left open", n)
		}
		_ = br.Close()
		_ = db.Close()
	})
	return f
}

func (f *fixture) user(login string) store.UserRef {
	f.t.Helper()
	u := store.UserRef{Login: login, Firstname: login}
	if err := f.db.CreateUser(f.ctx, store.Account{User: store.User{UserRef: u}, PassHash: []byte("x")}); err != nil {
		f.t.Fatal(err)
	}
	return u
}

func (f *fixture) room(name string, creator store.UserRef, others ...store.UserRef) {
	f.t.Helper()
	if err := f.db.CreateRoom(f.ctx, store.Room{Name: name, Creator: creator, CreatedAt: time.Now(), Participants: []store.UserRef{creator}}); err != nil {
		f.t.Fatal(err)
	}
	for _, o := range others {
		if _, _, err := f.db.JoinRoom(f.ctx, name, o); err != nil {
			f.t.Fatal(err)
		}
	}
}

// post stores a message and returns its event, unpublished.
func (f *fixture) post(room string, author store.UserRef, content string) store.Event {
	f.t.Helper()
	m := store.Message{Room: room, ID: store.NewMessageID(), Author: author, Content: content}
	if err := f.db.PostMessage(f.ctx, m); err != nil {
		f.t.Fatal(err)
	}
	return store.PostedEvent(m)
}

func (f *fixture) publish(ev store.Event) {
	f.t.Helper()
	if err := f.br.Publish(f.ctx, broker.RoomTopic(ev.Room), ev); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) resync(topic string) {
	f.t.Helper()
	if err := f.br.Publish(f.ctx, topic, store.Event{Kind: broker.Resync}); err != nil {
		f.t.Fatal(err)
	}
}

// collect pumps s until it has nothing ready, and returns what it emitted
// as "KIND user content" and whether it ended.
func collect(t *testing.T, s *Room) (got []string, done bool) {
	t.Helper()
	done, err := s.Pump(t.Context(), func(ev *store.Event) bool {
		d := string(ev.Kind) + " " + ev.User.Login
		if ev.Message != nil {
			d += " " + ev.Message.Content
		}
		got = append(got, d)
		return true
	})
	if err != nil {
		t.Fatalf("Pump: %v", err)
	}
	return got, done
}

func want(t *testing.T, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// A resume replays the log after the cursor; the same events arriving
// live as well (the replay overlapping the live stream) come once.
func TestRoomReplayThenLiveWithoutRepeats(t *testing.T) {
	f := newFixture(t)
	alice, bob := f.user("alice"), f.user("bob")
	f.room("tea", alice, bob)
	cursor := f.post("tea", alice, "m0")
	e1, e2 := f.post("tea", alice, "m1"), f.post("tea", alice, "m2")

	s, err := f.src.OpenRoom(f.ctx, "tea", bob, store.Cursor{ID: cursor.ID}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	f.publish(e2) // live, while the replay has not run yet
	got, done := collect(t, s)
	want(t, got, "MESSAGE_POSTED alice m1", "MESSAGE_POSTED alice m2")
	if done {
		t.Fatal("the stream ended")
	}
	f.publish(e1) // a late repeat, from another server
	e3 := f.post("tea", alice, "m3")
	f.publish(e3)
	got, _ = collect(t, s)
	want(t, got, "MESSAGE_POSTED alice m3")
}

// After a Resync the stream catches up from the log with every kind of
// change it missed, and ends at the viewer's own leave.
func TestRoomResyncCatchesUpEveryKind(t *testing.T) {
	f := newFixture(t)
	alice, bob, carol := f.user("alice"), f.user("bob"), f.user("carol")
	f.room("tea", alice, bob, carol)
	s, err := f.src.OpenRoom(f.ctx, "tea", carol, store.Cursor{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	seen := f.post("tea", alice, "seen")
	f.publish(seen)
	got, _ := collect(t, s)
	want(t, got, "MESSAGE_POSTED alice seen")

	// Lost by the broker: a post, a hide, bob's leave, carol's leave, and
	// a post after it carol must not see.
	lost := f.post("tea", alice, "lost")
	msg := *lost.Message
	if _, err := f.db.HideMessage(f.ctx, msg, alice); err != nil {
		t.Fatal(err)
	}
	for _, u := range []store.UserRef{bob, carol} {
		if _, err := f.db.LeaveRoom(f.ctx, "tea", u); err != nil {
			t.Fatal(err)
		}
	}
	f.post("tea", alice, "after carol left")
	f.resync(broker.RoomTopic("tea"))
	got, done := collect(t, s)
	want(t, got, "MESSAGE_POSTED alice lost", "MESSAGE_HIDDEN alice lost",
		"PARTICIPANT_LEFT bob bob left the room", "PARTICIPANT_LEFT carol carol left the room")
	if !done {
		t.Error("the stream goes on after the viewer left")
	}
}

// A room deleted while the broker lost its events has no log left: the
// catch-up finds it gone and ends the stream with ROOM_DELETED.
func TestRoomResyncFindsRoomDeleted(t *testing.T) {
	f := newFixture(t)
	alice, bob := f.user("alice"), f.user("bob")
	f.room("tea", alice, bob)
	s, err := f.src.OpenRoom(f.ctx, "tea", bob, store.Cursor{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, _, err := f.db.DeleteRoom(f.ctx, "tea", alice); err != nil {
		t.Fatal(err)
	}
	f.resync(broker.RoomTopic("tea"))
	var last store.Event
	done, err := s.Pump(f.ctx, func(ev *store.Event) bool { last = *ev; return true })
	if err != nil || !done {
		t.Fatalf("Pump = %v, %v; want the stream done", done, err)
	}
	if last.Kind != store.RoomDeleted || !last.ID.IsZero() {
		t.Errorf("last event %+v, want ROOM_DELETED without an id", last)
	}
}

// The inbox replays after its cursor, and after a Resync catches up from
// its log: every event has its conversation and id (a Resync used to come
// through as an UNREAD_CHANGED with no conversation).
func TestInboxReplayAndResync(t *testing.T) {
	f := newFixture(t)
	alice, bob := f.user("alice"), f.user("bob")
	send := func(content string) store.MessageID {
		m := store.Message{Room: store.DirectConversationID("alice", "bob"), ID: store.NewMessageID(), Author: alice, Content: content}
		if err := f.db.SendDirect(f.ctx, m, bob); err != nil {
			t.Fatal(err)
		}
		return m.ID
	}
	cursor := send("d0")
	send("d1")
	in, err := f.src.OpenInbox(f.ctx, bob, cursor, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	got := make(chan string, 16)
	ran := make(chan error, 1)
	go func() {
		ran <- in.Run(ctx, func(ev *store.Event) bool {
			d := fmt.Sprintf("%s %s %v", ev.Kind, ev.Room, ev.ID.IsZero())
			if ev.Message != nil {
				d += " " + ev.Message.Content
			}
			got <- d
			return true
		})
	}()
	next := func() string {
		select {
		case d := <-got:
			return d
		case <-time.After(10 * time.Second):
			t.Fatal("no inbox event")
			return ""
		}
	}
	want(t, []string{next()}, "DIRECT_MESSAGE alice:bob false d1")
	send("d2") // lost by the broker
	f.resync(broker.UserTopic("bob"))
	want(t, []string{next()}, "DIRECT_MESSAGE alice:bob false d2")
	cancel()
	if err := <-ran; err != nil {
		t.Fatalf("Run = %v", err)
	}
}

// Presence changes come from their own topic, to the streams that follow
// them only: the others are not even woken.
func TestRoomPresenceOnlyWhenFollowed(t *testing.T) {
	f := newFixture(t)
	alice, bob := f.user("alice"), f.user("bob")
	f.room("tea", alice, bob)
	plain, err := f.src.OpenRoom(f.ctx, "tea", bob, store.Cursor{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	following, err := f.src.OpenRoom(f.ctx, "tea", bob, store.Cursor{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer following.Close()
	if err := following.FollowPresence(f.ctx); err != nil {
		t.Fatal(err)
	}
	collect(t, plain)
	collect(t, following)
	online := store.Event{Kind: store.PresenceChanged, Room: "tea", User: alice, Online: true}
	if err := f.br.Publish(f.ctx, broker.RoomPresenceTopic("tea"), online); err != nil {
		t.Fatal(err)
	}
	if plain.Ready() {
		t.Fatal("a stream that does not follow presence has work from a presence change")
	}
	if !following.Ready() {
		t.Fatal("a stream that follows presence has no work from a presence change")
	}
	got, _ := collect(t, following)
	want(t, got, "PRESENCE_CHANGED alice")
	f.publish(f.post("tea", alice, "hi"))
	got, _ = collect(t, following)
	want(t, got, "MESSAGE_POSTED alice hi")
	got, _ = collect(t, plain)
	want(t, got, "MESSAGE_POSTED alice hi")
}

// Run waits on both subscriptions of a stream that follows presence.
func TestRunFollowsPresence(t *testing.T) {
	f := newFixture(t)
	alice, bob := f.user("alice"), f.user("bob")
	f.room("tea", alice, bob)
	room, err := f.src.OpenRoom(f.ctx, "tea", bob, store.Cursor{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	inbox, err := f.src.OpenInbox(f.ctx, bob, store.MessageID{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, follow := range []func(context.Context) error{room.FollowPresence, inbox.FollowPresence} {
		if err := follow(f.ctx); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(f.ctx)
	got := make(chan string, 16)
	emit := func(ev *store.Event) bool {
		got <- fmt.Sprintf("%s %s %s", ev.Kind, ev.Room, ev.User.Login)
		return true
	}
	ran := make(chan error, 2)
	go func() { ran <- room.Run(ctx, emit) }()
	go func() { ran <- inbox.Run(ctx, emit) }()
	next := func() string {
		select {
		case d := <-got:
			return d
		case <-time.After(10 * time.Second):
			t.Fatal("no event")
			return ""
		}
	}
	direct := store.DirectConversationID("alice", "bob")
	for _, p := range []struct{ topic, room string }{
		{broker.RoomPresenceTopic("tea"), "tea"},
		{broker.UserPresenceTopic("bob"), direct},
	} {
		if err := f.br.Publish(f.ctx, p.topic, store.Event{Kind: store.PresenceChanged, Room: p.room, User: alice, Online: true}); err != nil {
			t.Fatal(err)
		}
		want(t, []string{next()}, "PRESENCE_CHANGED "+p.room+" alice")
	}
	f.publish(f.post("tea", alice, "hi"))
	want(t, []string{next()}, "MESSAGE_POSTED tea alice")
	cancel()
	for range 2 {
		if err := <-ran; err != nil {
			t.Fatalf("Run = %v", err)
		}
	}
}

// A replay that overlaps a live queue longer than the default remembers
// (a larger CHAT_SUBSCRIBER_QUEUE) still delivers each event once: the
// stream remembers at least as many delivered ids as its queue holds.
func TestRoomReplayOverlappingALongQueueWithoutRepeats(t *testing.T) {
	const n = 1500 // more than the 1,024 a stream remembers by default
	f := newFixtureOn(t, broker.NewLocal(2*n))
	alice, bob := f.user("alice"), f.user("bob")
	f.room("tea", alice, bob)
	cursor := f.post("tea", alice, "m0")
	var events []store.Event
	for i := range n {
		events = append(events, f.post("tea", alice, fmt.Sprintf("m%d", i+1)))
	}
	s, err := f.src.OpenRoom(f.ctx, "tea", bob, store.Cursor{ID: cursor.ID}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, ev := range events { // all live too, queued while the replay has not run
		f.publish(ev)
	}
	var got []string
	for range 100 {
		more, done := collect(t, s)
		if done {
			t.Fatal("the stream ended")
		}
		if len(more) == 0 {
			break
		}
		got = append(got, more...)
	}
	if len(got) != n {
		t.Fatalf("delivered %d events, want each of the %d once", len(got), n)
	}
	seen := map[string]bool{}
	for _, g := range got {
		if seen[g] {
			t.Fatalf("%q delivered twice", g)
		}
		seen[g] = true
	}
}
