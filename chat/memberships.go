package chat

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/killrchat/chatql/apierror"
	"github.com/killrchat/chatql/store"
)

// Defaults of the membership cache.
const (
	// DefaultMembershipTTL bounds how long an instance lets a user post to
	// a room on the strength of a membership it read, should the
	// announcement of its end be lost (a broker outage).
	DefaultMembershipTTL = 5 * time.Second
	// DefaultMembershipRooms caps the rooms an instance remembers
	// memberships of; each remembers at most maxRoomMemberships.
	DefaultMembershipRooms = 10_000
	maxRoomMemberships     = 1_000
)

// Memberships is an instance's cache of who may post to which public room:
// a post by a user the cache knows takes one store round trip (the write)
// instead of two, and so does a page of its history (the read). It holds
// only memberships that allow posting without more checks (a participant,
// not banned, of a public room not in slow mode): a refusal is always read
// afresh, and so is every private group's post, which needs the group's
// members anyway, and every post in slow mode, which takes its turn.
//
// An entry lives for TTL at most, and is dropped as soon as the membership
// may have ended: on this instance by membershipEnded, before the mutation
// that ended it answers; on the others by the announcement they follow on the
// broker (see FollowAnnouncements), so a user removed from a room can post
// through another instance only until the announcement arrives (the
// broker's latency), or for TTL if it is lost. A read in flight when an
// entry was dropped is not cached: it may predate the change.
type Memberships struct {
	ttl time.Duration
	now func() time.Time

	mu    sync.Mutex
	rooms *simplelru.LRU[string, map[string]time.Time] // room -> login -> expiry
	epoch uint64                                       // counts the drops; a read started in an older epoch is not cached
}

// NewMemberships returns a cache of the memberships of up to rooms rooms
// (0 for the default), each kept for at most ttl (0 for the default).
func NewMemberships(rooms int, ttl time.Duration) *Memberships {
	if rooms <= 0 {
		rooms = DefaultMembershipRooms
	}
	if ttl <= 0 {
		ttl = DefaultMembershipTTL
	}
	lru, err := simplelru.NewLRU[string, map[string]time.Time](rooms, nil)
	if err != nil {
		panic(err) // only for a size that is not positive
	}
	return &Memberships{ttl: ttl, now: time.Now, rooms: lru}
}

// mayPost reports whether login's membership of the public room is cached
// as one that allows posting; if not, epoch is what remember needs.
func (c *Memberships) mayPost(room, login string) (ok bool, epoch uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if logins, found := c.rooms.Get(room); found {
		if expires, found := logins[login]; found && c.now().Before(expires) {
			return true, c.epoch
		}
	}
	return false, c.epoch
}

// remember caches m, read from the store in epoch, if it allows posting
// and nothing was dropped since the read began.
func (c *Memberships) remember(epoch uint64, m store.RoomMembership) {
	if !m.Participant || m.Banned || m.Kind == store.PrivateGroup || m.SlowMode > 0 {
		return // a post in slow mode takes its turn: the room's is not cached
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if epoch != c.epoch {
		return
	}
	logins, found := c.rooms.Get(m.Room)
	if !found || len(logins) >= maxRoomMemberships {
		logins = make(map[string]time.Time)
		c.rooms.Add(m.Room, logins)
	}
	logins[m.Login] = c.now().Add(c.ttl)
}

// forget drops login's membership of room, or every membership of room if
// login is empty.
func (c *Memberships) forget(room, login string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	if login == "" {
		c.rooms.Remove(room)
	} else if logins, found := c.rooms.Peek(room); found {
		delete(logins, login)
	}
}

// forgetUser drops every membership of login (their account was deleted).
func (c *Memberships) forgetUser(login string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	for _, room := range c.rooms.Keys() {
		if logins, found := c.rooms.Peek(room); found {
			delete(logins, login)
		}
	}
}

// Purge drops every cached membership (announcements may have been lost).
func (c *Memberships) Purge() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	c.rooms.Purge()
}

// knownPoster reports whether the cache knows login may post to the public
// room (and so read it); if not, epoch is what rememberMembership needs.
func (s *Service) knownPoster(room, login string) (known bool, epoch uint64) {
	if s.Memberships == nil {
		return false, 0
	}
	return s.Memberships.mayPost(room, login)
}

// rememberMembership caches m, read in epoch, if it allows posting.
func (s *Service) rememberMembership(epoch uint64, m store.RoomMembership) {
	if s.Memberships != nil {
		s.Memberships.remember(epoch, m)
	}
}

// membershipEnded drops login's cached membership of room (every cached
// membership of the room if login is empty) here, and tells the other
// instances to: call it once the store was asked to end it, with the
// store's answer. Nothing is dropped if the store refused (the membership
// stands); a timeout or another failure may have ended it, so it counts.
// The instances are told even when this one has no cache: another one may.
func (s *Service) membershipEnded(ctx context.Context, room, login string, err error) {
	if _, refused := apierror.Of(err); err != nil && refused {
		return
	}
	if s.Memberships != nil {
		s.Memberships.forget(room, login)
	}
	s.tellInstances(ctx, store.Event{Kind: store.MembershipEnded, Room: room, User: store.UserRef{Login: login}})
}
