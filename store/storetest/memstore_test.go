package storetest_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/killrchat/chatql/store"
	"github.com/killrchat/chatql/store/storetest"
)

// memStore is a minimal, obviously correct Store behind one mutex: it
// proves the suite passes against a store that keeps the contract.
type memStore struct {
	mu       sync.Mutex
	accounts map[string]store.Account
	rooms    map[string]store.Room
	messages map[string][]store.Message
	inboxes  map[string]map[string]*memEntry // login → conversation id → entry
	sessions map[sessionKey]store.Session
}

func newMemStore() *memStore {
	return &memStore{
		accounts: map[string]store.Account{},
		rooms:    map[string]store.Room{},
		messages: map[string][]store.Message{},
		inboxes:  map[string]map[string]*memEntry{},
		sessions: map[sessionKey]store.Session{},
	}
}

func TestMemStore(t *testing.T) {
	s := newMemStore()
	defer s.Close()
	storetest.RunTests(t, s)
}

func notFound(what string) error { return fmt.Errorf("%s: %w", what, store.ErrNotFound) }

func (s *memStore) CreateUser(_ context.Context, a store.Account) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.accounts[a.Login]; ok {
		return fmt.Errorf("user %q: %w", a.Login, store.ErrConflict)
	}
	a.ChatRooms = nil
	a.PassHash = slices.Clone(a.PassHash)
	s.accounts[a.Login] = a
	return nil
}

func (s *memStore) Account(_ context.Context, login string) (store.Account, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.accounts[login]
	if !ok {
		return store.Account{}, notFound("user " + login)
	}
	a.ChatRooms = slices.Clone(a.ChatRooms)
	a.PassHash = slices.Clone(a.PassHash)
	return a, nil
}

func (s *memStore) User(ctx context.Context, login string) (store.User, error) {
	a, err := s.Account(ctx, login)
	return a.User, err
}

func (s *memStore) setRoomOfUser(login, room string, in bool) {
	a, ok := s.accounts[login]
	if !ok {
		return
	}
	rooms := slices.DeleteFunc(slices.Clone(a.ChatRooms), func(r string) bool { return r == room })
	if in {
		rooms = append(rooms, room)
		slices.Sort(rooms)
	}
	a.ChatRooms = rooms
	s.accounts[login] = a
}

func (s *memStore) CreateRoom(_ context.Context, r store.Room) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.rooms[r.Name]; ok {
		return fmt.Errorf("room %q: %w", r.Name, store.ErrConflict)
	}
	r.Participants = []store.UserRef{r.Creator}
	s.rooms[r.Name] = r
	s.setRoomOfUser(r.Creator.Login, r.Name, true)
	if r.Kind == store.PrivateGroup {
		s.newEntry(r.Creator.Login, r.Name).Windows = []store.Window{{From: r.CreatedAt}}
	}
	return nil
}

func cloneRoom(r store.Room) store.Room {
	r.Participants = slices.Clone(r.Participants)
	return r
}

func (s *memStore) Room(_ context.Context, name string) (store.Room, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.rooms[name]
	if !ok {
		return store.Room{}, notFound("room " + name)
	}
	return cloneRoom(r), nil
}

func (s *memStore) Membership(_ context.Context, name, login string) (store.RoomMembership, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.rooms[name]
	if !ok {
		return store.RoomMembership{}, notFound("room " + name)
	}
	return store.RoomMembership{Room: name, Kind: r.Kind, Creator: r.Creator, Login: login, Participant: r.HasParticipant(login)}, nil
}

func (s *memStore) Rooms(_ context.Context, after string, limit int) ([]store.Room, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range s.rooms {
			if n > after && !yield(n) {
				return
			}
		}
	})
	var out []store.Room
	for _, n := range names[:min(limit, len(names))] {
		out = append(out, cloneRoom(s.rooms[n]))
	}
	return out, nil
}

func (s *memStore) JoinRoom(_ context.Context, name string, u store.UserRef) (store.Room, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.rooms[name]
	if !ok {
		return store.Room{}, notFound("room " + name)
	}
	if !r.HasParticipant(u.Login) {
		r.Participants = append(slices.Clone(r.Participants), u)
		slices.SortFunc(r.Participants, func(a, b store.UserRef) int { return strings.Compare(a.Login, b.Login) })
		s.rooms[name] = r
	}
	s.setRoomOfUser(u.Login, name, true)
	return cloneRoom(r), nil
}

func (s *memStore) LeaveRoom(_ context.Context, name string, u store.UserRef) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.rooms[name]
	if !ok || !r.HasParticipant(u.Login) {
		return notFound(fmt.Sprintf("%s in room %s", u.Login, name))
	}
	r.Participants = slices.DeleteFunc(slices.Clone(r.Participants), func(p store.UserRef) bool { return p.Login == u.Login })
	s.rooms[name] = r
	s.setRoomOfUser(u.Login, name, false)
	return nil
}

func (s *memStore) DeleteRoom(_ context.Context, name, creatorLogin string) (store.Room, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.rooms[name]
	if !ok {
		return store.Room{}, notFound("room " + name)
	}
	if r.Creator.Login != creatorLogin {
		return store.Room{}, fmt.Errorf("room %q: %w", name, store.ErrForbidden)
	}
	delete(s.rooms, name)
	delete(s.messages, name)
	for _, p := range r.Participants {
		s.setRoomOfUser(p.Login, name, false)
		if r.Kind == store.PrivateGroup {
			delete(s.inboxes[p.Login], name)
		}
	}
	return r, nil
}

func (s *memStore) PostMessage(_ context.Context, m store.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.messages[m.Room] = append(s.messages[m.Room], m)
	return nil
}

func (s *memStore) sorted(room string, desc bool) []store.Message {
	msgs := slices.Clone(s.messages[room])
	slices.SortFunc(msgs, func(a, b store.Message) int {
		if desc {
			return b.ID.Compare(a.ID)
		}
		return a.ID.Compare(b.ID)
	})
	return msgs
}

func (s *memStore) Messages(_ context.Context, room string, before store.MessageID, limit int) ([]store.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []store.Message
	for _, m := range s.sorted(room, true) {
		if len(out) < limit && (before.IsZero() || m.ID.Compare(before) < 0) {
			out = append(out, m)
		}
	}
	return out, nil
}

func (s *memStore) MessagesAfter(_ context.Context, room string, after store.MessageID, limit int) ([]store.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []store.Message
	for _, m := range s.sorted(room, false) {
		if len(out) < limit && m.ID.Compare(after) > 0 {
			out = append(out, m)
		}
	}
	return out, nil
}

func (s *memStore) Close() error { return nil }
