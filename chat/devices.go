package chat

import (
	"context"
	"errors"
	"fmt"

	"github.com/killrchat/chatql/ratelimit"
	"github.com/killrchat/chatql/store"
)

// Devices are me's live sessions, the most recently seen first.
func (s *Service) Devices(ctx context.Context, me store.UserRef) ([]store.Session, error) {
	return s.Store.UserSessions(ctx, me.Login)
}

// EndSession ends one of me's sessions, as logout ends the caller's own:
// its tokens stop working, at once on this instance (its websockets and
// streams close) and within the session check interval on the others.
// A session that is not me's, or no longer stands, is NOT_FOUND.
func (s *Service) EndSession(ctx context.Context, me store.UserRef, id string) error {
	if err := s.limit(ctx, ratelimit.Account, me); err != nil {
		return err
	}
	_, err := s.Store.Session(ctx, me.Login, id)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("no session %q of yours stands: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return err
	}
	return s.Sessions.End(ctx, me.Login, id)
}
