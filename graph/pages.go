package graph

import (
	"context"
	"io"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/killrchat/chatql/graph/model"
	"github.com/killrchat/chatql/store"
)

// A page of messages (MessageConnection: messages, thread, directMessages)
// is the largest thing the API writes, and gqlgen's executor writes it a
// field at a time: a field context, a resolver closure and a marshaller for
// each of the ~20 fields of each of its 50 messages, which cost most of a
// history read's CPU. encodePage writes the same JSON straight from the
// page, for the selection sets of the fields below, calling the same
// resolvers; internal/inlinefields makes the generated marshaller of a
// MessageConnection try it first. Anything it does not know (a field it
// does not list, @defer) or that fails (a resolver's error, a null where
// the schema allows none, a panic) leaves the page to the executor, which
// then reports it as it always did: so the two can differ in speed only.
// TestPagesEncodeAsTheExecutor checks that they write the same bytes.

// pageFields are the fields encodePage writes, by type: the type of an
// object field's value, "" for a leaf.
var pageFields = map[string]map[string]string{
	"MessageConnection": {"__typename": "", "edges": "MessageEdge", "pageInfo": "PageInfo"},
	"MessageEdge":       {"__typename": "", "cursor": "", "node": "Message"},
	"PageInfo":          {"__typename": "", "hasNextPage": "", "hasPreviousPage": "", "startCursor": "", "endCursor": ""},
	"Message": {"__typename": "", "id": "", "room": "", "author": "UserSummary", "content": "", "system": "",
		"postedAt": "", "hidden": "", "editedAt": "", "deleted": "", "reactions": "Reaction", "mentions": "",
		"authorBlocked": "", "replyToId": "", "replyCount": "", "latestRepliers": "UserSummary"},
	"Reaction":    {"__typename": "", "emoji": "", "count": "", "reactedByMe": ""},
	"UserSummary": {"__typename": "", "login": "", "firstname": "", "lastname": "", "deleted": ""},
}

var pageImplementors = map[string][]string{
	"MessageConnection": messageConnectionImplementors, "MessageEdge": messageEdgeImplementors,
	"PageInfo": pageInfoImplementors, "Message": messageImplementors,
	"Reaction": reactionImplementors, "UserSummary": userSummaryImplementors,
}

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

// pageField is a field of a selection set: its name, and the JSON key it
// is written under, quoted and followed by a colon.
type pageField struct {
	name string
	key  []byte
	sub  []pageField // an object's fields
}

// planPage collects the fields of sel on an object of type typ, as the
// executor would (fragments, aliases, @skip and @include); ok is false if
// one is not in pageFields or is deferred.
func (ec *executionContext) planPage(typ string, sel ast.SelectionSet) (fields []pageField, ok bool) {
	collected := graphql.CollectFields(ec.OperationContext, sel, pageImplementors[typ])
	written := make(map[string]bool, len(collected))
	for _, f := range collected {
		child, known := pageFields[typ][f.Name]
		if !known || f.IsDeferred() || len(f.Deferrables) > 0 {
			return nil, false
		}
		if written[f.Alias] { // as the executor's field set writes a key once
			continue
		}
		written[f.Alias] = true
		pf := pageField{name: f.Name, key: append(appendQuoted(nil, f.Alias), ':')}
		if child != "" {
			if pf.sub, ok = ec.planPage(child, f.Selections); !ok {
				return nil, false
			}
		}
		fields = append(fields, pf)
	}
	return fields, true
}

// encodePage returns the page encoded for the selection set sel, or false
// if the executor must do it.
func (ec *executionContext) encodePage(ctx context.Context, sel ast.SelectionSet, v *model.MessageConnection) (_ graphql.Marshaler, ok bool) {
	if useExecutorForPages.Load() || v == nil {
		return nil, false
	}
	fields, ok := ec.planPage("MessageConnection", sel)
	if !ok {
		return nil, false
	}
	defer func() {
		if recover() != nil {
			ok = false // the executor runs it again and reports the panic
		}
	}()
	e := pageEncoder{ctx: ctx, b: make([]byte, 0, 512+len(v.Edges)*512),
		messageResolver: ec.Resolvers.Message(), summaryResolver: ec.Resolvers.UserSummary(), reactionResolver: ec.Resolvers.Reaction()}
	e.connection(fields, v)
	if e.failed {
		return nil, false
	}
	pagesEncoded.Add(1)
	return rawJSON(e.b), true
}

