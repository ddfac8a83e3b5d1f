package resolvers

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
)

// publishWait bounds how long an operation's answer waits for its events
// to leave the instance (Broker.Flush): a broker slower than that delays
// live delivery, not the answer, and its subscribers still get the events.
const publishWait = time.Second

type publishedKey struct{}

// AwaitPublished holds an operation's answer until the live events it
// published have left this instance for every instance's subscribers
// (Broker.Flush, within publishWait), so that a change acknowledged is
// delivered live even if this instance dies the moment it answers: its
// events could otherwise die with it in the broker's outbox, and a
// subscriber on another instance, which saw no gap, would never catch up
// on them. Only mutations publish: queries and subscription events (the
// history pages, every delivery) pass straight through, and a mutation
// that published nothing answers at once. A wait that ends unfinished is
// logged at debug level only: the broker logs the outage behind it once.
// Install it with the handler's AroundResponses.
func (r *Resolver) AwaitPublished(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	if op := graphql.GetOperationContext(ctx).Operation; op == nil || op.Operation != ast.Mutation {
		return next(ctx)
	}
	var published atomic.Bool
	resp := next(context.WithValue(ctx, publishedKey{}, &published))
	if published.Load() {
		wait, cancel := context.WithTimeout(context.WithoutCancel(ctx), publishWait)
		defer cancel()
		if err := r.Broker.Flush(wait); err != nil {
			r.Log.DebugContext(ctx, "the mutation's live events have not left the instance yet; answering anyway", "err", err)
		}
	}
	return resp
}

// markPublished records that the operation of ctx published an event.
func markPublished(ctx context.Context) {
	if p, ok := ctx.Value(publishedKey{}).(*atomic.Bool); ok {
		p.Store(true)
	}
}
