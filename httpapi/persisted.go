package httpapi

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/killrchat/chatql/apierror"
)

// PersistedQueries is gqlgen's automatic persisted queries (Apollo's APQ)
// with a code on every error: PERSISTED_QUERY_NOT_FOUND when the hash is
// unknown (the client then sends the query with it), BAD_REQUEST for a
// malformed extension or a hash that does not match the query.
type PersistedQueries struct {
	extension.AutomaticPersistedQuery
}

// MutateOperationParameters implements graphql.OperationParameterMutator.
func (p PersistedQueries) MutateOperationParameters(ctx context.Context, params *graphql.RawParams) *gqlerror.Error {
	err := p.AutomaticPersistedQuery.MutateOperationParameters(ctx, params)
	if err != nil {
		if apierror.CodeOf(err) == "" {
			apierror.Set(err, apierror.BadRequest)
		}
	}
	return err
}
