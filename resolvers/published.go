package resolvers

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/killrchat/chatql/chat"
)

// AwaitPublished holds an operation's answer until the live events it
// published have left this instance for every instance's subscribers
// (chat.Service.Flush), so that a change acknowledged is delivered live
// even if this instance dies the moment it answers: its events could
// otherwise die with it in the broker's outbox, and a subscriber on
// another instance, which saw no gap, would never catch up on them. Only
// mutations publish: queries and subscription events (the history pages,
// every delivery) pass straight through, and a mutation that published
// nothing answers at once. Install it with the handler's AroundResponses.
func (r *Resolver) AwaitPublished(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	if op := graphql.GetOperationContext(ctx).Operation; op == nil || op.Operation != ast.Mutation {
		return next(ctx)
	}
	ctx, published := chat.WatchPublished(ctx)
	resp := next(ctx)
	if published() {
		r.Service.Flush(ctx)
	}
	return resp
}
