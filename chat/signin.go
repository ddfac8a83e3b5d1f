package chat

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/killrchat/chatql/auth"
	"github.com/killrchat/chatql/ratelimit"
	"github.com/killrchat/chatql/store"
)

// Signup stores a new account of u with password, counted against the
// client address's signups.
func (s *Service) Signup(ctx context.Context, u store.User, password string) (*store.User, error) {
	if err := s.Limits.Allow(ctx, ratelimit.Signup, ratelimit.AddressFrom(ctx)); err != nil {
		return nil, err
	}
	if err := store.JoinInvalid(u.Validate(), store.ValidatePassword(password)); err != nil {
		return nil, err
	}
	hash, err := s.Passwords.Hash(ctx, password)
	if err != nil {
		return nil, err
	}
	if err := s.Store.CreateUser(ctx, store.Account{User: u, PassHash: hash}); err != nil {
		return nil, err
	}
	s.sendVerification(ctx, store.Account{User: u})
	return &u, nil
}

// Login starts a session of login's if password is theirs, named device
// in their list of devices (empty: after the client's User-Agent). A login
// that does not exist costs the same time as a wrong password, and answers
// the same.
func (s *Service) Login(ctx context.Context, login, password, device string) (auth.Pair, store.User, error) {
	if err := auth.ValidateDeviceName(device); err != nil {
		return auth.Pair{}, store.User{}, err
	}
	if err := s.limitLogin(ctx, login); err != nil {
		return auth.Pair{}, store.User{}, err
	}
	acct, err := s.Store.Account(ctx, login)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return auth.Pair{}, store.User{}, s.Passwords.Check(ctx, nil, password)
	case err != nil:
		return auth.Pair{}, store.User{}, err
	case acct.Bot: // bots authenticate with their API key alone
		return auth.Pair{}, store.User{}, s.Passwords.Check(ctx, nil, password)
	}
	if err := s.Passwords.Check(ctx, acct.PassHash, password); err != nil {
		return auth.Pair{}, store.User{}, err
	}
	switch challenge, err := s.twoFactorChallenge(ctx, acct, auth.SignIn{Method: store.SignInPassword, Device: device}); {
	case err != nil:
		return auth.Pair{}, store.User{}, err
	case challenge != nil:
		return auth.Pair{}, store.User{}, challenge
	}
	pair, err := s.Sessions.StartWith(ctx, acct.UserRef, auth.SignIn{Method: store.SignInPassword, Device: device})
	if err != nil {
		return auth.Pair{}, store.User{}, err
	}
	// A password change that ran since the check above may have ended the
	// user's sessions before this one was stored: read the hash again, and
	// if it changed, the old password no longer logs in.
	// Likewise an account deletion.
	again, err := s.Store.Account(ctx, login)
	if errors.Is(err, store.ErrNotFound) || err == nil && !bytes.Equal(again.PassHash, acct.PassHash) {
		err = fmt.Errorf("%w: wrong login or password", auth.ErrUnauthenticated)
	}
	if err != nil {
		return auth.Pair{}, store.User{}, errors.Join(err, s.Sessions.End(ctx, login, pair.Session))
	}
	return pair, acct.User, nil
}

// ChangePassword replaces me's password if old is it, and ends their other
// sessions than session.
func (s *Service) ChangePassword(ctx context.Context, me store.UserRef, session, old, new string) error {
	if err := store.ValidatePasswordIn("newPassword", new); err != nil {
		return err
	}
	acct, err := s.accountWithPassword(ctx, me.Login, old, "the old password")
	if err != nil {
		return err
	}
	hash, err := s.Passwords.Hash(ctx, new)
	if err != nil {
		return err
	}
	if err := s.Store.ChangePassword(ctx, me.Login, acct.PassHash, hash); err != nil {
		return err
	}
	return s.Sessions.EndOthers(ctx, me.Login, session)
}

// AccountProof is what the caller gives deleteAccount to prove the
// account is theirs: its password, or a one-time code (or recovery code)
// of its two-factor sign-in; with neither, the session of the request must
// have signed in with a passkey or single sign-on less than FreshSignIn
// ago.
type AccountProof struct {
	Password string
	Code     string
}

