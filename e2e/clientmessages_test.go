package e2e

import (
	"fmt"
	"sync"
	"testing"

	"github.com/killrchat/chatql/internal/chatclient"
	"github.com/killrchat/chatql/server"
	"github.com/killrchat/chatql/store"
)

const (
	postOnce   = `mutation($r: String!, $c: String!, $tx: String) { postMessage(room: $r, content: $c, clientMessageId: $tx) { id content } }`
	directOnce = `mutation($to: String!, $c: String!, $tx: String) { sendDirectMessage(to: $to, content: $c, clientMessageId: $tx) { id content } }`
)

func TestClientMessageIDs(t *testing.T) { forEachStore(t, testClientMessageIDs) }

// testClientMessageIDs: a send retried under its clientMessageId, in
// sequence or racing, returns the first message and stores one; a name is
// the caller's and one conversation's; a malformed one is refused.
func testClientMessageIDs(t *testing.T, cfg server.Config) {
	ts := startServer(t, cfg)
	alice, bob := ts.user(t, "alice"), ts.user(t, "bob")
	mustDo(t, alice, createRoom, map[string]any{"n": "tea-party"}, nil)
	mustDo(t, bob, joinRoom, map[string]any{"r": "tea-party"}, nil)

	type sent struct{ ID, Content string }
	post := func(c *chatclient.Client, tx, content string) sent {
		t.Helper()
		var out struct{ PostMessage sent }
		mustDo(t, c, postOnce, map[string]any{"r": "tea-party", "c": content, "tx": tx}, &out)
		return out.PostMessage
	}
	history := func() []string {
		t.Helper()
		var page messagePage
		mustDo(t, alice, messagesQ, map[string]any{"r": "tea-party", "n": 100}, &page)
		var ids []string
		for _, e := range page.Messages.Edges {
			if !e.Node.System {
				ids = append(ids, e.Node.ID)
			}
		}
		return ids
	}

	t.Run("Retry", func(t *testing.T) {
		first := post(alice, "tx-1", "hello")
		if again := post(alice, "tx-1", "hello"); again != first {
			t.Errorf("retry = %+v, want the first send's %+v", again, first)
		}
		// The same name is bob's own.
		if theirs := post(bob, "tx-1", "hello"); theirs.ID == first.ID {
			t.Errorf("bob's tx-1 returned alice's message %s", first.ID)
		}
		if ids := history(); len(ids) != 2 {
			t.Errorf("history holds %d messages, want 2: %v", len(ids), ids)
		}
	})

	t.Run("RacingRetries", func(t *testing.T) {
		const n = 8
		ids := make([]string, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				var out struct{ PostMessage sent }
				if err := alice.Do(testContext(t), postOnce, map[string]any{"r": "tea-party", "c": "once", "tx": "race-1"}, &out); err != nil {
					t.Errorf("retry %d: %v", i, err)
				}
				ids[i] = out.PostMessage.ID
			})
		}
		wg.Wait()
		for _, id := range ids {
			if id != ids[0] {
				t.Fatalf("racing retries returned different messages: %v", ids)
			}
		}
		count := 0
		for _, id := range history() {
			if id == ids[0] {
				count++
			}
		}
		if got := len(history()); count != 1 || got != 3 {
			t.Errorf("after racing retries the history holds %d messages, %d of them the retried one; want 3, 1", got, count)
		}
	})

	t.Run("Direct", func(t *testing.T) {
		var first, again struct{ SendDirectMessage sent }
		mustDo(t, alice, directOnce, map[string]any{"to": "bob", "c": "psst", "tx": "dm-1"}, &first)
		mustDo(t, alice, directOnce, map[string]any{"to": "bob", "c": "psst", "tx": "dm-1"}, &again)
		if again != first {
			t.Errorf("retried direct message = %+v, want %+v", again, first)
		}
		if e := inbox(t, bob)["alice:bob"]; e.Unread != 1 {
			t.Errorf("bob's inbox after a retried direct message: %d unread, want 1", e.Unread)
		}
		// dm-1 names a direct message: not a post's.
		wantCode(t, alice, "BAD_USER_INPUT", postOnce, map[string]any{"r": "tea-party", "c": "psst", "tx": "dm-1"})
	})

	t.Run("RetryAfterCrash", func(t *testing.T) {
		// The first send stored its claim and its message, and the server
		// died before publishing: bob, following live, saw nothing. The
		// client's retry gets the message and publishes it again.
		mustDo(t, alice, createRoom, map[string]any{"n": "crash-site"}, nil)
		mustDo(t, bob, joinRoom, map[string]any{"r": "crash-site"}, nil)
		sub := ts.subscribe(t, bob, chatclient.GraphQLTransportWS, "crash-site", nil)
		ctx := testContext(t)
		stored := store.Message{Room: "crash-site", ID: store.NewMessageID(), Author: store.UserRef{Login: "alice"}, Content: "posted before the crash"}
		if _, claimed, err := ts.Store().ClaimClientMessage(ctx, "alice", "tx-crash", store.ClientMessage{Room: stored.Room, ID: stored.ID}); err != nil || !claimed {
			t.Fatalf("ClaimClientMessage = %v, %v", claimed, err)
		}
		if err := ts.Store().PostMessage(ctx, stored); err != nil {
			t.Fatal(err)
		}
		var out struct{ PostMessage sent }
		if err := alice.Do(ctx, postOnce, map[string]any{"r": "crash-site", "c": stored.Content, "tx": "tx-crash"}, &out); err != nil || out.PostMessage.ID != stored.ID.String() {
			t.Fatalf("retry = %+v, %v; want the stored message %s", out.PostMessage, err, stored.ID)
		}
		if ev := nextAfterJoins(t, sub); ev.Kind != "MESSAGE_POSTED" || ev.Message == nil || ev.Message.ID != stored.ID.String() {
			t.Fatalf("bob's live event after the retry: %+v; want the stored message %s", ev, stored.ID)
		}
	})

	t.Run("Malformed", func(t *testing.T) {
		before := len(history())
		for _, tx := range []string{"", "has space", fmt.Sprintf("%065d", 0), "naïve"} {
			wantCode(t, alice, "BAD_USER_INPUT", postOnce, map[string]any{"r": "tea-party", "c": "x", "tx": tx})
		}
		if after := len(history()); after != before {
			t.Errorf("refused sends stored %d messages", after-before)
		}
	})
}
