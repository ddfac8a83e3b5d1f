package resolvers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/transport"

	"github.com/killrchat/chatql/auth"
	"github.com/killrchat/chatql/chat"
	"github.com/killrchat/chatql/graph"
	"github.com/killrchat/chatql/store"
	"github.com/killrchat/chatql/store/embedded"
)

// countingStore counts the reads of reactions, threads and blocks.
type countingStore struct {
	store.Store
	reads, threadReads, blockReads atomic.Int64
}

func (c *countingStore) BlockedUsers(ctx context.Context, login string) ([]store.UserRef, error) {
	c.blockReads.Add(1)
	return c.Store.BlockedUsers(ctx, login)
}

func (c *countingStore) Blocks(ctx context.Context, login, other string) (bool, error) {
	c.blockReads.Add(1)
	return c.Store.Blocks(ctx, login, other)
}

func (c *countingStore) Reactions(ctx context.Context, msgs []store.Message, viewer string) (map[store.MessageID][]store.Reaction, error) {
	c.reads.Add(1)
	return c.Store.Reactions(ctx, msgs, viewer)
}

func (c *countingStore) ThreadSummaries(ctx context.Context, roots []store.Message) (map[store.MessageID]store.Thread, error) {
	c.threadReads.Add(1)
	return c.Store.ThreadSummaries(ctx, roots)
}

// TestPagePrefetchReadsOnce reads a page of 50 messages with their
// reactions, threads and authorBlocked through the GraphQL executor over
// the embedded store: one read of each for the page, with the loader, even
// as the executor resolves the 50 authorBlocked at once; one per message
// without it, which shows the count is the executor's.
func TestPagePrefetchReadsOnce(t *testing.T) {
	ctx := t.Context()
	db, err := embedded.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	alice := store.UserRef{Login: "alice", Firstname: "A", Lastname: "L"}
	bob := store.UserRef{Login: "bob", Firstname: "B", Lastname: "L"}
	for _, u := range []store.UserRef{alice, bob} {
		if err := db.CreateUser(ctx, store.Account{User: store.User{UserRef: u}}); err != nil {
			t.Fatal(err)
		}
	}
	room := store.Room{Name: "tea-party", Creator: alice, CreatedAt: time.Now().Add(-time.Hour)}
	if err := db.CreateRoom(ctx, room); err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		m := store.Message{Room: room.Name, ID: store.NewMessageID(), Author: alice, Content: fmt.Sprint("message ", i)}
		if err := db.PostMessage(ctx, m); err != nil {
			t.Fatal(err)
		}
		if _, err := db.React(ctx, m, bob, "👍", true); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			if _, err := db.React(ctx, m, alice, "👍", true); err != nil {
				t.Fatal(err)
			}
		}
		if i%3 == 0 {
			reply := store.Message{Room: room.Name, ID: store.NewMessageID(), Author: bob, Content: "a reply", ReplyTo: m.ID}
			if err := db.PostMessage(ctx, reply); err != nil {
				t.Fatal(err)
			}
		}
	}

	counting := &countingStore{Store: db}
	query := `{"query": "{ messages(room: \"tea-party\", first: 50) { edges { node { content replyCount latestRepliers { login } reactions { emoji count reactedByMe } authorBlocked } } } }"}`
	for _, tc := range []struct {
		name                           string
		loader                         bool
		reads, threadReads, blockReads int64
	}{{"loader", true, 1, 1, 1}, {"no loader", false, 50, 100, 50}} { // replyCount and latestRepliers read apart
		t.Run(tc.name, func(t *testing.T) {
			srv := handler.New(graph.NewExecutableSchema(graph.Config{Resolvers: &Resolver{Service: &chat.Service{Store: counting}}}))
			srv.AddTransport(transport.POST{})
			if tc.loader {
				srv.AroundOperations(WithPageLoader)
			}
			counting.reads.Store(0)
			counting.threadReads.Store(0)
			counting.blockReads.Store(0)
			req := httptest.NewRequest("POST", "/", strings.NewReader(query)).WithContext(auth.WithUser(ctx, alice))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			srv.ServeHTTP(rec, req)
			var out struct {
				Data struct {
					Messages struct {
						Edges []struct {
							Node struct {
								Content        string
								ReplyCount     int
								LatestRepliers []struct{ Login string }
								Reactions      []struct {
									Emoji       string
									Count       int
									ReactedByMe *bool
								}
							}
						}
					}
				}
				Errors []any
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || len(out.Errors) > 0 {
				t.Fatalf("response %s: %v", rec.Body, err)
			}
			if got, threads := counting.reads.Load(), counting.threadReads.Load(); got != tc.reads || threads != tc.threadReads {
				t.Errorf("%d reads of reactions and %d of threads for a page of 50, want %d and %d", got, threads, tc.reads, tc.threadReads)
			}
			if got := counting.blockReads.Load(); got != tc.blockReads {
				t.Errorf("%d reads of blocks for a page of 50, want %d", got, tc.blockReads)
			}
			edges := out.Data.Messages.Edges
			if len(edges) != 50 {
				t.Fatalf("%d messages, want 50", len(edges))
			}
			for _, e := range edges {
				if e.Node.Content == "a reply" {
					if len(e.Node.Reactions) != 0 || e.Node.ReplyCount != 0 {
						t.Fatalf("a reply shows %+v", e.Node)
					}
					continue
				}
				var i int
				if _, err := fmt.Sscan(strings.TrimPrefix(e.Node.Content, "message "), &i); err != nil {
					t.Fatal(err)
				}
				if wantReplies := map[bool]int{true: 1}[i%3 == 0]; e.Node.ReplyCount != wantReplies || len(e.Node.LatestRepliers) != wantReplies {
					t.Fatalf("thread of %q: %d replies by %+v, want %d by bob", e.Node.Content, e.Node.ReplyCount, e.Node.LatestRepliers, wantReplies)
				}
				rs := e.Node.Reactions
				wantCount, wantMine := 1, i%2 == 0
				if wantMine {
					wantCount = 2
				}
				if len(rs) != 1 || rs[0].Emoji != "👍" || rs[0].Count != wantCount || rs[0].ReactedByMe == nil || *rs[0].ReactedByMe != wantMine {
					t.Fatalf("reactions of %q = %+v, want 👍 ×%d, mine %v", e.Node.Content, rs, wantCount, wantMine)
				}
			}
		})
	}
}
