package resolvers

import (
	"context"

	"github.com/99designs/gqlgen/graphql"

	"github.com/killrchat/chatql/chat"
	"github.com/killrchat/chatql/store"
)

// profile is what a UserSummary shows of u: its current profile, or u as
// stored when the resolver has no cache (tests of other layers).
func (r *Resolver) profile(ctx context.Context, u *store.UserRef) chat.Profile {
	if r.Profiles == nil {
		return chat.Profile{UserRef: *u}
	}
	return r.Profiles.Get(ctx, *u)
}

// warmSummaries reads the profiles of a list of UserSummary in one batch,
// if the list's selection shows more than logins: the resolver of a list
// field calls it with the list it returns.
func (r *Resolver) warmSummaries(ctx context.Context, users []store.UserRef) {
	if r.Profiles == nil || len(users) == 0 || !namesSelected(graphql.CollectFieldsCtx(ctx, nil)) {
		return
	}
	logins := make([]string, len(users))
	for i, u := range users {
		logins[i] = u.Login
	}
	r.Profiles.Warm(ctx, logins)
}

// namesSelected reports whether a UserSummary's selection has a field of
// its profile (firstname, lastname, deleted).
func namesSelected(fields []graphql.CollectedField) bool {
	for _, f := range fields {
		if f.Name != "login" && f.Name != "__typename" {
			return true
		}
	}
	return false
}
