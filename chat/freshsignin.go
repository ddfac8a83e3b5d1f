package chat

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/killrchat/chatql/auth"
	"github.com/killrchat/chatql/store"
)

// FreshSignIn is how recent a sign-in must be to stand in for a password
// (setPassword, deleteAccount) or a one-time code (regenerating recovery
// codes): the session of the request must have signed in (not refreshed)
// less than this long ago.
const FreshSignIn = 10 * time.Minute

// freshSession returns me's session of the request if it signed in less
// than FreshSignIn ago, with one of methods if any are given, and proved a
// second factor if twoFactor; otherwise FRESH_SIGN_IN_REQUIRED, with why
// in the words of need ("give the password, or ...").
func (s *Service) freshSession(ctx context.Context, me store.UserRef, session, need string, twoFactor bool, methods ...string) (store.Session, error) {
	refuse := fmt.Errorf("%w: %s", auth.ErrFreshSignInRequired, need)
	if session == "" {
		return store.Session{}, refuse
	}
	sess, err := s.Store.Session(ctx, me.Login, session)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return store.Session{}, fmt.Errorf("%w: the session has ended", auth.ErrUnauthenticated)
	case err != nil:
		return store.Session{}, err
	case s.now().Sub(sess.CreatedAt) >= FreshSignIn,
		len(methods) > 0 && !slices.Contains(methods, sess.Method),
		twoFactor && !sess.TwoFactor:
		return store.Session{}, refuse
	}
	return sess, nil
}

// signInWays counts the ways acct has to sign in: its password, its
// passkeys and its linked identities.
func (s *Service) signInWays(ctx context.Context, acct store.Account) (int, error) {
	ways := 0
	if len(acct.PassHash) > 0 {
		ways++
	}
	passkeys, err := s.Store.UserPasskeys(ctx, acct.Login)
	if err != nil {
		return 0, err
	}
	ids, err := s.Store.UserIdentities(ctx, acct.Login)
	if err != nil {
		return 0, err
	}
	return ways + len(passkeys) + len(ids), nil
}

// errLastSignInWay refuses to take away the last way an account has to
// sign in.
var errLastSignInWay = fmt.Errorf("it is the last way to sign in to your account: set a password (setPassword) or register a passkey first: %w", store.ErrConflict)

// myAccount is me's account; UNAUTHENTICATED if it is gone.
func (s *Service) myAccount(ctx context.Context, me store.UserRef) (store.Account, error) {
	acct, err := s.Store.Account(ctx, me.Login)
	if errors.Is(err, store.ErrNotFound) {
		return store.Account{}, fmt.Errorf("%w: the token's user no longer exists", auth.ErrUnauthenticated)
	}
	return acct, err
}

// HasPassword reports whether me's account has a password.
func (s *Service) HasPassword(ctx context.Context, me store.UserRef) (bool, error) {
	acct, err := s.myAccount(ctx, me)
	if err != nil {
		return false, err
	}
	return len(acct.PassHash) > 0, nil
}
