package chat

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/chatql/broker"
	"github.com/killrchat/chatql/store"
	"github.com/killrchat/chatql/store/embedded"
)

// TestMembershipsCache: only memberships that allow posting to a public
// room are cached, for the TTL; a drop forgets them, and a read that was
// in flight across a drop is not cached.
func TestMembershipsCache(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	c := NewMemberships(2, time.Second)
	c.now = func() time.Time { return now }
	member := func(room, login string) store.RoomMembership {
		return store.RoomMembership{Room: room, Login: login, Participant: true}
	}
	cached := func(room, login string) bool { ok, _ := c.mayPost(room, login); return ok }

	_, epoch := c.mayPost("tea", "alice")
	c.remember(epoch, member("tea", "alice"))
	banned := member("tea", "bob")
	banned.Banned = true
	group := member("croquet", "alice")
	group.Kind = store.PrivateGroup
	for _, m := range []store.RoomMembership{{Room: "tea", Login: "carol"}, banned, group} {
		c.remember(epoch, m)
	}
	switch {
	case !cached("tea", "alice"):
		t.Fatal("a participant of a public room was not cached")
	case cached("tea", "carol"), cached("tea", "bob"), cached("croquet", "alice"):
		t.Fatal("a membership that does not allow posting (not a participant, banned, a group's) was cached")
	}
	now = now.Add(time.Second)
	if cached("tea", "alice") {
		t.Fatal("an entry outlived its TTL")
	}

	// A drop between the read's start and its end: the read may predate
	// the change, so it is not cached.
	_, epoch = c.mayPost("tea", "alice")
	c.forget("elsewhere", "dave")
	c.remember(epoch, member("tea", "alice"))
	if cached("tea", "alice") {
		t.Fatal("a read in flight across a drop was cached")
	}

	fill := func() {
		_, epoch := c.mayPost("tea", "alice")
		c.remember(epoch, member("tea", "alice"))
		c.remember(epoch, member("tea", "bob"))
		c.remember(epoch, member("coffee", "alice"))
	}
	fill()
	c.forget("tea", "alice")
	if cached("tea", "alice") || !cached("tea", "bob") || !cached("coffee", "alice") {
		t.Fatal("forget(tea, alice) did not drop exactly alice's membership of tea")
	}
	c.forget("tea", "")
	if cached("tea", "bob") || !cached("coffee", "alice") {
		t.Fatal("forget(tea, \"\") did not drop exactly tea's memberships")
	}
	fill()
	c.forgetUser("alice")
	if cached("tea", "alice") || cached("coffee", "alice") || !cached("tea", "bob") {
		t.Fatal("forgetUser(alice) did not drop exactly alice's memberships")
	}
	fill()
	c.Purge()
	if cached("tea", "bob") || cached("coffee", "alice") {
		t.Fatal("Purge left memberships")
	}

	// The rooms are bounded (2 here): the least recently used goes.
	fill()
	_, epoch = c.mayPost("tea", "bob")
	c.remember(epoch, member("juice", "bob"))
	if cached("coffee", "alice") || !cached("tea", "bob") || !cached("juice", "bob") {
		t.Fatal("the cache of two rooms did not evict the least recently used")
	}
}

