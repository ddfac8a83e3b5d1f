package graph

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/killrchat/chatql/graph/model"
	"github.com/killrchat/chatql/internal/bufpool"
	"github.com/killrchat/chatql/store"
)

// A page of messages (MessageConnection: messages, thread, directMessages,
// myMessages) is the largest thing the API writes, and gqlgen's executor
// writes it a field at a time: a field context, a resolver closure and a
// marshaller for each of the ~20 fields of each of its 50 messages, which
// cost most of a history read's CPU. encodePage writes the same JSON
// straight from the page, calling the same resolvers; internal/inlinefields
// makes the generated marshaller of a MessageConnection try it first.
// Anything it cannot write (@defer, a field it could not bind) or that
// fails (a resolver's error, a null where the schema allows none, a panic)
// leaves the page to the executor, which then reports it as it always did:
// so the two can differ in speed only. TestPagesEncodeAsTheExecutor checks
// that they write the same bytes.
//
// No field is listed here: pageTypes derives, once, how to write each
// field of the page's types from the schema and gqlgen's binding. A field
// gqlgen resolves with a method (its resolver's, or its Go type's) calls it
// through pageMethods, which internal/inlinefields writes into
// generated.go; any other is the struct field gqlgen binds by name, read at
// its offset. The value is written by its Go type (leafWriters) or, for an
// object, by the object's own fields. TestPageFieldsAreBound fails, by
// name, for a field of the page that this leaves out.

// useExecutorForPages makes every page go through gqlgen's executor, and
// pagesEncoded counts the pages encodePage wrote: for tests that compare
// the two.
var (
	useExecutorForPages atomic.Bool
	pagesEncoded        atomic.Uint64
)

// UseExecutorForPages makes every page of messages go through gqlgen's
// executor (true), or lets encodePage write those it can (false, the
// default), and returns how many pages encodePage wrote so far: for tests.
func UseExecutorForPages(executor bool) (encoded uint64) {
	useExecutorForPages.Store(executor)
	return pagesEncoded.Load()
}

// pageField is a field of a selection set: the JSON key it is written
// under, quoted and followed by a colon, and how to write its value.
type pageField struct {
	key   []byte
	write writeField
	sub   []pageField // an object's fields
}

// writeField writes the value of a field of the object at obj.
type writeField func(e *pageEncoder, obj unsafe.Pointer, f *pageField)

// pageType is an object type of the page: how to write each of its fields.
type pageType struct {
	name         string
	implementors []string // for graphql.CollectFields
	goType       reflect.Type
	fields       map[string]typeField
	// summary: a user summary (store.UserRef), written once per page for
	// a user and a selection (pageEncoder.user).
	summary bool
	// unbound are the fields it could not bind, and why: a page that
	// selects one goes to the executor, and TestPageFieldsAreBound fails.
	unbound map[string]error
}

type typeField struct {
	write writeField
	child *pageType // the object type of the value; nil for a leaf
}

// planPage collects the fields of sel on an object of type typ, as the
// executor would (fragments, aliases, @skip and @include); ok is false if
// one is unbound or deferred.
func (ec *executionContext) planPage(typ *pageType, sel ast.SelectionSet) (fields []pageField, ok bool) {
	collected := graphql.CollectFields(ec.OperationContext, sel, typ.implementors)
	written := make(map[string]bool, len(collected))
	for _, f := range collected {
		tf, known := typ.fields[f.Name]
		if !known || f.IsDeferred() || len(f.Deferrables) > 0 {
			return nil, false
		}
		if written[f.Alias] { // as the executor's field set writes a key once
			continue
		}
		written[f.Alias] = true
		pf := pageField{key: append(appendQuoted(nil, f.Alias), ':'), write: tf.write}
		if tf.child != nil {
			if pf.sub, ok = ec.planPage(tf.child, f.Selections); !ok {
				return nil, false
			}
		}
		fields = append(fields, pf)
	}
	return fields, true
}

