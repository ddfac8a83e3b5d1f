package live

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/executor"

	"github.com/killrchat/chatql/auth"
	"github.com/killrchat/chatql/store"
)

// recentResults is how many encoded events an encoder keeps. Subscribers of
// a room receive each live event within milliseconds of each other; a
// subscriber that lags further (or replays history) encodes again.
const recentResults = 256

// encoders shares one encoder among the roomEvents operations that select
// the same fields, so that an event is executed and JSON-encoded once for
// all of them rather than once per subscriber.
type encoders struct {
	// schema returns a schema in which roomEvents serves the events given
	// to feed (Config.FeedSchema).
	schema func() (_ graphql.ExecutableSchema, feed func(*store.Event))
	errors graphql.ErrorPresenterFunc
	// epoch is the epoch of the users' names (nil: they never change).
	epoch func() uint64
	// seesHidden reports whether viewer may read the content of the
	// hidden message m (Config.SeesHiddenContent).
	seesHidden func(m *store.Message, viewer store.UserRef) bool
	// scope names what else of a subscriber's context an encoding depends
	// on (Config.Scope); nil: nothing.
	scope func(ctx context.Context) (string, func(context.Context) context.Context)

	mu    sync.Mutex
	byKey map[string]*encoder
}

// encoder executes one roomEvents selection set over events and keeps the
// recent results. It holds no goroutine: the operation is gqlgen's, run in
// a schema whose roomEvents resolver serves the encoder's feed, fed one
// event at a time.
//
// The result of a selection over an event is the same for every subscriber
// but in two respects: a hidden message's content is shown only to viewers
// Config.SeesHiddenContent allows, and a field the schema marks @viewer
// (reactedByMe, authorBlocked) is each subscriber's own. The viewer's side
// of the first rule is part of the result's key, and the operation runs as
// that viewer when it matters; a selection with a @viewer field is keyed
// and run by viewer, so its subscribers get on every transport what a query
// of theirs would show.
type encoder struct {
	key  string
	refs int // guarded by encoders.mu
	// perViewer: the selection holds a @viewer field.
	perViewer bool

	mu      sync.Mutex
	feed    func(*store.Event)
	next    graphql.ResponseHandler
	ctx     context.Context
	cancel  context.CancelFunc
	results map[resultKey][]byte
	order   [recentResults]resultKey
	oldest  int
	encodes int       // how many events it executed, for tests
	encs    *encoders // its set: epoch and seesHidden

	// latest are the newest results, read without the lock: a room's
	// fan-out encodes its event once, then every other subscriber finds
	// it here, on cores that would otherwise queue on mu. There are a
	// few, for the rooms whose fan-outs run at once.
	latest [latestResults]atomic.Pointer[result]
	newest int // the slot of latest the next result takes; guarded by mu
}

// latestResults is how many of an encoder's newest results are found
// without its lock.
const latestResults = 4

// result is an encoded event and what it shows.
type result struct {
	key   resultKey
	bytes []byte
}

// resultKey identifies what an encoded event shows: the event (its id is
// its cursor) and its message's state, which a replay joins as it is now,
// so a replayed edit of a since-deleted message encodes anew.
type resultKey struct {
	event      store.MessageID
	kind       store.EventKind
	room, user string
	message    store.MessageID
	hidden     bool
	showHidden bool   // the viewer may read the hidden content
	viewer     string // the viewer's login, for a selection of @viewer fields
	editedAt   int64  // Unix milliseconds; 0 if never edited
	deleted    bool
	online     bool // a PRESENCE_CHANGED's state
	// profiles is the epoch of the users' names the encoding shows: a
	// profile change or an account deletion since makes it stale.
	profiles uint64
}

