package graph

import (
	"bytes"
	"context"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql"
	gqlparser "github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/killrchat/chatql/graph/model"
	"github.com/killrchat/chatql/store"
)

// FuzzAppendQuoted: appendQuoted writes every string as gqlgen's
// MarshalString does, byte for byte.
func FuzzAppendQuoted(f *testing.F) {
	for _, s := range []string{"", "plain", `"quoted" \back\slash`, "tab\tline\nreturn\r", "\x00\x01\x1f\x7f", "é 👍 中文", "\xff\xfe invalid", "</script>&"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var want bytes.Buffer
		graphql.MarshalString(s).MarshalGQL(&want)
		if got := appendQuoted([]byte("prefix"), s); !bytes.Equal(got, append([]byte("prefix"), want.Bytes()...)) {
			t.Fatalf("appendQuoted(%q) = %s, want %s", s, got[len("prefix"):], want.Bytes())
		}
	})
}

// BenchmarkEncodePage: the page encoder alone, on a page of 50 messages
// with the web app's selection set and resolvers that only read the
// message, so that what it measures is the encoder's own work.
func BenchmarkEncodePage(b *testing.B) {
	encode := samplePage(b)
	b.ReportAllocs()
	for b.Loop() {
		encode().MarshalGQL(io.Discard) // as the response does: its buffer serves the next page
	}
}

// TestEncodedPageWrittenOnce: a page's buffer goes back to the pool once
// the page is written, so writing it again writes a null, never the bytes
// of a page encoded since in the same buffer.
func TestEncodedPageWrittenOnce(t *testing.T) {
	encode := samplePage(t)
	page := encode()
	var first, again bytes.Buffer
	page.MarshalGQL(&first)
	if !bytes.HasPrefix(first.Bytes(), []byte(`{"edges":[{"cursor":`)) {
		t.Fatalf("the page: %.80s", first.Bytes())
	}
	encode().MarshalGQL(io.Discard)
	page.MarshalGQL(&again)
	if again.String() != "null" {
		t.Fatalf("written again: %.80s, want null", again.Bytes())
	}
}

// samplePage returns a function that encodes a page of 50 messages with
// the web app's selection set, as encodePage does.
func samplePage(t testing.TB) func() graphql.Marshaler {
	query := `{ messages(room: "r", first: 50) { edges { cursor node { id room author { login firstname lastname deleted } content system postedAt hidden editedAt deleted reactions { emoji count reactedByMe } mentions authorBlocked replyToId replyCount latestRepliers { login firstname lastname deleted } } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }`
	doc, errs := gqlparser.LoadQuery(parsedSchema, query)
	if errs != nil {
		t.Fatal(errs)
	}
	op := doc.Operations[0]
	ec := newExecutionContext(&graphql.OperationContext{Doc: doc, Operation: op}, &executableSchema{Resolvers: benchResolvers{}}, nil)
	sel := op.SelectionSet[0].(*ast.Field).SelectionSet
	page := &model.MessageConnection{PageInfo: &model.PageInfo{HasNextPage: true}}
	authors := []store.UserRef{{Login: "alice", Firstname: "Alice", Lastname: "Liddell"}, {Login: "bob", Firstname: "Bob", Lastname: "Builder"}}
	for i := range 50 {
		m := &store.Message{Room: "r", ID: store.NewMessageID(), Author: authors[i%2], Content: "hello, \"world\" " + strconv.Itoa(i)}
		page.Edges = append(page.Edges, model.MessageEdge{Cursor: m.ID.String(), Node: m})
	}
	ctx := context.Background()
	return func() graphql.Marshaler {
		m, ok := ec.encodePage(ctx, sel, page)
		if !ok {
			t.Fatal("the encoder left the page to the executor")
		}
		return m
	}
}

// benchResolvers answer from the message alone; the page's other
// resolvers are never called.
type benchResolvers struct{ ResolverRoot }