// pagePlan is planPage's plan of sel, kept in pagePlans if sel holds no
// directive nor argument (fixedSelections) and at most planKeySize
// selections: then the plan depends on sel's selections alone, and a
// client that asks for the same page again sends the same document, which
// gqlgen's query cache parses once, so its selections are the same nodes
// (the slice sel is gqlgen's copy). A document evicted from that cache
// stays alive while a plan keeps it: 256 at most.
func (ec *executionContext) pagePlan(typ *pageType, sel ast.SelectionSet) ([]pageField, bool) {
	if len(sel) > planKeySize {
		return ec.planPage(typ, sel)
	}
	key := planKey{typ: typ}
	copy(key.sel[:], sel)
	if p, found := pagePlans.m.Load(key); found {
		plan := p.(*plannedPage)
		return plan.fields, plan.ok
	}
	fields, ok := ec.planPage(typ, sel)
	if fixedSelections(sel, 0) {
		if pagePlans.n.Add(1) > maxPagePlans {
			pagePlans.m.Clear()
			pagePlans.n.Store(1)
		}
		pagePlans.m.Store(key, &plannedPage{fields, ok})
	}
	return fields, ok
}

// pagePlans are the plans of the page's selection sets seen lately, at
// most maxPagePlans (n counts those stored since the last Clear). A plan
// keeps its selection set's document alive, as the query cache does.
var pagePlans struct {
	m sync.Map // planKey to *plannedPage
	n atomic.Int64
}

const maxPagePlans = 256

// planKey is a page's type and its selections: the parsed document's
// nodes, compared by identity (each is a pointer).
type planKey struct {
	typ *pageType
	sel [planKeySize]ast.Selection
}

const planKeySize = 4

// plannedPage is what planPage returned: never changed once stored.
type plannedPage struct {
	fields []pageField
	ok     bool
}