// acquire returns the encoder of the operation's selection set, creating it
// from this operation if it is the first. Release it when done.
func (e *encoders) acquire(ctx context.Context, rc *graphql.OperationContext, field graphql.CollectedField) *encoder {
	key, perViewer := selectionKey(rc, field)
	carry := func(ctx context.Context) context.Context { return ctx }
	if e.scope != nil {
		var scope string
		scope, carry = e.scope(ctx)
		key += "\x00" + scope
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if enc := e.byKey[key]; enc != nil {
		enc.refs++
		return enc
	}
	if e.byKey == nil {
		e.byKey = make(map[string]*encoder)
	}
	enc := e.newEncoder(rc, key, carry)
	enc.refs, enc.perViewer = 1, perViewer
	e.byKey[key] = enc
	return enc
}

func (e *encoders) release(enc *encoder) {
	e.mu.Lock()
	enc.refs--
	last := enc.refs == 0
	if last {
		delete(e.byKey, enc.key)
	}
	e.mu.Unlock()
	if last {
		enc.cancel()
	}
}

func (e *encoders) newEncoder(rc *graphql.OperationContext, key string, carry func(context.Context) context.Context) *encoder {
	schema, feed := e.schema()
	exec := executor.New(schema)
	exec.SetErrorPresenter(e.errors)
	ctx, cancel := context.WithCancel(carry(context.Background()))
	// The operation context of the subscriber that came first serves all:
	// nothing in it but the selection set matters here, and its field
	// cache is safe for concurrent use. It was validated against the
	// server's schema, which the feed's has the shape of.
	next, ctx := exec.DispatchOperation(ctx, rc)
	return &encoder{
		key: key, feed: feed, next: next, ctx: ctx, cancel: cancel,
		results: make(map[resultKey][]byte, recentResults),
		encs:    e,
	}
}

var errEncoderEnded = errors.New("live: the shared operation ended")

// encode returns the JSON result of the selection over ev as viewer sees
// it, executing it only if no subscriber needed it recently. The bytes are
// shared: never modify them.
func (enc *encoder) encode(ev *store.Event, viewer store.UserRef) ([]byte, error) {
	k := resultKey{event: ev.ID, kind: ev.Kind, room: ev.Room, user: ev.User.Login, online: ev.Online}
	if enc.encs.epoch != nil {
		// Read before the execution: a change during it makes the next
		// encoding of the event run again.
		k.profiles = enc.encs.epoch()
	}
	if m := ev.Message; m != nil {
		k.message, k.hidden, k.deleted = m.ID, m.Hidden, m.Deleted
		k.showHidden = m.Hidden && enc.encs.seesHidden(m, viewer)
		if !m.EditedAt.IsZero() {
			k.editedAt = m.EditedAt.UnixMilli()
		}
	}
	if enc.perViewer {
		k.viewer = viewer.Login
	}
	for i := range enc.latest {
		if r := enc.latest[i].Load(); r != nil && r.key == k {
			return r.bytes, nil
		}
	}
	enc.mu.Lock()
	defer enc.mu.Unlock()
	if b, ok := enc.results[k]; ok {
		return b, nil
	}
	ctx := enc.ctx
	if k.showHidden || enc.perViewer {
		ctx = auth.WithUser(ctx, viewer)
	}
	enc.feed(ev) // never blocks
	resp := enc.next(ctx)
	if resp == nil {
		return nil, errEncoderEnded
	}
	b, err := json.Marshal(resp)
	if err != nil {
		return nil, err
	}
	enc.encodes++
	if len(enc.results) == recentResults {
		delete(enc.results, enc.order[enc.oldest])
	}
	enc.results[k] = b
	enc.order[enc.oldest] = k
	enc.oldest = (enc.oldest + 1) % recentResults
	enc.latest[enc.newest].Store(&result{key: k, bytes: b})
	enc.newest = (enc.newest + 1) % latestResults
	return b, nil
}

// selectionKey spells out the fields an operation selects under its root
// field, after fragments and @skip/@include are applied: operations with
// the same key produce the same result for the same event, whatever their
// documents, variables or names. perViewer reports whether it selects a
// field the schema marks @viewer.
func selectionKey(rc *graphql.OperationContext, field graphql.CollectedField) (key string, perViewer bool) {
	var b strings.Builder
	perViewer = writeField(&b, rc, field)
	return b.String(), perViewer
}

// writeField writes f's part of the key and reports whether it or a field
// under it is a @viewer field.
func writeField(b *strings.Builder, rc *graphql.OperationContext, f graphql.CollectedField) (perViewer bool) {
	b.WriteString(f.Alias)
	b.WriteByte(':')
	b.WriteString(f.Name)
	if f.Definition != nil && f.Definition.Directives.ForName(viewerDirective) != nil {
		perViewer = true
	}
	if len(f.Selections) == 0 || f.Definition == nil {
		return perViewer
	}
	b.WriteByte('{')
	for _, child := range graphql.CollectFields(rc, f.Selections, []string{f.Definition.Type.Name()}) {
		if len(child.Arguments) > 0 {
			args, _ := json.Marshal(child.ArgumentMap(rc.Variables))
			b.Write(args)
		}
		if writeField(b, rc, child) {
			perViewer = true
		}
		b.WriteByte(' ')
	}
	b.WriteByte('}')
	return perViewer
}

// viewerDirective marks the fields whose value depends on who asks.
const viewerDirective = "viewer"