// instance is one server instance over a shared store and broker: its own
// caches, following the announcements.
func newInstance(t *testing.T, ctx context.Context, db store.Store, b broker.Broker) *Service {
	t.Helper()
	s := &Service{Store: db, Broker: b, Log: slog.Default(), Memberships: NewMemberships(0, time.Hour)}
	s.Typists = s.NewTyping()
	if err := s.FollowAnnouncements(ctx, nil); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestMembershipEndRefusesPosts: every way a membership of a public room
// ends (leaving, removal, ban, the room's deletion) refuses the user's
// next post and history read at once on the instance that ended it, and on another instance
// as soon as the announcement arrives, though both cached the membership
// (for an hour here) while the user posted.
func TestMembershipEndRefusesPosts(t *testing.T) {
	db, err := embedded.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	b := broker.NewLocal(64)
	defer b.Close()
	ctx, cancel := context.WithCancel(t.Context()) // ends the following before the broker closes
	defer cancel()
	here, there := newInstance(t, ctx, db, b), newInstance(t, ctx, db, b)

	alice := store.UserRef{Login: "alice", Firstname: "Alice", Lastname: "L"}
	bob := store.UserRef{Login: "bob", Firstname: "Bob", Lastname: "L"}
	for _, u := range []store.UserRef{alice, bob} {
		if err := db.CreateUser(ctx, store.Account{User: store.User{UserRef: u}}); err != nil {
			t.Fatal(err)
		}
	}

	for _, c := range []struct {
		name string
		end  func(room string) error
		want error
	}{
		{"leaveRoom", func(room string) error { _, err := here.Leave(ctx, bob, room); return err }, store.ErrForbidden},
		{"removeParticipant", func(room string) error {
			_, err := here.Moderate(ctx, alice, room, "bob", store.ParticipantRemoved)
			return err
		}, store.ErrForbidden},
		{"banUser", func(room string) error {
			_, err := here.Moderate(ctx, alice, room, "bob", store.ParticipantBanned)
			return err
		}, store.ErrForbidden},
		{"deleteRoom", func(room string) error { _, err := here.DeleteRoom(ctx, alice, room); return err }, store.ErrNotFound},
	} {
		t.Run(c.name, func(t *testing.T) {
			room := "room-" + strings.ToLower(c.name)
			if _, err := here.CreateRoom(ctx, alice, room, store.PublicRoom, ""); err != nil {
				t.Fatal(err)
			}
			if _, err := here.Join(ctx, bob, room); err != nil {
				t.Fatal(err)
			}
			for _, inst := range []*Service{here, there} {
				if _, err := inst.Post(ctx, bob, room, Draft{Content: "hello"}); err != nil {
					t.Fatal(err)
				}
				if page, err := history(ctx, inst, bob, room); err != nil || len(page) == 0 {
					t.Fatalf("history before the end: %v", err)
				}
				if ok, _ := inst.Memberships.mayPost(room, "bob"); !ok {
					t.Fatal("a post did not cache bob's membership")
				}
			}
			// A refused attempt leaves the membership, and so the caches.
			if _, err := here.DeleteRoom(ctx, bob, room); !errors.Is(err, store.ErrForbidden) {
				t.Fatalf("bob deleting alice's room = %v, want forbidden", err)
			}
			if ok, _ := here.Memberships.mayPost(room, "bob"); !ok {
				t.Fatal("a refused deleteRoom dropped bob's cached membership")
			}
			if err := c.end(room); err != nil {
				t.Fatal(err)
			}
			if _, err := here.Post(ctx, bob, room, Draft{Content: "still here?"}); !errors.Is(err, c.want) {
				t.Fatalf("post on the instance that ended the membership = %v, want %v", err, c.want)
			}
			if _, err := history(ctx, here, bob, room); !errors.Is(err, c.want) {
				t.Fatalf("history on the instance that ended the membership = %v, want %v", err, c.want)
			}
			waitUntil(t, func() bool { ok, _ := there.Memberships.mayPost(room, "bob"); return !ok })
			if _, err := there.Post(ctx, bob, room, Draft{Content: "still here?"}); !errors.Is(err, c.want) {
				t.Fatalf("post on the other instance = %v, want %v", err, c.want)
			}
			if _, err := history(ctx, there, bob, room); !errors.Is(err, c.want) {
				t.Fatalf("history on the other instance = %v, want %v", err, c.want)
			}
		})
	}

	// A gap in the announcements drops everything: some may be lost.
	if _, err := here.CreateRoom(ctx, alice, "after", store.PublicRoom, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := there.Post(ctx, alice, "after", Draft{Content: "hello"}); err != nil {
		t.Fatal(err)
	}
	if err := b.Publish(ctx, broker.AnnouncementsTopic, store.Event{Kind: broker.Resync}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, func() bool { ok, _ := there.Memberships.mayPost("after", "alice"); return !ok })
}

// history reads the newest page of the room's history as me.
func history(ctx context.Context, s *Service, me store.UserRef, room string) ([]store.Message, error) {
	read, err := s.History(ctx, me, room)
	if err != nil {
		return nil, err
	}
	return read.Older(ctx, store.MessageID{}, 50)
}
