package resolvers

import (
	"context"
	"sync"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/killrchat/chatql/auth"
	"github.com/killrchat/chatql/store"
)

// A pageLoader holds what an operation's pages of messages prefetched for
// their nodes, so that Message.reactions and the thread fields read the
// store once per page, not once per message. A message absent from a map
// was not prefetched: its field reads it alone.
type pageLoader struct {
	mu        sync.Mutex
	reactions map[store.MessageID][]store.Reaction // nil entries: none
	threads   map[store.MessageID]store.Thread     // zero entries: none

	// The caller's blocked users, read once per query or mutation when
	// first needed, however many resolvers ask at once; nil for a
	// subscription, which lives long and reads what it needs row by row,
	// each time.
	blocked *onceSet

	// The rooms the operation's messages and room events show
	// (Message.chatRoom, RoomEvent.chatRoom), by name, read once each;
	// never kept for a subscription (live), whose events show each room
	// as it is then (a ROOM_SETTINGS_CHANGED's new banner).
	rooms map[string]*onceRoom
	live  bool
}

// onceSet is a set read once, when first needed.
type onceSet struct {
	once sync.Once
	set  map[string]bool
	err  error
}

// get returns the set, reading it with read the first time.
func (o *onceSet) get(read func() ([]string, error)) (map[string]bool, error) {
	o.once.Do(func() {
		var list []string
		if list, o.err = read(); o.err == nil {
			o.set = make(map[string]bool, len(list))
			for _, item := range list {
				o.set[item] = true
			}
		}
	})
	return o.set, o.err
}

type loaderKey struct{}

// WithPageLoader gives each operation its pageLoader: install it with the
// handler's AroundOperations.
func WithPageLoader(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	l := &pageLoader{reactions: map[store.MessageID][]store.Reaction{}, threads: map[store.MessageID]store.Thread{}}
	if op := graphql.GetOperationContext(ctx).Operation; op != nil && op.Operation != ast.Subscription {
		l.blocked = &onceSet{}
	} else {
		l.live = true
	}
	return next(context.WithValue(ctx, loaderKey{}, l))
}

func loaderOf(ctx context.Context) *pageLoader {
	l, _ := ctx.Value(loaderKey{}).(*pageLoader)
	return l
}

// viewerOf is the caller's login, or "" without one (a subscription
// event's shared encoding).
func viewerOf(ctx context.Context) string {
	if me, err := auth.UserFrom(ctx); err == nil {
		return me.Login
	}
	return ""
}

// prefetch reads, for a page's messages, the reactions and the threads the
// operation selects on the page's nodes: one store call each.
func (r *Resolver) prefetch(ctx context.Context, msgs []store.Message) error {
	l := loaderOf(ctx)
	if l == nil || len(msgs) == 0 {
		return nil
	}
	selected := selectedOnNodes(ctx)
	if r.Profiles != nil && selected.authorNames {
		logins := make([]string, 0, len(msgs))
		for _, m := range msgs {
			logins = append(logins, m.Author.Login)
		}
		r.Profiles.Warm(ctx, logins)
	}
	if selected.reactions {
		got, err := r.Service.Reactions(ctx, viewerOf(ctx), msgs)
		if err != nil {
			return err
		}
		l.mu.Lock()
		for _, m := range msgs {
			l.reactions[m.ID] = got[m.ID]
		}
		l.mu.Unlock()
	}
	if selected.threads {
		got, err := r.threadSummaries(ctx, msgs)
		if err != nil {
			return err
		}
		l.mu.Lock()
		for _, m := range msgs {
			l.threads[m.ID] = got[m.ID]
		}
		l.mu.Unlock()
	}
	return nil
}

// nodeSelections is what the nodes of a page select that prefetch reads
// for the whole page at once.
type nodeSelections struct {
	reactions bool
	threads   bool // replyCount or latestRepliers
	// authorNames: a profile field of the authors (firstname, lastname,
	// deleted).
	authorNames bool
}

// selectedOnNodes returns what the connection being resolved selects in
// edges { node { ... } }, collected once.
func selectedOnNodes(ctx context.Context) (s nodeSelections) {
	oc := graphql.GetOperationContext(ctx)
	for _, edges := range graphql.CollectFieldsCtx(ctx, nil) {
		if edges.Name != "edges" {
			continue
		}
		for _, node := range graphql.CollectFields(oc, edges.Selections, nil) {
			if node.Name != "node" {
				continue
			}
			for _, f := range graphql.CollectFields(oc, node.Selections, nil) {
				switch f.Name {
				case "reactions":
					s.reactions = true
				case "replyCount", "latestRepliers":
					s.threads = true
				case "author":
					s.authorNames = s.authorNames || namesSelected(graphql.CollectFields(oc, f.Selections, nil))
				}
			}
		}
	}
	return s
}

// reactionsOf returns m's reactions for the caller: prefetched with its
// page, or read alone.
func (r *Resolver) reactionsOf(ctx context.Context, m *store.Message) ([]store.Reaction, error) {
	if l := loaderOf(ctx); l != nil {
		l.mu.Lock()
		reactions, ok := l.reactions[m.ID]
		l.mu.Unlock()
		if ok {
			return nonNil(reactions), nil
		}
	}
	got, err := r.Service.Reactions(ctx, viewerOf(ctx), []store.Message{*m})
	if err != nil {
		return nil, err
	}
	return nonNil(got[m.ID]), nil
}

// threadOf returns m's thread: prefetched with its page, or read alone.
func (r *Resolver) threadOf(ctx context.Context, m *store.Message) (store.Thread, error) {
	if l := loaderOf(ctx); l != nil {
		l.mu.Lock()
		t, ok := l.threads[m.ID]
		l.mu.Unlock()
		if ok {
			return t, nil
		}
	}
	got, err := r.threadSummaries(ctx, []store.Message{*m})
	if err != nil {
		return store.Thread{}, err
	}
	return got[m.ID], nil
}

// threadSummaries are the threads of msgs as the caller sees them; a
// subscription's shared encoding, which has no caller, shows them as
// stored (its subscribers are the room's members).
func (r *Resolver) threadSummaries(ctx context.Context, msgs []store.Message) (map[store.MessageID]store.Thread, error) {
	me, err := auth.UserFrom(ctx)
	if err != nil {
		return r.Service.EventThreads(ctx, msgs)
	}
	return r.Service.Threads(ctx, me, msgs)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
