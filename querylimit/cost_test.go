package querylimit_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/complexity"
	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/killrchat/chatql/graph"
	"github.com/killrchat/chatql/querylimit"
)

// TestEveryListFieldDeclaresItsSize walks the schema: a field that returns
// a list declares how many items it costs (@listSize), or is the list a
// connection holds, which every field returning the connection sizes
// (sizedFields). A new list field without a declared size fails here.
func TestEveryListFieldDeclaresItsSize(t *testing.T) {
	schema := graph.NewExecutableSchema(graph.Config{}).Schema()
	costs := querylimit.Costs(schema)
	// sizedBy: for each object type, the lists every field returning it
	// sizes, and whether any field returns it at all.
	returned := map[string]int{}
	sizedBy := map[string]map[string]int{}
	for _, typ := range schema.Types {
		for _, f := range typ.Fields {
			name := f.Type.Name()
			returned[name]++
			for _, list := range costs[typ.Name+"."+f.Name].SizedFields {
				if sizedBy[name] == nil {
					sizedBy[name] = map[string]int{}
				}
				sizedBy[name][list]++
			}
		}
	}
	checked := 0
	for _, typ := range schema.Types {
		if strings.HasPrefix(typ.Name, "__") || typ.Kind != ast.Object {
			continue
		}
		for _, f := range typ.Fields {
			if f.Type.Elem == nil || strings.HasPrefix(f.Name, "__") {
				continue // not a list
			}
			checked++
			fc, ok := costs[typ.Name+"."+f.Name]
			switch {
			case ok && fc.Sized:
				if len(fc.SlicingArguments) == 0 && fc.AssumedSize < 1 {
					t.Errorf("%s.%s: @listSize names no slicing argument and no assumedSize", typ.Name, f.Name)
				}
				for _, arg := range fc.SlicingArguments {
					if f.Arguments.ForName(arg) == nil {
						t.Errorf("%s.%s: slicing argument %q is no argument of the field", typ.Name, f.Name, arg)
					}
				}
			case returned[typ.Name] > 0 && sizedBy[typ.Name][f.Name] == returned[typ.Name]:
				// a connection's edges, sized by every field that returns it
			default:
				t.Errorf("%s.%s returns a list and declares no size: give it @listSize (see querylimit/cost.go)", typ.Name, f.Name)
			}
		}
	}
	if checked < 15 {
		t.Fatalf("checked %d list fields; the walk missed the schema's", checked)
	}
}

// appMessageFields is what a chat app shows of a message: the web app's
// (webapp/static/app.js, messageFields).
const appMessageFields = `id room content system postedAt hidden editedAt deleted replyToId replyCount mentions
  author { login firstname lastname avatar { thumbnails { url } blurhash } } reactions { emoji count reactedByMe }
  attachments { id name contentType size width height blurhash url thumbnails { width height url } }
  preview { url title description siteName imageUrl }`

// appConversationFields is what the web app shows of an inbox entry
// (webapp/static/app.js, conversationFields).
const appConversationFields = `id kind unread mentions muted readUpTo peerOnline peer { login firstname lastname avatar { thumbnails { url } blurhash } }
  lastMessage { id content deleted author { login } }`

// pages is an operation of n aliased pages of 100 messages.
func pages(n int) string {
	var b strings.Builder
	b.WriteString("{ ")
	for i := range n {
		b.WriteString("p" + strings.Repeat("x", i) + `: messages(room: "hall", first: 100) { edges { node { id content author { login } } } } `)
	}
	b.WriteString("}")
	return b.String()
}