// fixedSelections reports whether no selection of sel, nor of its
// fragments, has a directive (@skip, @include, @defer) or an argument,
// either of which may be a variable: without any, collecting sel's fields
// depends on sel alone. depth bounds the fragments followed (the validator
// refuses cycles; this does not rely on it).
func fixedSelections(sel ast.SelectionSet, depth int) bool {
	if depth > 32 {
		return false
	}
	for _, s := range sel {
		switch s := s.(type) {
		case *ast.Field:
			if len(s.Directives) > 0 || len(s.Arguments) > 0 || !fixedSelections(s.SelectionSet, depth+1) {
				return false
			}
		case *ast.InlineFragment:
			if len(s.Directives) > 0 || !fixedSelections(s.SelectionSet, depth+1) {
				return false
			}
		case *ast.FragmentSpread:
			if len(s.Directives) > 0 || s.Definition == nil || len(s.Definition.Directives) > 0 ||
				!fixedSelections(s.Definition.SelectionSet, depth+1) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// encodePage returns the page encoded for the selection set sel, or false
// if the executor must do it.
func (ec *executionContext) encodePage(ctx context.Context, sel ast.SelectionSet, v *model.MessageConnection) (_ graphql.Marshaler, ok bool) {
	if useExecutorForPages.Load() || v == nil {
		return nil, false
	}
	page := pageTypes()
	fields, ok := ec.pagePlan(page.root, sel)
	if !ok {
		return nil, false
	}
	defer func() {
		if recover() != nil {
			ok = false // the executor runs it again and reports the panic
		}
	}()
	buf := bufpool.Get()
	e := pageEncoder{ctx: ctx, b: *buf, resolvers: make([]any, len(page.resolvers))}
	for i, resolver := range page.resolvers {
		e.resolvers[i] = resolver(ec.Resolvers)
	}
	defer func() {
		if !ok {
			*buf = e.b
			bufpool.Put(buf)
		}
	}()
	e.object(page.root, unsafe.Pointer(v), fields)
	if e.failed {
		return nil, false
	}
	pagesEncoded.Add(1)
	*buf = e.b
	return &encodedPage{b: buf}, true
}

// dataBuffer is the buffer a query's data is written in
// (internal/inlinefields puts it in gqlgen's executor): the HTTP transport
// gives it back to the pool once the response is written.
func dataBuffer() *bytes.Buffer { return bufpool.GetBuffer() }

// encodedPage is a page encoded already, whose buffer goes back to the
// pool once it is written: gqlgen writes a field's value once.
type encodedPage struct{ b *[]byte }

func (p *encodedPage) MarshalGQL(w io.Writer) {
	if p.b == nil { // written before: its buffer may hold another page by now
		_, _ = w.Write([]byte("null"))
		return
	}
	_, _ = w.Write(*p.b)
	bufpool.Put(p.b)
	p.b = nil
}

// pageEncoder appends a page's JSON to b; failed means the executor must
// encode it instead.
type pageEncoder struct {
	ctx context.Context
	// resolvers are the page's types' resolvers, by slot (see
	// resolverMethod), taken once: each call of ResolverRoot's methods
	// allocates one.
	resolvers []any
	b         []byte
	failed    bool
	// users are where in b the first maxUsersKept user summaries were
	// written, by the user as stored and the fields selected: a page's
	// authors are few, and each summary costs three lookups of the profile
	// cache. A few are found sooner in a list than by hashing three names.
	users []writtenUser
}

// maxUsersKept bounds pageEncoder.users: the summaries of a page with more
// authors are written again, each as the first was.
const maxUsersKept = 16

type writtenUser struct {
	u      store.UserRef
	fields *pageField
	at     [2]int
}

// object writes the object of type t at p: each field's key and value.
func (e *pageEncoder) object(t *pageType, p unsafe.Pointer, fields []pageField) {
	if t.summary {
		e.user(p, fields)
		return
	}
	e.fields(p, fields)
}

func (e *pageEncoder) fields(p unsafe.Pointer, fields []pageField) {
	e.b = append(e.b, '{')
	for i := range fields {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		f := &fields[i]
		e.b = append(e.b, f.key...)
		f.write(e, p, f)
	}
	e.b = append(e.b, '}')
}

// user writes a user summary; the same user with the same fields again,
// as it was written the first time (the resolvers' answer depends on
// nothing else).
func (e *pageEncoder) user(p unsafe.Pointer, fields []pageField) {
	u := (*store.UserRef)(p)
	var selected *pageField
	if len(fields) > 0 {
		selected = &fields[0]
	}
	for i := range e.users {
		if w := &e.users[i]; w.u == *u && w.fields == selected {
			e.b = append(e.b, e.b[w.at[0]:w.at[1]]...)
			return
		}
	}
	start := len(e.b)
	e.fields(p, fields)
	if !e.failed && len(e.users) < maxUsersKept {
		e.users = append(e.users, writtenUser{*u, selected, [2]int{start, len(e.b)}})
	}
}

// objectValue is how a Go value holds objects: in itself (a struct), by a
// pointer, or in a slice of structs.
type objectValue struct {
	child    *pageType
	kind     reflect.Kind // reflect.Struct, reflect.Pointer or reflect.Slice
	elemSize uintptr      // of a slice's element
	nonNull  bool
}

// write writes the value at p, of a field whose selection is f.
func (o *objectValue) write(e *pageEncoder, p unsafe.Pointer, f *pageField) {
	switch o.kind {
	case reflect.Struct:
		e.object(o.child, p, f.sub)
	case reflect.Pointer:
		o.writePointer(e, *(*unsafe.Pointer)(p), f)
	case reflect.Slice:
		o.writeSlice(e, *(*sliceHeader)(p), f)
	}
}

func (o *objectValue) writePointer(e *pageEncoder, obj unsafe.Pointer, f *pageField) {
	if obj == nil {
		e.null(o.nonNull)
		return
	}
	e.object(o.child, obj, f.sub)
}

func (o *objectValue) writeSlice(e *pageEncoder, s sliceHeader, f *pageField) {
	if s.data == nil {
		e.null(o.nonNull)
		return
	}
	e.b = append(e.b, '[')
	for i := range s.len {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		e.object(o.child, unsafe.Add(s.data, uintptr(i)*o.elemSize), f.sub)
	}
	e.b = append(e.b, ']')
}

// sliceHeader is how a slice is laid out.
type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

// null writes a null, which only a nullable field may be.
func (e *pageEncoder) null(nonNull bool) {
	e.failed = e.failed || nonNull
	e.b = append(e.b, "null"...)
}

// leafWriter writes a value of Go type T, of a field of one of the GraphQL
// scalars (or a list of them) given; it reports a null it wrote.
type leafWriter[T any] struct {
	scalars []string
	list    bool
	write   func(e *pageEncoder, v T) (null bool)
}

// leaf is a leafWriter of any type.
type leaf interface {
	fits(t *ast.Type) bool
	// atOffset is the writer of a struct field at offset off.
	atOffset(off uintptr, nonNull bool) writeField
}

func (w leafWriter[T]) fits(t *ast.Type) bool {
	for _, s := range w.scalars {
		if t.Name() == s && (t.Elem != nil) == w.list {
			return true
		}
	}
	return false
}

func (w leafWriter[T]) atOffset(off uintptr, nonNull bool) writeField {
	write := w.write
	return func(e *pageEncoder, obj unsafe.Pointer, _ *pageField) {
		if write(e, *(*T)(unsafe.Add(obj, off))) && nonNull {
			e.failed = true
		}
	}
}

// leafWriters write the Go types the page's scalar fields have, as
// gqlgen's marshallers of their scalars do.
var leafWriters = map[reflect.Type]leaf{
	reflect.TypeFor[string]():          leafWriter[string]{[]string{"String", "ID"}, false, writeString},
	reflect.TypeFor[*string]():         leafWriter[*string]{[]string{"String", "ID"}, false, writePointer(writeString)},
	reflect.TypeFor[bool]():            leafWriter[bool]{[]string{"Boolean"}, false, writeBool},
	reflect.TypeFor[*bool]():           leafWriter[*bool]{[]string{"Boolean"}, false, writePointer(writeBool)},
	reflect.TypeFor[int]():             leafWriter[int]{[]string{"Int"}, false, writeInt},
	reflect.TypeFor[*int]():            leafWriter[*int]{[]string{"Int"}, false, writePointer(writeInt)},
	reflect.TypeFor[int64]():           leafWriter[int64]{[]string{"Int"}, false, writeInt64},
	reflect.TypeFor[time.Time]():       leafWriter[time.Time]{[]string{"Time"}, false, writeTime},
	reflect.TypeFor[*time.Time]():      leafWriter[*time.Time]{[]string{"Time"}, false, writePointer(writeTime)},
	reflect.TypeFor[store.MessageID](): leafWriter[store.MessageID]{[]string{"ID"}, false, writeMessageID},
	reflect.TypeFor[[]string](): leafWriter[[]string]{[]string{"String", "ID"}, true, func(e *pageEncoder, v []string) bool {
		if v == nil {
			e.b = append(e.b, "null"...)
			return true
		}
		e.b = append(e.b, '[')
		for i, s := range v {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.b = appendQuoted(e.b, s)
		}
		e.b = append(e.b, ']')
		return false
	}},
}

func writeString(e *pageEncoder, s string) bool { e.b = appendQuoted(e.b, s); return false }

func writeBool(e *pageEncoder, v bool) bool { e.b = strconv.AppendBool(e.b, v); return false }

func writeInt(e *pageEncoder, n int) bool { e.b = strconv.AppendInt(e.b, int64(n), 10); return false }

func writeInt64(e *pageEncoder, n int64) bool { e.b = strconv.AppendInt(e.b, n, 10); return false }

// writeMessageID writes id as its MarshalGQL does: its hex digits and
// dashes need no escape.
func writeMessageID(e *pageEncoder, id store.MessageID) bool {
	e.b = append(id.Append(append(e.b, '"')), '"')
	return false
}

// writeTime writes t as graphql.MarshalTime does: the zero time is null.
func writeTime(e *pageEncoder, t time.Time) bool {
	if t.IsZero() {
		e.b = append(e.b, "null"...)
		return true
	}
	e.b = append(e.b, '"')
	e.b = t.AppendFormat(e.b, time.RFC3339Nano)
	e.b = append(e.b, '"')
	return false
}

// writePointer writes a pointer's value with write, or null.
func writePointer[T any](write func(*pageEncoder, T) bool) func(*pageEncoder, *T) bool {
	return func(e *pageEncoder, v *T) bool {
		if v == nil {
			e.b = append(e.b, "null"...)
			return true
		}
		return write(e, *v)
	}
}

// valueWriter is how to write the value of a field: by a leafWriter of
// its Go type, or as objects.
type valueWriter struct {
	leaf    leaf
	objects *objectValue
	nonNull bool
}

// pageMethods are the fields of the page's types that gqlgen resolves by
// calling a method, set by generated.go: internal/inlinefields lists them.
var pageMethods []pageMethod

// pageMethod is a field of the page's types that gqlgen resolves by calling
// a method.
type pageMethod struct {
	typ, field   string
	obj, result  reflect.Type
	resolverRoot func(ResolverRoot) any // a resolver method's resolver
	// writer returns the field's writer, with the type's resolver in
	// resolver slot slot.
	writer func(slot int, w valueWriter) (writeField, error)
}

// resolverMethod is a field resolved by method m of its type's resolver.
func resolverMethod[R, O, T any](typ, field string, root func(ResolverRoot) R, m func(R, context.Context, *O) (T, error)) pageMethod {
	return pageMethod{typ: typ, field: field, obj: reflect.TypeFor[O](), result: reflect.TypeFor[T](),
		// A pointer to the resolver: asserting an any to an interface
		// type parameter looks its itab up at each call.
		resolverRoot: func(r ResolverRoot) any { resolver := root(r); return &resolver },
		writer: func(slot int, w valueWriter) (writeField, error) {
			return writeResult(w, func(e *pageEncoder, obj unsafe.Pointer) (T, error) {
				return m(*e.resolvers[slot].(*R), e.ctx, (*O)(obj))
			})
		}}
}

// modelMethod is a field resolved by method m of its Go type.
func modelMethod[O, T any](typ, field string, m func(*O) T) pageMethod {
	return pageMethod{typ: typ, field: field, obj: reflect.TypeFor[O](), result: reflect.TypeFor[T](),
		writer: func(_ int, w valueWriter) (writeField, error) {
			return writeResult(w, func(_ *pageEncoder, obj unsafe.Pointer) (T, error) { return m((*O)(obj)), nil })
		}}
}

// writeResult returns the writer of a field whose value get returns.
func writeResult[T any](w valueWriter, get func(e *pageEncoder, obj unsafe.Pointer) (T, error)) (writeField, error) {
	// The objects are read out of v, which a call through a func value
	// would move to the heap.
	switch objects := w.objects; {
	case objects == nil:
		write, nonNull := w.leaf.(leafWriter[T]).write, w.nonNull
		return func(e *pageEncoder, obj unsafe.Pointer, _ *pageField) {
			v, err := get(e, obj)
			if null := write(e, v); err != nil || null && nonNull {
				e.failed = true
			}
		}, nil
	case objects.kind == reflect.Pointer:
		return func(e *pageEncoder, obj unsafe.Pointer, f *pageField) {
			v, err := get(e, obj)
			e.failed = e.failed || err != nil
			objects.writePointer(e, *(*unsafe.Pointer)(unsafe.Pointer(&v)), f)
		}, nil
	case objects.kind == reflect.Slice:
		return func(e *pageEncoder, obj unsafe.Pointer, f *pageField) {
			v, err := get(e, obj)
			e.failed = e.failed || err != nil
			objects.writeSlice(e, *(*sliceHeader)(unsafe.Pointer(&v)), f)
		}, nil
	}
	return nil, fmt.Errorf("a method returns a %s by value", w.objects.child.goType)
}

// page is the page's types, derived from the schema and gqlgen's binding.
type page struct {
	root  *pageType
	types map[string]*pageType
	// resolvers take each resolver the page calls from the ResolverRoot.
	resolvers []func(ResolverRoot) any
}

// executorFields are the fields of the page's types that encodePage leaves
// to the executor, by design: a page that selects one goes to it whole.
// Message.chatRoom is a Room, whose list fields take arguments and read
// the caller's rights: a page's messages share one room, which clients
// read once (room(name:)) rather than on each message.
var executorFields = map[string]bool{"Message.chatRoom": true}

// pageTypes derives, once, the page's types from MessageConnection, bound
// to model.MessageConnection (encodePage's value).
var pageTypes = sync.OnceValue(func() *page {
	b := pageBuilder{page: &page{types: map[string]*pageType{}}, methods: map[string]map[string]pageMethod{}, slots: map[string]int{}}
	for _, m := range pageMethods {
		if b.methods[m.typ] == nil {
			b.methods[m.typ] = map[string]pageMethod{}
		}
		b.methods[m.typ][m.field] = m
	}
	b.root = b.object("MessageConnection", reflect.TypeFor[model.MessageConnection]())
	return b.page
})

type pageBuilder struct {
	*page
	methods map[string]map[string]pageMethod // by type and field
	slots   map[string]int                   // of the types' resolvers, by type
}

// object returns the object type name, bound to goType, with its fields.
func (b *pageBuilder) object(name string, goType reflect.Type) *pageType {
	if t, ok := b.types[name]; ok {
		return t
	}
	t := &pageType{name: name, implementors: []string{name}, goType: goType, fields: map[string]typeField{},
		summary: goType == reflect.TypeFor[store.UserRef](), unbound: map[string]error{}}
	b.types[name] = t
	typename := appendQuoted(nil, name)
	t.fields["__typename"] = typeField{write: func(e *pageEncoder, _ unsafe.Pointer, _ *pageField) { e.b = append(e.b, typename...) }}
	for _, def := range parsedSchema.Types[name].Fields {
		if strings.HasPrefix(def.Name, "__") {
			continue
		}
		if executorFields[name+"."+def.Name] {
			t.unbound[def.Name] = errors.New("left to the executor (executorFields)")
			continue
		}
		f, err := b.field(t, def)
		if err != nil {
			t.unbound[def.Name] = err
			continue
		}
		t.fields[def.Name] = f
	}
	return t
}

// field binds the field def of t as gqlgen does: to the method gqlgen
// calls for it, or else to a struct field.
func (b *pageBuilder) field(t *pageType, def *ast.FieldDefinition) (typeField, error) {
	var (
		valueType reflect.Type
		offset    uintptr
	)
	m, isMethod := b.methods[t.name][def.Name]
	if isMethod {
		if m.obj != t.goType {
			return typeField{}, fmt.Errorf("its method is of %s, not %s", m.obj, t.goType)
		}
		valueType = m.result
	} else if sf, ok := boundField(t.goType, def.Name); ok {
		valueType, offset = sf.Type, sf.Offset
	} else {
		return typeField{}, fmt.Errorf("%s has no field %q, and gqlgen calls no method for it (a method with arguments?)", t.goType, def.Name)
	}
	w := valueWriter{nonNull: def.Type.NonNull}
	var child *pageType
	if parsedSchema.Types[def.Type.Name()].Kind == ast.Object {
		kind, elem, err := objectsOf(valueType, def.Type)
		if err != nil {
			return typeField{}, err
		}
		if child = b.object(def.Type.Name(), elem); child.goType != elem {
			return typeField{}, fmt.Errorf("%s is bound to %s here and to %s elsewhere", child.name, elem, child.goType)
		}
		w.objects = &objectValue{child: child, kind: kind, elemSize: elem.Size(), nonNull: w.nonNull}
	} else if w.leaf = leafWriters[valueType]; w.leaf == nil || !w.leaf.fits(def.Type) {
		return typeField{}, fmt.Errorf("no writer of a Go %s for a GraphQL %s", valueType, def.Type)
	}
	switch {
	case isMethod:
		slot, taken := b.slots[t.name]
		if m.resolverRoot != nil && !taken {
			slot = len(b.resolvers)
			b.slots[t.name] = slot
			b.resolvers = append(b.resolvers, m.resolverRoot)
		}
		write, err := m.writer(slot, w)
		return typeField{write: write, child: child}, err
	case w.objects != nil:
		objects := w.objects
		return typeField{write: func(e *pageEncoder, obj unsafe.Pointer, f *pageField) {
			objects.write(e, unsafe.Add(obj, offset), f)
		}, child: child}, nil
	default:
		return typeField{write: w.leaf.atOffset(offset, w.nonNull)}, nil
	}
}

// boundField returns the struct field gqlgen binds the GraphQL field name
// to: the exported field whose name is the same but for case and
// underscores (gqlgen.yml sets no struct tag to bind by).
func boundField(goType reflect.Type, name string) (reflect.StructField, bool) {
	var found []reflect.StructField
	for _, f := range reflect.VisibleFields(goType) {
		if f.IsExported() && !f.Anonymous && strings.EqualFold(strings.ReplaceAll(f.Name, "_", ""), strings.ReplaceAll(name, "_", "")) {
			found = append(found, f)
		}
	}
	if len(found) != 1 || len(found[0].Index) != 1 {
		return reflect.StructField{}, false // none, ambiguous, or promoted (its offset is not in goType)
	}
	return found[0], true
}

// objectsOf returns how a Go value of type v holds the objects, of Go
// type elem, of a field of GraphQL type t: as a struct, a pointer to one,
// or a slice of structs for a list.
func objectsOf(v reflect.Type, t *ast.Type) (kind reflect.Kind, elem reflect.Type, err error) {
	switch kind = v.Kind(); {
	case t.Elem != nil && kind == reflect.Slice && v.Elem().Kind() == reflect.Struct,
		t.Elem == nil && kind == reflect.Pointer && v.Elem().Kind() == reflect.Struct:
		return kind, v.Elem(), nil
	case t.Elem == nil && kind == reflect.Struct:
		return kind, v, nil
	}
	return kind, nil, fmt.Errorf("no writer of a Go %s for a GraphQL %s", v, t)
}

// appendQuoted appends s as a JSON string, escaped as gqlgen's
// graphql.MarshalString escapes it: quotes, backslashes and control
// characters; everything else (invalid UTF-8 included) as is.
func appendQuoted(b []byte, s string) []byte {
	const hex = "0123456789ABCDEF"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '\\' && c != '"' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '\t':
			b = append(b, `\t`...)
		case '\r':
			b = append(b, `\r`...)
		case '\n':
			b = append(b, `\n`...)
		case '\\':
			b = append(b, `\\`...)
		case '"':
			b = append(b, `\"`...)
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
