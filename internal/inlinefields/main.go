// Command inlinefields rewrites gqlgen's generated executor (graph/
// generated.go) so that the objects whose field resolvers only read memory
// resolve in the calling goroutine, and lists of them are marshalled in
// it, instead of a goroutine per resolver field and per list element.
//
// gqlgen runs every field that has a resolver on a goroutine of its own
// (FieldSet.Concurrently), and every list of objects a goroutine per
// element (MarshalSliceConcurrently), so that resolvers doing I/O overlap.
// A history page of 50 messages with their authors' names thus started
// about 100 goroutines, each growing its stack through the executor's deep
// calls: the profile of the messages closed loop put three quarters of the
// server's CPU there. The message, reaction, user summary and event
// resolvers read the page's prefetched data and the profile cache, never
// the store, so they gain nothing from the goroutines. Objects whose
// resolvers read the store (rooms, users, conversations, the root types)
// keep gqlgen's concurrency.
//
// It also makes the marshaller of a MessageConnection try graph.encodePage
// first, which writes a page of messages without the executor, and lists
// for it the methods gqlgen bound the page's fields to (pageMethods): the
// encoder derives the fields bound to struct fields by reflection, but
// reflection calls a method only through reflect.Call, about 240 ns and an
// allocation a call, so the methods come to it as method expressions.
//
// And it makes a query's data go into a buffer lent by internal/bufpool
// (dataBuffer), which the HTTP transport gives back once it wrote the
// response: a page of history left a buffer of its size to the collector.
//
// It runs after gqlgen in go:generate, and make check-generated checks its
// output like gqlgen's. It fails if it finds nothing to rewrite (and
// nothing rewritten already), so a change of gqlgen's output cannot make it
// a silent no-op.
package main

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// inline lists the GraphQL object types resolved in the calling goroutine.
var inline = []string{
	"Message", "MessageConnection", "MessageEdge", "PageInfo", "Reaction",
	"ReadMark", "RoomEvent", "InboxEvent", "UserPresence", "UserSummary",
	"Attachment", "Thumbnail", "LinkPreview", "Image",
}

// page lists the GraphQL types of a page of messages (MessageConnection).
var page = []string{"MessageConnection", "MessageEdge", "PageInfo", "Message", "Reaction", "UserSummary", "Attachment", "Thumbnail", "LinkPreview", "Image"}

// Go type names of the GraphQL types in gqlgen's marshaller names, where
// they differ.
var goNames = map[string]string{"UserSummary": "UserRef", "Image": "Picture"}

const (
	concurrent = "out.Concurrently(i, func(ctx context.Context) graphql.Marshaler { return innerFunc(ctx, out) })"
	inlined    = "out.Values[i] = innerFunc(ctx, out)"
	sliceCall  = "graphql.MarshalSliceConcurrently("
	sliceInl   = "marshalSliceInline("
	// A page of messages is encoded by graph.encodePage when it can be.
	pageCall  = "\treturn ec._MessageConnection(ctx, sel, v)\n"
	pageTried = "\tif page, ok := ec.encodePage(ctx, sel, v); ok {\n\t\treturn page\n\t}\n" + pageCall
	// A query's data is written in a buffer of the pool.
	queryData = "\t\t\tvar buf bytes.Buffer\n\t\t\tdata.MarshalGQL(&buf)\n\t\t\tresponse.Data = buf.Bytes()\n"
	queryLent = "\t\t\tbuf := dataBuffer()\n\t\t\tdata.MarshalGQL(buf)\n\t\t\tresponse.Data = buf.Bytes()\n"
	// The page's methods go at the end of the file, after this line.
	methodsRegion = "\n// region    ***** the page's methods (internal/inlinefields) *****\n"
)

var (
	// A field's resolver function in gqlgen's executor, and the lines of
	// its resolver closure that call a method: its resolver's, or its Go
	// type's.
	fieldFunc    = regexp.MustCompile(`(?m)^func \(ec \*executionContext\) _(` + strings.Join(page, "|") + `)_(\w+)\(ctx context\.Context, field graphql\.CollectedField, obj \*([\w.]+)\) `)
	resolverCall = regexp.MustCompile(`(?m)^\t\t\treturn ec\.Resolvers\.(\w+)\(\)\.(\w+)\(ctx, obj\)$`)
	methodCall   = regexp.MustCompile(`(?m)^\t\t\treturn obj\.(\w+)\(\), nil$`)
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: inlinefields graph/generated.go")
		os.Exit(2)
	}
	if err := rewrite(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "inlinefields:", err)
		os.Exit(1)
	}
}

