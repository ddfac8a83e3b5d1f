package storetest

import (
	"sync"
	"testing"

	"github.com/killrchat/chatql/store"
)

// testClaimClientMessage: the first claim of a name is claimed; another
// claim of it returns the first's message and records nothing; the names
// of another author are their own.
func testClaimClientMessage(t *testing.T, s store.Store) {
	ctx := newContext(t)
	alice, bob := newLogin(t, "alice"), newLogin(t, "bob")
	first := store.ClientMessage{Room: newRoomName(t, "room"), ID: store.NewMessageID()}
	claim := func(author string, m store.ClientMessage, wantClaimed bool, wantPrior store.ClientMessage) {
		t.Helper()
		prior, claimed, err := s.ClaimClientMessage(ctx, author, "tx-1", m)
		if err != nil || claimed != wantClaimed || prior != wantPrior {
			t.Errorf("ClaimClientMessage(%s, tx-1, %v) = %v, %v, %v; want %v, %v, nil", author, m, prior, claimed, err, wantPrior, wantClaimed)
		}
	}
	claim(alice, first, true, store.ClientMessage{})
	retry := store.ClientMessage{Room: "elsewhere", ID: store.NewMessageID()}
	claim(alice, retry, false, first)
	claim(alice, retry, false, first) // the retry recorded nothing
	claim(bob, retry, true, store.ClientMessage{})
}

// testClaimClientMessageConcurrent: of 16 racing claims of one name, with
// 16 different messages, exactly one is claimed, and every other returns
// that one's message.
func testClaimClientMessageConcurrent(t *testing.T, s store.Store) {
	ctx := newContext(t)
	author := newLogin(t, "racer")
	room := newRoomName(t, "room")
	const n = 16
	type result struct {
		mine, prior store.ClientMessage
		claimed     bool
	}
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			mine := store.ClientMessage{Room: room, ID: store.NewMessageID()}
			prior, claimed, err := s.ClaimClientMessage(ctx, author, "offline-queue-7", mine)
			if err != nil {
				t.Errorf("ClaimClientMessage = %v", err)
			}
			results[i] = result{mine, prior, claimed}
		})
	}
	wg.Wait()
	var winners []store.ClientMessage
	for _, r := range results {
		if r.claimed {
			winners = append(winners, r.mine)
		}
	}
	if len(winners) != 1 {
		t.Fatalf("%d of %d racing claims were claimed, want 1", len(winners), n)
	}
	for _, r := range results {
		if !r.claimed && r.prior != winners[0] {
			t.Errorf("a losing claim returned %v, want the winner's %v", r.prior, winners[0])
		}
	}
}
