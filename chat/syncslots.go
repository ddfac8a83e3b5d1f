package chat

import (
	"sync"

	"github.com/killrchat/chatql/store"
)

// DefaultMaxSyncsPerUser is how many syncs (sync subscriptions, and
// changes polls under way) one user may have open at once on one instance.
// A sync follows each of the user's rooms (up to MaxRoomsPerUser) with a
// subscription of its own: the cap bounds what one user's syncs hold on an
// instance, a few tabs' and devices' worth, however many operations their
// connections open.
const DefaultMaxSyncsPerUser = 16

// syncsPerUser is the cap in force.
func (s *Service) syncsPerUser() int {
	if s.MaxSyncsPerUser > 0 {
		return s.MaxSyncsPerUser
	}
	return DefaultMaxSyncsPerUser
}

// syncSlots counts each user's open syncs on this instance.
type syncSlots struct {
	mu   sync.Mutex
	open map[string]int // by login; a user with none has no entry
}

// take gives login a place among their open syncs, or refuses
// (BAD_USER_INPUT) when they hold max already. release gives it back, once
// however often it is called.
func (s *syncSlots) take(login string, max int) (release func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open[login] >= max {
		return nil, errTooManySyncs(max)
	}
	if s.open == nil {
		s.open = map[string]int{}
	}
	s.open[login]++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.open[login]--; s.open[login] <= 0 {
				delete(s.open, login)
			}
		})
	}, nil
}

// held is how many syncs login has open.
func (s *syncSlots) held(login string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.open[login]
}

// errTooManySyncs refuses a sync over the cap of max.
func errTooManySyncs(max int) error {
	return store.Invalidf("too many syncs: you have %d open at once on this server, the most a user may; complete one first", max)
}
