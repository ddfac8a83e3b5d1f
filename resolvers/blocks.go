package resolvers

import (
	"context"

	"github.com/killrchat/chatql/store"
)

// authorBlocked reports whether the caller blocked m's author: from the
// operation's set of them (one read per query), or in a subscription, one
// row's read; nil in a shared subscription encoding, which has no caller.
func (r *Resolver) authorBlocked(ctx context.Context, m *store.Message) (*bool, error) {
	viewer := viewerOf(ctx)
	if viewer == "" {
		return nil, nil
	}
	var blocked bool
	if l := loaderOf(ctx); l != nil && l.blocked != nil {
		set, err := l.blocked.get(func() ([]string, error) {
			users, err := r.Service.BlockedUsers(ctx, store.UserRef{Login: viewer})
			logins := make([]string, len(users))
			for i, u := range users {
				logins[i] = u.Login
			}
			return logins, err
		})
		if err != nil {
			return nil, err
		}
		blocked = set[m.Author.Login]
	} else {
		var err error
		if blocked, err = r.Service.Blocks(ctx, viewer, m.Author.Login); err != nil {
			return nil, err
		}
	}
	return &blocked, nil
}