// rawJSON is a value encoded already.
type rawJSON []byte

func (j rawJSON) MarshalGQL(w io.Writer) { _, _ = w.Write(j) }

// pageEncoder appends a page's JSON to b; failed means the executor must
// encode it instead.
type pageEncoder struct {
	ctx context.Context
	// The resolvers, taken once: each call of ResolverRoot's methods
	// allocates one.
	messageResolver  MessageResolver
	summaryResolver  UserSummaryResolver
	reactionResolver ReactionResolver
	b                []byte
	failed           bool
	// users are where in b each user summary was written, by the user as
	// stored and the fields selected: a page's authors are few, and each
	// summary costs three lookups of the profile cache.
	users map[userKey][2]int
}

type userKey struct {
	u      store.UserRef
	fields *pageField
}

// object writes an object: each field's key, then what value writes for it.
func (e *pageEncoder) object(fields []pageField, value func(f *pageField)) {
	e.b = append(e.b, '{')
	for i := range fields {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		e.b = append(e.b, fields[i].key...)
		value(&fields[i])
	}
	e.b = append(e.b, '}')
}

func (e *pageEncoder) connection(fields []pageField, v *model.MessageConnection) {
	e.object(fields, func(f *pageField) {
		switch f.name {
		case "__typename":
			e.string("MessageConnection")
		case "edges":
			if v.Edges == nil {
				e.failed = true
				return
			}
			e.b = append(e.b, '[')
			for i := range v.Edges {
				if i > 0 {
					e.b = append(e.b, ',')
				}
				e.edge(f.sub, &v.Edges[i])
			}
			e.b = append(e.b, ']')
		case "pageInfo":
			e.pageInfo(f.sub, v.PageInfo)
		}
	})
}

func (e *pageEncoder) edge(fields []pageField, v *model.MessageEdge) {
	e.object(fields, func(f *pageField) {
		switch f.name {
		case "__typename":
			e.string("MessageEdge")
		case "cursor":
			e.string(v.Cursor)
		case "node":
			e.message(f.sub, v.Node)
		}
	})
}

func (e *pageEncoder) pageInfo(fields []pageField, v *model.PageInfo) {
	if v == nil {
		e.failed = true
		return
	}
	e.object(fields, func(f *pageField) {
		switch f.name {
		case "__typename":
			e.string("PageInfo")
		case "hasNextPage":
			e.b = strconv.AppendBool(e.b, v.HasNextPage)
		case "hasPreviousPage":
			e.b = strconv.AppendBool(e.b, v.HasPreviousPage)
		case "startCursor":
			e.optionalString(v.StartCursor)
		case "endCursor":
			e.optionalString(v.EndCursor)
		}
	})
}

func (e *pageEncoder) message(fields []pageField, m *store.Message) {
	if m == nil {
		e.failed = true
		return
	}
	resolve := e.messageResolver
	e.object(fields, func(f *pageField) {
		switch f.name {
		case "__typename":
			e.string("Message")
		case "id":
			e.string(m.ID.String())
		case "room":
			e.string(m.Room)
		case "author":
			e.user(f.sub, m.Author)
		case "content":
			s, err := resolve.Content(e.ctx, m)
			e.failed = e.failed || err != nil
			e.string(s)
		case "system":
			e.b = strconv.AppendBool(e.b, m.System)
		case "postedAt":
			e.time(m.PostedAt(), false)
		case "hidden":
			e.b = strconv.AppendBool(e.b, m.Hidden)
		case "editedAt":
			t, err := resolve.EditedAt(e.ctx, m)
			e.failed = e.failed || err != nil
			if t == nil {
				e.b = append(e.b, "null"...)
			} else {
				e.time(*t, true)
			}
		case "deleted":
			e.b = strconv.AppendBool(e.b, m.Deleted)
		case "reactions":
			reactions, err := resolve.Reactions(e.ctx, m)
			e.failed = e.failed || err != nil || reactions == nil
			e.b = append(e.b, '[')
			for i := range reactions {
				if i > 0 {
					e.b = append(e.b, ',')
				}
				e.reaction(f.sub, &reactions[i])
			}
			e.b = append(e.b, ']')
		case "mentions":
			logins, err := resolve.Mentions(e.ctx, m)
			e.failed = e.failed || err != nil || logins == nil
			e.b = append(e.b, '[')
			for i, login := range logins {
				if i > 0 {
					e.b = append(e.b, ',')
				}
				e.string(login)
			}
			e.b = append(e.b, ']')
		case "authorBlocked":
			blocked, err := resolve.AuthorBlocked(e.ctx, m)
			e.failed = e.failed || err != nil
			e.optionalBool(blocked)
		case "replyToId":
			id, err := resolve.ReplyToID(e.ctx, m)
			e.failed = e.failed || err != nil
			e.optionalString(id)
		case "replyCount":
			n, err := resolve.ReplyCount(e.ctx, m)
			e.failed = e.failed || err != nil
			e.b = strconv.AppendInt(e.b, int64(n), 10)
		case "latestRepliers":
			users, err := resolve.LatestRepliers(e.ctx, m)
			e.failed = e.failed || err != nil || users == nil
			e.b = append(e.b, '[')
			for i := range users {
				if i > 0 {
					e.b = append(e.b, ',')
				}
				e.user(f.sub, users[i])
			}
			e.b = append(e.b, ']')
		}
	})
}