func (benchResolvers) Message() MessageResolver         { return benchResolvers{} }
func (benchResolvers) Reaction() ReactionResolver       { return benchResolvers{} }
func (benchResolvers) UserSummary() UserSummaryResolver { return benchResolvers{} }

// The types of attachments and link previews, which the selection leaves
// out: never called.
func (benchResolvers) Attachment() AttachmentResolver   { return nil }
func (benchResolvers) Image() ImageResolver             { return nil }
func (benchResolvers) LinkPreview() LinkPreviewResolver { return nil }

func (benchResolvers) Content(_ context.Context, m *store.Message) (string, error) {
	return m.Content, nil
}
func (benchResolvers) EditedAt(context.Context, *store.Message) (*time.Time, error) { return nil, nil }
func (benchResolvers) Reactions(context.Context, *store.Message) ([]store.Reaction, error) {
	return []store.Reaction{{Emoji: "👍", Count: 2}}, nil
}
func (benchResolvers) Mentions(context.Context, *store.Message) ([]string, error) {
	return []string{}, nil
}
func (benchResolvers) AuthorBlocked(context.Context, *store.Message) (*bool, error) { return nil, nil }
func (benchResolvers) Attachments(context.Context, *store.Message) ([]store.Attachment, error) {
	return []store.Attachment{}, nil
}
func (benchResolvers) ChatRoom(context.Context, *store.Message) (*store.Room, error) { return nil, nil }
func (benchResolvers) ConversationID(_ context.Context, m *store.Message) (string, error) {
	return m.Room, nil
}
func (benchResolvers) ID(_ context.Context, u *store.UserRef) (string, error)     { return u.Login, nil }
func (benchResolvers) ReplyToID(context.Context, *store.Message) (*string, error) { return nil, nil }
func (benchResolvers) ReplyCount(context.Context, *store.Message) (int, error)    { return 0, nil }
func (benchResolvers) LatestRepliers(context.Context, *store.Message) ([]store.UserRef, error) {
	return []store.UserRef{}, nil
}
func (benchResolvers) ReactedByMe(context.Context, *store.Reaction) (*bool, error) { return nil, nil }
func (benchResolvers) Firstname(_ context.Context, u *store.UserRef) (string, error) {
	return u.Firstname, nil
}
func (benchResolvers) Lastname(_ context.Context, u *store.UserRef) (string, error) {
	return u.Lastname, nil
}
func (benchResolvers) FirstName(_ context.Context, u *store.UserRef) (string, error) {
	return u.Firstname, nil
}
func (benchResolvers) LastName(_ context.Context, u *store.UserRef) (string, error) {
	return u.Lastname, nil
}
func (benchResolvers) Deleted(context.Context, *store.UserRef) (bool, error) { return false, nil }
func (benchResolvers) Bot(context.Context, *store.UserRef) (bool, error)     { return false, nil }
func (benchResolvers) Avatar(context.Context, *store.UserRef) (*store.Picture, error) {
	return nil, nil
}

// TestPageFieldsAreBound: every field of every object type of a page of
// messages, read from the schema, has a writer. A field the derivation
// cannot bind (a Go type no writer takes, a resolver with arguments) fails
// here by name, rather than sending every page to the executor; but those
// of executorFields, which do so by design.
func TestPageFieldsAreBound(t *testing.T) {
	page := pageTypes()
	seen := map[string]bool{}
	var walk func(name string)
	walk = func(name string) {
		if seen[name] {
			return
		}
		seen[name] = true
		typ := page.types[name]
		if typ == nil {
			t.Errorf("%s: not derived", name)
			return
		}
		for _, f := range parsedSchema.Types[name].Fields {
			if strings.HasPrefix(f.Name, "__") || executorFields[name+"."+f.Name] {
				continue
			}
			if _, ok := typ.fields[f.Name]; !ok {
				t.Errorf("%s.%s: %v", name, f.Name, typ.unbound[f.Name])
			} else if parsedSchema.Types[f.Type.Name()].Kind == ast.Object {
				walk(f.Type.Name())
			}
		}
	}
	walk("MessageConnection")
}
