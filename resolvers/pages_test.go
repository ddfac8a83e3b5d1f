package resolvers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/killrchat/chatql/auth"
	"github.com/killrchat/chatql/chat"
	"github.com/killrchat/chatql/graph"
	"github.com/killrchat/chatql/store"
	"github.com/killrchat/chatql/store/embedded"
)

// TestPagesEncodeAsTheExecutor: pages of messages in every state (hidden,
// edited, deleted, replies and threads, mentions, reactions, a blocked
// author, a renamed author, system messages, content that needs escaping)
// come out of graph's page encoder byte for byte as gqlgen's executor
// writes them, for selection sets with aliases, fragments, __typename,
// @skip and @include; and the encoder did write them.
func TestPagesEncodeAsTheExecutor(t *testing.T) {
	ctx := t.Context()
	db, err := embedded.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	alice := store.UserRef{Login: "alice", Firstname: "Alice", Lastname: "Liddell"}
	bob := store.UserRef{Login: "bob", Firstname: "Bob", Lastname: "Builder"}
	carol := store.UserRef{Login: "carol", Firstname: "Carol", Lastname: `"Quoted" \ Name`}
	for _, u := range []store.UserRef{alice, bob, carol} {
		if err := db.CreateUser(ctx, store.Account{User: store.User{UserRef: u}}); err != nil {
			t.Fatal(err)
		}
	}
	room := store.Room{Name: "tea-party", Creator: alice, CreatedAt: time.Now().Add(-time.Hour)}
	if err := db.CreateRoom(ctx, room); err != nil {
		t.Fatal(err)
	}
	for _, u := range []store.UserRef{bob, carol} {
		if _, _, err := db.JoinRoom(ctx, room.Name, u); err != nil {
			t.Fatal(err)
		}
	}
	contents := []string{"plain", `"quotes" and \backslashes\`, "tab\tnew\nline\rreturn", "\x00\x01\x1f controls", "é 👍 中文 </script>&", "\xff\xfe invalid UTF-8", "hi @carol and @bob", ""}
	var posted []store.Message
	for i := range 30 {
		author := []store.UserRef{alice, bob, carol}[i%3]
		m := store.Message{Room: room.Name, ID: store.NewMessageID(), Author: author, Content: contents[i%len(contents)]}
		if i%7 == 3 {
			m.ReplyTo = posted[i-2].ID
		}
		if err := db.PostMessage(ctx, m); err != nil {
			t.Fatal(err)
		}
		posted = append(posted, m)
		if i%2 == 0 {
			if _, err := db.React(ctx, m, bob, "👍", true); err != nil {
				t.Fatal(err)
			}
		}
		if i%4 == 0 {
			if _, err := db.React(ctx, m, alice, "🎉", true); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i, change := range []func(store.Message) error{
		func(m store.Message) error { _, err := db.HideMessage(ctx, m, alice); return err },
		func(m store.Message) error {
			_, err := db.EditMessage(ctx, m, m.Author, "edited: \"now\"", time.Now())
			return err
		},
		func(m store.Message) error { _, err := db.DeleteMessage(ctx, m, m.Author); return err },
	} {
		for j := i + 5; j < len(posted); j += 6 {
			if err := change(posted[j]); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := db.Block(ctx, "alice", bob); err != nil {
		t.Fatal(err)
	}
	renamed := "Robert"
	if _, err := db.UpdateProfile(ctx, "bob", store.ProfileUpdate{Firstname: &renamed}); err != nil {
		t.Fatal(err)
	}

	r := &Resolver{Service: &chat.Service{Store: db, Log: slog.Default(), Profiles: chat.NewProfiles(db, slog.Default(), 0, 0)}}
	srv := handler.New(graph.NewExecutableSchema(graph.Config{Resolvers: r}))
	srv.AddTransport(transport.POST{})
	srv.AroundOperations(WithPageLoader)
	// As the server's: a document sent again is the same parsed nodes,
	// whose page plans graph keeps.
	srv.SetQueryCache(lru.New[*ast.QueryDocument](100))
	post := func(query string, vars map[string]any) []byte {
		t.Helper()
		body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest("POST", "/", bytes.NewReader(body)).WithContext(auth.WithUser(ctx, alice))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		return rec.Body.Bytes()
	}

	// Every field of a Message, read from the schema: a field added to
	// Message that the page encoder does not write sends the page to the
	// executor, and the check that the encoder wrote it fails.
	everything := allFields(graph.NewExecutableSchema(graph.Config{}).Schema(), "Message")
	threadRoot := posted[1].ID.String()
	const skipAndInclude = `query($yes: Boolean!, $no: Boolean!) { messages(room: "tea-party", first: 5) { edges { node { id content @include(if: $yes) hidden @skip(if: $yes) author @include(if: $no) { login } } } pageInfo @skip(if: $no) { endCursor } } }`
	for _, c := range []struct {
		name, query string
		vars        map[string]any
	}{
		{"the web app's page", `query($r: String!, $n: Int) { messages(room: $r, first: $n) { edges { cursor node { ` + everything + ` } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }`,
			map[string]any{"r": room.Name, "n": 50}},
		{"a second page", `query($r: String!, $a: String) { messages(room: $r, first: 10, after: $a) { edges { cursor node { id content } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }`,
			map[string]any{"r": room.Name, "a": posted[20].ID.String()}},
		{"aliases, typenames, repeats", `{ page: messages(room: "tea-party", first: 20) { __typename list: edges { __typename c: cursor node { __typename i: id id content text: content who: author { __typename login name: firstname } reactions { __typename emoji n: count } } } info: pageInfo { __typename more: hasNextPage } } }`, nil},
		{"fragments", `query { messages(room: "tea-party") { ...Page } } fragment Page on MessageConnection { edges { node { ...Msg ... on Message { author { ...Who } } } } } fragment Msg on Message { id content postedAt } fragment Who on UserSummary { login lastname deleted }`, nil},
		{"skip and include", skipAndInclude, map[string]any{"yes": true, "no": false}},
		{"skip and include, the same document with other values", skipAndInclude, map[string]any{"yes": false, "no": true}},
		{"an empty page", `{ messages(room: "tea-party", first: 5, after: "` + posted[0].ID.String() + `") { edges { cursor } pageInfo { hasNextPage startCursor endCursor } } }`, nil},
		{"a thread", `query($id: ID!) { thread(messageId: $id) { edges { node { ` + everything + ` } } pageInfo { hasNextPage endCursor } } }`,
			map[string]any{"id": threadRoot}},
		{"my messages", `{ myMessages(first: 20) { edges { cursor node { id room content mentions } } } }`, nil},
		{"a refusal", `{ messages(room: "no-such-room") { edges { cursor } } }`, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := graph.UseExecutorForPages(true)
			want := post(c.query, c.vars)
			graph.UseExecutorForPages(false)
			// Twice: the second finds the page's plan kept.
			for range 2 {
				if got := post(c.query, c.vars); !bytes.Equal(got, want) {
					t.Fatalf("the page encoder wrote\n%s\nthe executor\n%s", got, want)
				}
			}
			encoded := graph.UseExecutorForPages(false) - before
			if wantEncoded := c.name != "a refusal"; (encoded == 2) != wantEncoded {
				t.Fatalf("the page encoder wrote %d pages of two, want it to write them: %v; response %.300s", encoded, wantEncoded, want)
			}
			if bytes.Contains(want, []byte(`"errors"`)) != (c.name == "a refusal") {
				t.Fatalf("response %s", want)
			}
		})
	}
	if testing.Verbose() {
		fmt.Printf("web app page: %.400s...\n", post(`{ messages(room: "tea-party", first: 3) { edges { node { `+everything+` } } } }`, nil))
	}
}

// allFields selects every field of the object type typ, and of the objects
// under it, skipping fields that need arguments.
func allFields(schema *ast.Schema, typ string) string {
	var b strings.Builder
	for _, f := range schema.Types[typ].Fields {
		// Message.chatRoom sends its page to the executor, by design
		// (graph's executorFields).
		if strings.HasPrefix(f.Name, "__") || typ+"."+f.Name == "Message.chatRoom" || slices.ContainsFunc(f.Arguments, func(a *ast.ArgumentDefinition) bool { return a.Type.NonNull && a.DefaultValue == nil }) {
			continue
		}
		b.WriteString(f.Name)
		if child := schema.Types[f.Type.Name()]; child.Kind == ast.Object {
			b.WriteString(" { " + allFields(schema, child.Name) + " }")
		}
		b.WriteString(" ")
	}
	return b.String()
}
