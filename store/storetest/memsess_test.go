package storetest_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
	"github.com/killrchat/chatql/store/storetest"
)

// The sessions of memStore, behind its one mutex.

func TestMemSessions(t *testing.T) {
	s := newMemStore()
	defer s.Close()
	storetest.RunSessionTests(t, s)
}

type sessionKey struct{ login, id string }

func (s *memStore) CreateSession(_ context.Context, sess store.Session) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := sessionKey{sess.Login, sess.ID}
	if _, ok := s.sessions[k]; ok {
		return fmt.Errorf("session %q: %w", sess.ID, store.ErrConflict)
	}
	sess.RefreshHash = slices.Clone(sess.RefreshHash)
	s.sessions[k] = sess
	return nil
}

func (s *memStore) Session(_ context.Context, login, id string) (store.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.session(login, id)
}

func (s *memStore) session(login, id string) (store.Session, error) {
	sess, ok := s.sessions[sessionKey{login, id}]
	if !ok || !time.Now().Before(sess.ExpiresAt) {
		return store.Session{}, notFound("session " + id)
	}
	sess.RefreshHash = slices.Clone(sess.RefreshHash)
	return sess, nil
}

func (s *memStore) RotateSession(_ context.Context, next store.Session, from int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, err := s.session(next.Login, next.ID)
	if err != nil {
		return err
	}
	if cur.Generation != from {
		return fmt.Errorf("session at generation %d: %w", cur.Generation, store.ErrConflict)
	}
	next.RefreshHash = slices.Clone(next.RefreshHash)
	s.sessions[sessionKey{next.Login, next.ID}] = next
	return nil
}

func (s *memStore) DeleteSession(_ context.Context, login, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sessions, sessionKey{login, id})
	return nil
}

func (s *memStore) DeleteSessions(_ context.Context, login, keep string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.sessions {
		if k.login == login && k.id != keep {
			delete(s.sessions, k)
		}
	}
	return nil
}

func (s *memStore) ChangePassword(_ context.Context, login string, oldHash, newHash []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.accounts[login]
	if !ok {
		return notFound("user " + login)
	}
	if !bytes.Equal(a.PassHash, oldHash) {
		return fmt.Errorf("password changed: %w", store.ErrConflict)
	}
	a.PassHash = slices.Clone(newHash)
	s.accounts[login] = a
	return nil
}
