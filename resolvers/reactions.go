package resolvers

import (
	"context"
	"sync"

	"github.com/99designs/gqlgen/graphql"

	"github.com/killrchat/chatql/auth"
	"github.com/killrchat/chatql/ratelimit"
	"github.com/killrchat/chatql/store"
)

// A reactionLoader holds the reactions an operation's pages prefetched,
// so that Message.reactions reads the store once per page, not once per
// message.
type reactionLoader struct {
	mu   sync.Mutex
	byID map[store.MessageID][]store.Reaction // nil entries: loaded, none
}

type loaderKey struct{}

// WithReactionLoader gives each operation its reactionLoader: install it
// with the handler's AroundOperations.
func WithReactionLoader(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	return next(context.WithValue(ctx, loaderKey{}, &reactionLoader{byID: map[store.MessageID][]store.Reaction{}}))
}

// viewerOf is the caller's login, or "" without one (a subscription
// event's shared encoding).
func viewerOf(ctx context.Context) string {
	if me, err := auth.UserFrom(ctx); err == nil {
		return me.Login
	}
	return ""
}

// prefetchReactions reads the reactions of a page's messages in one store
// call when the operation selects them on the page's nodes.
func (r *Resolver) prefetchReactions(ctx context.Context, msgs []store.Message) error {
	l, _ := ctx.Value(loaderKey{}).(*reactionLoader)
	if l == nil || len(msgs) == 0 || !selectsNodeReactions(ctx) {
		return nil
	}
	got, err := r.Store.Reactions(ctx, msgs, viewerOf(ctx))
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range msgs {
		l.byID[m.ID] = got[m.ID]
	}
	return nil
}

// selectsNodeReactions reports whether the connection field being resolved
// selects edges { node { reactions } }.
func selectsNodeReactions(ctx context.Context) bool {
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
				if f.Name == "reactions" {
					return true
				}
			}
		}
	}
	return false
}

// reactionsOf returns m's reactions for the caller: prefetched with its
// page, or read alone.
func (r *Resolver) reactionsOf(ctx context.Context, m *store.Message) ([]store.Reaction, error) {
	if l, _ := ctx.Value(loaderKey{}).(*reactionLoader); l != nil {
		l.mu.Lock()
		reactions, ok := l.byID[m.ID]
		l.mu.Unlock()
		if ok {
			return nonNilReactions(reactions), nil
		}
	}
	got, err := r.Store.Reactions(ctx, []store.Message{*m}, viewerOf(ctx))
	if err != nil {
		return nil, err
	}
	return nonNilReactions(got[m.ID]), nil
}

func nonNilReactions(rs []store.Reaction) []store.Reaction {
	if rs == nil {
		return []store.Reaction{}
	}
	return rs
}

// react adds or removes the caller's reaction to the message id.
func (r *Resolver) react(ctx context.Context, id, emoji string, add bool) (*store.Message, error) {
	me, err := r.limitedUser(ctx, ratelimit.Post)
	if err != nil {
		return nil, err
	}
	if err := store.ValidateEmoji(emoji); err != nil {
		return nil, err
	}
	msg, err := r.readableMessage(ctx, id, me)
	if err != nil {
		return nil, err
	}
	ev, err := r.Store.React(ctx, msg, me, emoji, add)
	if err != nil {
		return nil, err
	}
	r.publishChange(ctx, ev)
	return &msg, nil
}
