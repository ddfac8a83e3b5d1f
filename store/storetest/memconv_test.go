package storetest_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
	"github.com/killrchat/chatql/store/storetest"
)

// The conversations of memStore: as plain as can be, to prove that
// RunConversationTests passes against a store that keeps the contract.

func TestMemStoreConversations(t *testing.T) {
	s := newMemStore()
	defer s.Close()
	storetest.RunConversationTests(t, s)
}

// memEntry is an inbox entry with the ids of its unread messages.
type memEntry struct {
	store.Conversation
	unread []store.MessageID
}

// newEntry makes a fresh entry of login for id.
func (s *memStore) newEntry(login, id string) *memEntry {
	if s.inboxes[login] == nil {
		s.inboxes[login] = map[string]*memEntry{}
	}
	e := &memEntry{Conversation: store.Conversation{ID: id, Kind: store.GroupConversation}}
	s.inboxes[login][id] = e
	return e
}

func (s *memStore) record(login string, m store.Message, kind store.ConversationKind, peer store.UserRef, unread bool) {
	e := s.inboxes[login][m.Room]
	if e == nil {
		e = s.newEntry(login, m.Room)
		e.Kind, e.Peer = kind, peer
	}
	if m.ID.Compare(e.LastMessage.ID) > 0 {
		e.LastMessage = m
	}
	if unread {
		e.unread = append(e.unread, m.ID)
	}
}

func (s *memStore) SendDirect(_ context.Context, m store.Message, to store.UserRef) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.messages[m.Room] = append(s.messages[m.Room], m)
	s.record(m.Author.Login, m, store.DirectConversation, to, false)
	s.record(to.Login, m, store.DirectConversation, m.Author, to.Login != m.Author.Login)
	return nil
}

func (s *memStore) PostGroupMessage(_ context.Context, m store.Message, members []store.UserRef) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.messages[m.Room] = append(s.messages[m.Room], m)
	for _, u := range members {
		s.record(u.Login, m, store.GroupConversation, store.UserRef{}, u.Login != m.Author.Login)
	}
	return nil
}

func (s *memStore) entry(e *memEntry) store.Conversation {
	c := e.Conversation
	c.Unread = len(e.unread)
	c.Windows = slices.Clone(c.Windows)
	return c
}

func (s *memStore) Inbox(_ context.Context, login string) ([]store.Conversation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []store.Conversation{}
	for _, e := range s.inboxes[login] {
		out = append(out, s.entry(e))
	}
	// The zero id sorts below every id made after 1582: entries without a
	// message come last.
	slices.SortFunc(out, func(a, b store.Conversation) int {
		if c := b.LastMessage.ID.Compare(a.LastMessage.ID); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

func (s *memStore) Conversation(_ context.Context, login, id string) (store.Conversation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.inboxes[login][id]
	if e == nil {
		return store.Conversation{}, notFound(fmt.Sprintf("conversation %s of %s", id, login))
	}
	return s.entry(e), nil
}

func (s *memStore) MarkRead(_ context.Context, login, id string, upTo store.MessageID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.inboxes[login][id]; e != nil {
		e.unread = slices.DeleteFunc(e.unread, func(m store.MessageID) bool { return m.Compare(upTo) <= 0 })
	}
	return nil
}

func (s *memStore) AddGroupMember(_ context.Context, group, by string, u store.UserRef, at time.Time) (store.Room, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.rooms[group]
	switch {
	case !ok:
		return store.Room{}, notFound("room " + group)
	case r.Kind != store.PrivateGroup:
		return store.Room{}, store.Invalidf("room %q is public", group)
	case !r.HasParticipant(by):
		return store.Room{}, fmt.Errorf("%s adding to %s: %w", by, group, store.ErrForbidden)
	case r.HasParticipant(u.Login):
		return cloneRoom(r), nil
	}
	r.Participants = append(slices.Clone(r.Participants), u)
	slices.SortFunc(r.Participants, func(a, b store.UserRef) int { return strings.Compare(a.Login, b.Login) })
	s.rooms[group] = r
	s.setRoomOfUser(u.Login, group, true)
	e := s.inboxes[u.Login][group]
	if e == nil {
		e = s.newEntry(u.Login, group)
	}
	e.Windows = append(e.Windows, store.Window{From: at})
	return cloneRoom(r), nil
}

func (s *memStore) LeaveGroup(_ context.Context, group string, u store.UserRef, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.rooms[group]
	if !ok || !r.HasParticipant(u.Login) {
		return notFound(fmt.Sprintf("%s in group %s", u.Login, group))
	}
	r.Participants = slices.DeleteFunc(slices.Clone(r.Participants), func(p store.UserRef) bool { return p.Login == u.Login })
	s.rooms[group] = r
	s.setRoomOfUser(u.Login, group, false)
	if e := s.inboxes[u.Login][group]; e != nil && len(e.Windows) > 0 {
		e.Windows[len(e.Windows)-1].To = at
	}
	return nil
}

func (s *memStore) GroupMessages(_ context.Context, group string, windows []store.Window, before store.MessageID, limit int) ([]store.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []store.Message
	for _, m := range s.sorted(group, true) {
		if len(out) == limit || !before.IsZero() && m.ID.Compare(before) >= 0 {
			continue
		}
		for _, w := range windows {
			if m.ID.Compare(store.MinMessageID(w.From)) >= 0 && (w.To.IsZero() || m.ID.Compare(store.MinMessageID(w.To)) < 0) {
				out = append(out, m)
				break
			}
		}
	}
	return out, nil
}

func (s *memStore) Message(_ context.Context, id store.MessageID) (store.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, msgs := range s.messages {
		for _, m := range msgs {
			if m.ID == id {
				return m, nil
			}
		}
	}
	return store.Message{}, notFound(fmt.Sprint("message ", id))
}

func (s *memStore) MessagesByAuthor(_ context.Context, login string, before store.MessageID, limit int) ([]store.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var mine []store.Message
	for _, msgs := range s.messages {
		for _, m := range msgs {
			if m.Author.Login == login && (before.IsZero() || m.ID.Compare(before) < 0) {
				mine = append(mine, m)
			}
		}
	}
	slices.SortFunc(mine, func(a, b store.Message) int { return b.ID.Compare(a.ID) })
	return mine[:min(limit, len(mine))], nil
}

func (s *memStore) HideMessage(_ context.Context, m store.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, stored := range s.messages[m.Room] {
		if stored.ID == m.ID {
			s.messages[m.Room][i].Hidden = true
			for _, inbox := range s.inboxes {
				if e := inbox[m.Room]; e != nil && e.LastMessage.ID == m.ID {
					e.LastMessage.Hidden = true
				}
			}
			return nil
		}
	}
	return notFound(fmt.Sprint("message ", m.ID))
}
