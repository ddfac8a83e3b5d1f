package graph

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
)

// marshalSliceInline marshals a list in the calling goroutine: the
// replacement internal/inlinefields puts in generated.go for
// graphql.MarshalSliceConcurrently on lists of objects whose resolvers
// only read memory, where a goroutine per element costs far more than it
// saves. Same arguments; a panic in an element fails the list, as there.
func marshalSliceInline(ctx context.Context, length int, _ int64, omitPanicHandler bool, marshalElement func(ctx context.Context, i int) graphql.Marshaler) graphql.Array {
	ret := make(graphql.Array, length)
	for i := range length {
		childCtx := graphql.WithFieldContext(ctx, &graphql.FieldContext{Index: &i})
		if omitPanicHandler {
			ret[i] = marshalElement(childCtx, i)
			continue
		}
		failed := false
		func() {
			defer func() {
				if r := recover(); r != nil {
					graphql.AddError(childCtx, graphql.Recover(childCtx, r))
					failed = true
				}
			}()
			ret[i] = marshalElement(childCtx, i)
		}()
		if failed {
			return nil
		}
	}
	return ret
}
