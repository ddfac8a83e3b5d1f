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
	"github.com/killrchat/chatql/graph"
	"github.com/killrchat/chatql/store"
	"github.com/killrchat/chatql/store/embedded"
)

// countingStore counts the reads of reactions.
type countingStore struct {
	store.Store
	reads atomic.Int64
}

func (c *countingStore) Reactions(ctx context.Context, msgs []store.Message, viewer string) (map[store.MessageID][]store.Reaction, error) {
	c.reads.Add(1)
	return c.Store.Reactions(ctx, msgs, viewer)
}

// TestPageReactionsReadOnce reads a page of 50 messages with their
// reactions through the GraphQL executor over the embedded store: one read
// of reactions for the page, with the loader; one per message without it,
// which shows the count is the executor's.
func TestPageReactionsReadOnce(t *testing.T) {
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
	}

	counting := &countingStore{Store: db}
	query := `{"query": "{ messages(room: \"tea-party\", first: 50) { edges { node { content reactions { emoji count reactedByMe } } } } }"}`
	for _, tc := range []struct {
		name   string
		loader bool
		reads  int64
	}{{"loader", true, 1}, {"no loader", false, 50}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := handler.New(graph.NewExecutableSchema(graph.Config{Resolvers: &Resolver{Store: counting}}))
			srv.AddTransport(transport.POST{})
			if tc.loader {
				srv.AroundOperations(WithReactionLoader)
			}
			counting.reads.Store(0)
			req := httptest.NewRequest("POST", "/", strings.NewReader(query)).WithContext(auth.WithUser(ctx, alice))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			srv.ServeHTTP(rec, req)
			var out struct {
				Data struct {
					Messages struct {
						Edges []struct {
							Node struct {
								Content   string
								Reactions []struct {
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
			if got := counting.reads.Load(); got != tc.reads {
				t.Errorf("%d reads of reactions for a page of 50, want %d", got, tc.reads)
			}
			edges := out.Data.Messages.Edges
			if len(edges) != 50 {
				t.Fatalf("%d messages, want 50", len(edges))
			}
			for _, e := range edges {
				var i int
				fmt.Sscan(strings.TrimPrefix(e.Node.Content, "message "), &i)
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