// TestDeclaredCosts computes the cost of operations as the complexity
// limit does, from the schema's declarations.
func TestDeclaredCosts(t *testing.T) {
	es := querylimit.Costed(graph.NewExecutableSchema(graph.Config{}))
	cost := func(query string, vars map[string]any) int {
		t.Helper()
		doc, err := gqlparser.LoadQuery(es.Schema(), query)
		if err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		return complexity.Calculate(context.Background(), es, doc.Operations[0], vars, querylimit.Options(es.Schema())...)
	}
	aliases := func(n int, field string) string {
		var b strings.Builder
		b.WriteString(`{ room(name: "hall") { `)
		for i := range n {
			b.WriteString("a")
			b.WriteString(strings.Repeat("x", i%7))
			b.WriteString(strings.Repeat("y", i/7))
			b.WriteString(": ")
			b.WriteString(field)
			b.WriteString(" ")
		}
		b.WriteString("} }")
		return b.String()
	}
	const limit = 2000 // the server's default, CHAT_MAX_COMPLEXITY
	for _, c := range []struct {
		name  string
		query string
		vars  map[string]any
		want  func(int) bool
		says  string
	}{
		{"a page of 100 messages with their authors", `{ messages(room: "hall", first: 100) { edges { cursor node { id content author { login } } } } }`, nil,
			func(n int) bool { return n <= limit && n >= 100*5 }, "within the limit, once per message"},
		// The README's figures (Limits in "Using it from an app").
		{"the README's page of 100 messages", pages(1), nil,
			func(n int) bool { return n == 601 }, "601"},
		{"three such pages", pages(3), nil,
			func(n int) bool { return n == 1803 && n <= limit }, "1,803, within the limit"},
		{"four such pages", pages(4), nil,
			func(n int) bool { return n == 2404 && n > limit }, "2,404, over the limit"},
		{"33 such pages (the attack suite's)", pages(33), nil,
			func(n int) bool { return n > limit }, "over the limit"},
		{"first from a variable", `query($n: Int) { messages(room: "hall", first: $n) { edges { node { id } } } }`, map[string]any{"n": int64(10)},
			func(n int) bool { return n < 50 }, "ten messages' worth"},
		{"readMarks of 1000, twice", aliases(2, "readMarks(first: 1000) { upTo }"), nil,
			func(n int) bool { return n > limit }, "over the limit"},
		{"readMarks of 1000, 200 times (the attack)", aliases(200, "readMarks(first: 1000) { upTo }"), nil,
			func(n int) bool { return n > 100*limit }, "far over the limit"},
		{"online of 1000, twice", aliases(2, "online(first: 1000) { login }"), nil,
			func(n int) bool { return n > limit }, "over the limit"},
		{"online's scan", aliases(30, "online(first: 1) { login }"), nil,
			func(n int) bool { return n > limit/2 }, "its weight: it looks at thousands of participants"},
		{"presence of 100 users", `{ presence(logins: [` + strings.Repeat(`"u", `, 100) + `]) { login online } }`, nil,
			func(n int) bool { return n >= 100*12 && n <= limit }, "ten per user beyond its fields"},
		{"a first too large", `{ messages(room: "hall", first: 100000) { edges { node { id } } } }`, nil,
			func(n int) bool { return n <= limit }, "counted as the most, refused by the resolver as bad input"},
		{"a search of 50 messages with snippets", `{ searchMessages(query: "cafe", first: 50) { edges { cursor node { id content } snippet { text match } } } }`, nil,
			func(n int) bool { return n <= limit && n >= 50+50*3 }, "within the limit, its weight and once per message"},
		{"searches aliased 40 times", `{ ` + searchAliases(40) + ` }`, nil,
			func(n int) bool { return n > limit }, "over the limit: each search weighs 50"},
		// What a frontend shows of each message: the fields of its files,
		// link card and reactions come with the message's row, so they
		// weigh nothing of their own; lists and resolvers do.
		{"a page of 50 messages as a chat app shows them", `{ messages(room: "hall", first: 50) { edges { cursor node { ` + appMessageFields + ` } } pageInfo { hasNextPage endCursor } } }`, nil,
			func(n int) bool { return n <= limit }, "within the limit"},
		{"a page of 50 conversations as the web app shows them (webapp/static/app.js, conversationFields)", `{ conversations(first: 50) { edges { node { ` + appConversationFields + ` } } pageInfo { hasNextPage endCursor } } }`, nil,
			func(n int) bool { return n <= limit }, "within the limit"},
		{"the web app's room", `{ room(name: "hall") { name banner kind creator { login } moderators { login } participants(first: 100) { login } online(first: 100) { login } } }`, nil,
			func(n int) bool { return n <= limit }, "within the limit"},
	} {
		if got := cost(c.query, c.vars); !c.want(got) {
			t.Errorf("%s: cost %d, want %s", c.name, got, c.says)
		}
	}
	if a, b := cost(`{ messages(room: "hall", first: 10) { edges { node { id } } } }`, nil), cost(`{ messages(room: "hall", first: 20) { edges { node { id } } } }`, nil); b <= a {
		t.Errorf("a page of 20 costs %d, of 10 %d: the cost does not follow first", b, a)
	}
	// A page toward newer messages counts its last as a page toward older
	// ones counts its first.
	for _, size := range []int{10, 100} {
		first := cost(fmt.Sprintf(`{ messages(room: "hall", first: %d) { edges { node { id } } } }`, size), nil)
		last := cost(fmt.Sprintf(`{ messages(room: "hall", last: %d, before: "x") { edges { node { id } } } }`, size), nil)
		if first != last {
			t.Errorf("a page of last %d costs %d, of first %d %d", size, last, size, first)
		}
	}
	if !slices.Contains(querylimit.Costs(es.Schema())["Query.messages"].SizedFields, "edges") {
		t.Error("Query.messages does not size its edges")
	}
}

// searchAliases is n aliased searches of one message.
func searchAliases(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "s%d: searchMessages(query: \"cafe\", first: 1) { edges { node { id } } } ", i)
	}
	return b.String()
}