// DeleteAccountWith deletes me's account (see DeleteAccount) if proof
// proves it is theirs, counted as a login attempt. session is the
// request's.
func (s *Service) DeleteAccountWith(ctx context.Context, me store.UserRef, session string, proof AccountProof) error {
	if err := s.limitLogin(ctx, me.Login); err != nil {
		return err
	}
	var acct store.Account
	var err error
	switch {
	case proof.Password != "":
		acct, err = s.accountWithPassword(ctx, me.Login, proof.Password, "the password")
	case proof.Code != "":
		if _, err = s.useCode(ctx, me.Login, proof.Code); err == nil {
			acct, err = s.myAccount(ctx, me)
		}
	default:
		if _, err = s.freshSession(ctx, me, session, "give the password or a one-time code, or sign in again with a passkey or single sign-on and delete the account within 10 minutes", false, store.SignInPasskey, store.SignInOIDC); err == nil {
			acct, err = s.myAccount(ctx, me)
		}
	}
	if err != nil {
		return err
	}
	return s.DeleteAccount(ctx, acct)
}

// SetPassword gives me's account, which has none (made by a sign-in at an
// OpenID Connect provider), its first password; the session of the
// request must have signed in less than FreshSignIn ago. CONFLICT if the
// account has a password (changePassword changes it). Other sessions go
// on: nothing they knew changed.
func (s *Service) SetPassword(ctx context.Context, me store.UserRef, session, password string) error {
	if err := s.limit(ctx, ratelimit.Account, me); err != nil {
		return err
	}
	if err := store.ValidatePasswordIn("password", password); err != nil {
		return err
	}
	acct, err := s.myAccount(ctx, me)
	if err != nil {
		return err
	}
	if len(acct.PassHash) > 0 {
		return fmt.Errorf("your account has a password: change it with changePassword: %w", store.ErrConflict)
	}
	if _, err := s.freshSession(ctx, me, session, "sign in again, then set the password within 10 minutes", false); err != nil {
		return err
	}
	hash, err := s.Passwords.Hash(ctx, password)
	if err != nil {
		return err
	}
	if err := s.Store.ChangePassword(ctx, me.Login, acct.PassHash, hash); errors.Is(err, store.ErrConflict) {
		return fmt.Errorf("your account's password was set meanwhile: %w", store.ErrConflict)
	} else if err != nil {
		return err
	}
	return nil
}

// Me is me's profile, with the rooms they take part in.
func (s *Service) Me(ctx context.Context, me store.UserRef) (*store.User, error) {
	u, err := s.Store.User(ctx, me.Login)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: the token's user no longer exists", auth.ErrUnauthenticated)
	}
	if err != nil {
		return nil, err
	}
	return &u, nil
}

// BlockedUsers are the users me blocked, by login.
func (s *Service) BlockedUsers(ctx context.Context, me store.UserRef) ([]store.UserRef, error) {
	return s.Store.BlockedUsers(ctx, me.Login)
}

// limitLogin counts a login attempt, whatever its outcome and before the
// password is checked, against the client address and against the login
// tried, so that guessing one user's password is slow from any number of
// addresses, and so is trying many logins from one address. A login that
// cannot exist is counted only against the address.
func (s *Service) limitLogin(ctx context.Context, login string) error {
	if err := s.Limits.Allow(ctx, ratelimit.LoginAddress, ratelimit.AddressFrom(ctx)); err != nil {
		return err
	}
	if store.ValidateLogin(login) != nil {
		return nil
	}
	return s.Limits.Allow(ctx, ratelimit.Login, login)
}

// accountWithPassword returns login's account if password is theirs;
// otherwise UNAUTHENTICATED, naming what (the password, the old password)
// was wrong. A caller whose account is gone is UNAUTHENTICATED too.
func (s *Service) accountWithPassword(ctx context.Context, login, password, what string) (store.Account, error) {
	acct, err := s.Store.Account(ctx, login)
	if errors.Is(err, store.ErrNotFound) {
		return store.Account{}, fmt.Errorf("%w: the token's user no longer exists", auth.ErrUnauthenticated)
	}
	if err != nil {
		return store.Account{}, err
	}
	if len(acct.PassHash) == 0 && !acct.Bot {
		return store.Account{}, errNoPassword
	}
	if err := s.Passwords.Check(ctx, acct.PassHash, password); err != nil {
		if errors.Is(err, auth.ErrUnauthenticated) {
			err = fmt.Errorf("%w: %s is wrong", auth.ErrUnauthenticated, what)
		}
		return store.Account{}, err
	}
	return acct, nil
}

// errNoPassword refuses a password check of an account that has none
// (made by a sign-in at an OpenID Connect provider).
var errNoPassword = fmt.Errorf("your account has no password: set one with setPassword: %w", store.ErrConflict)
