package auth

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

func TestVerdictsBound(t *testing.T) {
	c := newVerdicts[sessionKey, struct{}](100)
	until := time.Now().Add(time.Hour)
	for i := range 1000 {
		c.remember(sessionKey{"alice", newSessionID()}, verdict[struct{}]{until: until}, c.readEpoch())
		if len(c.entries) > c.limit {
			t.Fatalf("after %d puts the cache holds %d entries, over its limit %d", i+1, len(c.entries), c.limit)
		}
	}
}

// stalledReads is a store whose first read of a session or an API key
// answers, then waits for release before returning: a read that saw a
// credential standing returns only after the test revoked it.
type stalledReads struct {
	store.Store
	once    sync.Once
	read    chan struct{}
	release chan struct{}
}

func stall(st store.Store) *stalledReads {
	return &stalledReads{Store: st, read: make(chan struct{}), release: make(chan struct{})}
}

func (s *stalledReads) wait() {
	s.once.Do(func() {
		s.read <- struct{}{}
		<-s.release
	})
}

func (s *stalledReads) Session(ctx context.Context, login, id string) (store.Session, error) {
	sess, err := s.Store.Session(ctx, login, id)
	s.wait()
	return sess, err
}

func (s *stalledReads) BotByKey(ctx context.Context, hash []byte) (string, error) {
	login, err := s.Store.BotByKey(ctx, hash)
	s.wait()
	return login, err
}

// TestRevocationBeatsReadInFlight: a read of a session or an API key that
// began before the credential was revoked, and ends after, does not cache
// it as standing: the next request is refused.
func TestRevocationBeatsReadInFlight(t *testing.T) {
	ctx := t.Context()
	t.Run("Session", func(t *testing.T) {
		st := testStore(t)
		slow := stall(st)
		s := testInstance(t, slow, time.Hour, time.Hour)
		alice := testUser(t, st, "alice")
		p, err := s.Start(ctx, alice)
		if err != nil {
			t.Fatal(err)
		}
		first := make(chan error, 1)
		go func() {
			_, err := s.Verify(ctx, p.AccessToken)
			first <- err
		}()
		<-slow.read
		if err := s.End(ctx, "alice", p.Session); err != nil {
			t.Fatal(err)
		}
		close(slow.release)
		if err := <-first; err != nil {
			t.Fatalf("the request in flight got %v, want its session standing as it read it", err)
		}
		if _, err := s.Verify(ctx, p.AccessToken); !errors.Is(err, ErrUnauthenticated) {
			t.Fatalf("Verify after End = %v, want ErrUnauthenticated", err)
		}
	})
	t.Run("APIKey", func(t *testing.T) {
		st := testStore(t)
		testUser(t, st, "alice")
		key := testBot(t, st, "helper", "alice")
		slow := stall(st)
		s := testInstance(t, slow, time.Hour, time.Hour)
		first := make(chan error, 1)
		go func() {
			_, _, err := callerOf(t, s, key)
			first <- err
		}()
		<-slow.read
		_, fresh, err := NewBotKey()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.SetBotKey(ctx, "alice", "helper", fresh); err != nil {
			t.Fatal(err)
		}
		s.RevokeKey("helper", hashBotKey(key))
		close(slow.release)
		if err := <-first; err != nil {
			t.Fatalf("the request in flight got %v, want the key standing as it read it", err)
		}
		if _, _, err := callerOf(t, s, key); !errors.Is(err, ErrUnauthenticated) {
			t.Fatalf("Authenticate(revoked key) = %v, want ErrUnauthenticated", err)
		}
	})
}