func rewrite(path string) error {
	src, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	// Each piece holds one function, at its end, and what precedes it.
	funcs := bytes.SplitAfter(src, []byte("\n}\n"))
	objects := regexp.MustCompile(`(?m)^func \(ec \*executionContext\) _(` + strings.Join(inline, "|") + `)\(ctx `)
	var elems []string
	for _, name := range inline {
		if g, ok := goNames[name]; ok {
			name = g
		}
		elems = append(elems, name)
	}
	lists := regexp.MustCompile(`(?m)^func \(ec \*executionContext\) marshal[NO]\w+2ᚕ\S*ᚐ(` + strings.Join(elems, "|") + `)ᚄ\(ctx `)
	fields, slices := 0, 0
	for i, f := range funcs {
		switch {
		case objects.Match(f):
			fields += bytes.Count(f, []byte(concurrent))
			funcs[i] = bytes.ReplaceAll(f, []byte(concurrent), []byte(inlined))
		case lists.Match(f):
			slices += bytes.Count(f, []byte(sliceCall))
			funcs[i] = bytes.ReplaceAll(f, []byte(sliceCall), []byte(sliceInl))
		}
	}
	if fields+bytes.Count(src, []byte(inlined)) == 0 || slices+bytes.Count(src, []byte(sliceInl)) == 0 {
		return fmt.Errorf("%s: no resolver field or no list to rewrite, nor any rewritten: gqlgen's output changed?", path)
	}
	out := bytes.Join(funcs, nil)
	if i := bytes.Index(out, []byte(methodsRegion)); i >= 0 {
		out = out[:i]
	}
	methods := pageMethods(funcs)
	if methods == "" {
		return fmt.Errorf("%s: no field of the page's types is bound to a method: gqlgen's output changed?", path)
	}
	out = append(out, methodsRegion+methods...)
	if !bytes.Contains(out, []byte(pageTried)) {
		if bytes.Count(out, []byte(pageCall)) != 1 {
			return fmt.Errorf("%s: the marshaller of MessageConnection is not where it was: gqlgen's output changed?", path)
		}
		out = bytes.Replace(out, []byte(pageCall), []byte(pageTried), 1)
	}
	if !bytes.Contains(out, []byte(queryLent)) {
		if bytes.Count(out, []byte(queryData)) != 1 {
			return fmt.Errorf("%s: the query's data is not written where it was: gqlgen's output changed?", path)
		}
		out = bytes.Replace(out, []byte(queryData), []byte(queryLent), 1)
	}
	return os.WriteFile(path, out, 0o644)
}

// pageMethods returns the Go code that sets graph's pageMethods: the fields
// of the page's types that gqlgen resolves by calling a method, in the
// order of generated.go. An init function sets them, so that graph/pages.go
// compiles without them while gqlgen rewrites generated.go.
func pageMethods(funcs [][]byte) string {
	var b strings.Builder
	for _, f := range funcs {
		m := fieldFunc.FindSubmatch(f)
		if m == nil {
			continue
		}
		typ, field, goType := m[1], m[2], m[3]
		if c := resolverCall.FindSubmatch(f); c != nil {
			fmt.Fprintf(&b, "\t\tresolverMethod(%q, %q, ResolverRoot.%s, %sResolver.%s),\n", typ, field, c[1], c[1], c[2])
		} else if c := methodCall.FindSubmatch(f); c != nil {
			fmt.Fprintf(&b, "\t\tmodelMethod(%q, %q, (*%s).%s),\n", typ, field, goType, c[1])
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return "\n// The methods gqlgen's executor calls for fields of the page's types, for\n" +
		"// graph/pages.go.\n" +
		"func init() {\n\tpageMethods = []pageMethod{\n" + b.String() + "\t}\n}\n\n// endregion\n"
}
