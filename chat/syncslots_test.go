package chat

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/killrchat/chatql/broker"
	"github.com/killrchat/chatql/store"
	"github.com/killrchat/chatql/store/embedded"
	"github.com/killrchat/chatql/stream"
)

// TestSyncsPerUserAreCapped: a user has at most MaxSyncsPerUser syncs open
// on an instance, each following every room of theirs with a subscription;
// one more, or a changes poll, is refused with BAD_USER_INPUT, another
// user is not, and a sync that ends, or fails to open, gives its place
// back. Racing opens never pass the cap.
func TestSyncsPerUserAreCapped(t *testing.T) {
	db, err := embedded.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	b := broker.NewLocal(64)
	t.Cleanup(func() { b.Close() })
	const max = 3
	s := &Service{Store: db, Broker: b, Streams: &stream.Source{Store: db, Broker: b}, Log: slog.Default(), MaxSyncsPerUser: max}
	ctx := t.Context()
	alice := store.UserRef{Login: "alice", Firstname: "Alice"}
	bob := store.UserRef{Login: "bob", Firstname: "Bob"}
	for _, u := range []store.UserRef{alice, bob} {
		if err := db.CreateUser(ctx, store.Account{User: store.User{UserRef: u}, PassHash: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 4 {
		if _, err := s.CreateRoom(ctx, alice, fmt.Sprintf("room-%d", i), store.PublicRoom, "a room"); err != nil {
			t.Fatal(err)
		}
	}

	// run opens a sync of u and runs it until its end is called, or the
	// test's (ctx's) end.
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait) // after ctx ends, before the broker and the store close
	run := func(u store.UserRef) (end func(), err error) {
		sy, err := s.OpenSync(ctx, u, "")
		if err != nil {
			return nil, err
		}
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		wg.Go(func() {
			defer close(done)
			if err := sy.Run(runCtx, func(SyncPage) bool { return true }); err != nil {
				t.Errorf("sync: %v", err)
			}
		})
		return func() { cancel(); <-done }, nil
	}
	wantRefused := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "too many syncs") {
			t.Fatalf("%s = %v, want the cap's ErrInvalid", what, err)
		}
	}

	var ends []func()
	subscribers := b.Stats().Subscribers
	for i := range max {
		end, err := run(alice)
		if err != nil {
			t.Fatalf("sync %d: %v", i, err)
		}
		ends = append(ends, end)
	}
	if got := b.Stats().Subscribers - subscribers; got != max*5 {
		t.Fatalf("%d syncs hold %d subscriptions, want %d (4 rooms and the inbox each)", max, got, max*5)
	}
	_, err = run(alice)
	wantRefused("a sync over the cap", err)
	_, err = s.Changes(ctx, alice, "", SyncPageSize)
	wantRefused("a changes poll over the cap", err)
	endBob, err := run(bob)
	if err != nil {
		t.Fatalf("another user's sync: %v", err)
	}
	endBob()

	ends[0]()
	if _, err := s.OpenSync(ctx, alice, "not a cursor"); err == nil || strings.Contains(err.Error(), "too many syncs") {
		t.Fatalf("a sync from a bad cursor = %v, want its own refusal", err)
	}
	if _, err := s.Changes(ctx, alice, "", SyncPageSize); err != nil {
		t.Fatalf("a changes poll after a sync ended: %v", err)
	}
	if ends[0], err = run(alice); err != nil {
		t.Fatalf("a sync after one ended: %v", err)
	}
	for _, end := range ends {
		end()
	}
	if n := s.syncs.held(alice.Login); n != 0 {
		t.Fatalf("%d syncs held once all ended", n)
	}

	// Racing opens.
	const racers = 10
	results := make([]func(), racers)
	errs := make([]error, racers)
	var race sync.WaitGroup
	for i := range racers {
		race.Go(func() { results[i], errs[i] = run(alice) })
	}
	race.Wait()
	opened := 0
	for i, err := range errs {
		switch {
		case err == nil:
			opened++
			defer results[i]()
		default:
			wantRefused("a racing sync", err)
		}
	}
	if opened != max {
		t.Fatalf("%d of %d racing syncs opened, want %d", opened, racers, max)
	}
}
