package graph

import (
	"bytes"
	"context"
	"strconv"
	"testing"

	"github.com/99designs/gqlgen/graphql"
)

func TestMarshalSliceInline(t *testing.T) {
	ctx := graphql.WithResponseContext(context.Background(), graphql.DefaultErrorPresenter, graphql.DefaultRecover)
	var indices []int
	list := marshalSliceInline(ctx, 3, 0, false, func(ctx context.Context, i int) graphql.Marshaler {
		indices = append(indices, *graphql.GetFieldContext(ctx).Index)
		return graphql.MarshalString(strconv.Itoa(i))
	})
	var out bytes.Buffer
	list.MarshalGQL(&out)
	if out.String() != `["0","1","2"]` || len(indices) != 3 || indices[0] != 0 || indices[2] != 2 {
		t.Fatalf("marshalled %s with field indices %v", out.String(), indices)
	}
	// A panic of an element fails the list with an error, not the server.
	list = marshalSliceInline(ctx, 3, 0, false, func(ctx context.Context, i int) graphql.Marshaler {
		if i == 1 {
			panic("boom")
		}
		return graphql.MarshalString("x")
	})
	if list != nil || len(graphql.GetErrors(ctx)) != 1 {
		t.Fatalf("a panicking element gave %v and errors %v", list, graphql.GetErrors(ctx))
	}
}