// user writes a UserSummary of a copy of u, as the executor resolves one;
// the same user with the same fields again, as it was written the first
// time (the resolvers' answer depends on nothing else).
func (e *pageEncoder) user(fields []pageField, u store.UserRef) {
	key := userKey{u: u}
	if len(fields) > 0 {
		key.fields = &fields[0]
	}
	if at, ok := e.users[key]; ok {
		e.b = append(e.b, e.b[at[0]:at[1]]...)
		return
	}
	start := len(e.b)
	e.userFields(fields, u)
	if !e.failed {
		if e.users == nil {
			e.users = make(map[userKey][2]int)
		}
		e.users[key] = [2]int{start, len(e.b)}
	}
}

func (e *pageEncoder) userFields(fields []pageField, u store.UserRef) {
	resolve := e.summaryResolver
	e.object(fields, func(f *pageField) {
		switch f.name {
		case "__typename":
			e.string("UserSummary")
		case "login":
			e.string(u.Login)
		case "firstname":
			s, err := resolve.Firstname(e.ctx, &u)
			e.failed = e.failed || err != nil
			e.string(s)
		case "lastname":
			s, err := resolve.Lastname(e.ctx, &u)
			e.failed = e.failed || err != nil
			e.string(s)
		case "deleted":
			deleted, err := resolve.Deleted(e.ctx, &u)
			e.failed = e.failed || err != nil
			e.b = strconv.AppendBool(e.b, deleted)
		}
	})
}

func (e *pageEncoder) reaction(fields []pageField, r *store.Reaction) {
	e.object(fields, func(f *pageField) {
		switch f.name {
		case "__typename":
			e.string("Reaction")
		case "emoji":
			e.string(r.Emoji)
		case "count":
			e.b = strconv.AppendInt(e.b, int64(r.Count), 10)
		case "reactedByMe":
			mine, err := e.reactionResolver.ReactedByMe(e.ctx, r)
			e.failed = e.failed || err != nil
			e.optionalBool(mine)
		}
	})
}

func (e *pageEncoder) string(s string) { e.b = appendQuoted(e.b, s) }

func (e *pageEncoder) optionalString(s *string) {
	if s == nil {
		e.b = append(e.b, "null"...)
		return
	}
	e.string(*s)
}

func (e *pageEncoder) optionalBool(b *bool) {
	if b == nil {
		e.b = append(e.b, "null"...)
		return
	}
	e.b = strconv.AppendBool(e.b, *b)
}

// time writes t as graphql.MarshalTime does; a zero time is null, which
// only a nullable field may be.
func (e *pageEncoder) time(t time.Time, nullable bool) {
	if t.IsZero() {
		e.failed = e.failed || !nullable
		e.b = append(e.b, "null"...)
		return
	}
	e.b = append(e.b, '"')
	e.b = t.AppendFormat(e.b, time.RFC3339Nano)
	e.b = append(e.b, '"')
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
