package chat

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/killrchat/chatql/auth"
	"github.com/killrchat/chatql/ratelimit"
	"github.com/killrchat/chatql/store"
)

// MaxPasskeyName caps the name of a passkey, in characters.
const MaxPasskeyName = 64

// PasskeyCeremony is what a client needs to run one step of WebAuthn in
// the browser: the options for navigator.credentials (JSON), and the
// ceremony's state to send back with the authenticator's answer.
type PasskeyCeremony struct {
	Options []byte
	State   string
}

var errNoPasskeys = fmt.Errorf("passkeys are not configured on this server: %w", store.ErrNotFound)

// PasskeyID is the id of a passkey as the API shows it: base64url.
func PasskeyID(id []byte) string { return base64.RawURLEncoding.EncodeToString(id) }

// Passkeys are me's passkeys, by id.
func (s *Service) Passkeys(ctx context.Context, me store.UserRef) ([]store.Passkey, error) {
	return s.Store.UserPasskeys(ctx, me.Login)
}

// BeginPasskeyRegistration starts registering a passkey of me's.
func (s *Service) BeginPasskeyRegistration(ctx context.Context, me store.UserRef) (PasskeyCeremony, error) {
	if s.PasskeyCeremonies == nil {
		return PasskeyCeremony{}, errNoPasskeys
	}
	if err := s.limit(ctx, ratelimit.Account, me); err != nil {
		return PasskeyCeremony{}, err
	}
	have, err := s.Store.UserPasskeys(ctx, me.Login)
	if err != nil {
		return PasskeyCeremony{}, err
	}
	if len(have) >= store.MaxPasskeys {
		return PasskeyCeremony{}, store.Invalidf("invalid passkey: you have %d passkeys, the most one may; delete one first", len(have))
	}
	options, state, err := s.PasskeyCeremonies.BeginRegistration(ctx, me, have)
	return PasskeyCeremony{Options: options, State: state}, err
}

// FinishPasskeyRegistration stores the passkey the authenticator made in
// the ceremony state began, named name.
func (s *Service) FinishPasskeyRegistration(ctx context.Context, me store.UserRef, state, credential, name string) (store.Passkey, error) {
	if s.PasskeyCeremonies == nil {
		return store.Passkey{}, errNoPasskeys
	}
	name = strings.TrimSpace(name)
	if name == "" {
		name = "Passkey"
	}
	if !utf8.ValidString(name) || utf8.RuneCountInString(name) > MaxPasskeyName {
		return store.Passkey{}, store.Invalidf("invalid passkey name: at most %d characters", MaxPasskeyName)
	}
	if err := s.limit(ctx, ratelimit.Account, me); err != nil {
		return store.Passkey{}, err
	}
	have, err := s.Store.UserPasskeys(ctx, me.Login)
	if err != nil {
		return store.Passkey{}, err
	}
	id, cred, err := s.PasskeyCeremonies.FinishRegistration(ctx, me, have, state, []byte(credential))
	if err != nil {
		return store.Passkey{}, err
	}
	p := store.Passkey{Login: me.Login, ID: id, Name: name, Credential: cred, CreatedAt: s.now()}
	if err := s.Store.AddPasskey(ctx, p); err != nil {
		return store.Passkey{}, err
	}
	return p, nil
}

// DeletePasskey deletes one of me's passkeys, by its id (base64url):
// it signs in no more. NOT_FOUND if me has no such passkey; CONFLICT if it
// is the last way me has to sign in (see UnlinkOIDC).
func (s *Service) DeletePasskey(ctx context.Context, me store.UserRef, id string) error {
	if err := s.limit(ctx, ratelimit.Account, me); err != nil {
		return err
	}
	raw, err := base64.RawURLEncoding.DecodeString(id)
	if err != nil || len(raw) == 0 {
		return fmt.Errorf("no passkey %q of yours: %w", id, store.ErrNotFound)
	}
	have, err := s.Store.UserPasskeys(ctx, me.Login)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(have, func(p store.Passkey) bool { return bytes.Equal(p.ID, raw) }) {
		return fmt.Errorf("no passkey %q of yours: %w", id, store.ErrNotFound)
	}
	acct, err := s.myAccount(ctx, me)
	if err != nil {
		return err
	}
	switch ways, err := s.signInWays(ctx, acct); {
	case err != nil:
		return err
	case ways <= 1:
		return errLastSignInWay
	}
	return s.Store.DeletePasskey(ctx, me.Login, raw)
}

// BeginPasskeySignIn starts a sign-in with a passkey, counted as a login
// attempt of the client address.
func (s *Service) BeginPasskeySignIn(ctx context.Context) (PasskeyCeremony, error) {
	if s.PasskeyCeremonies == nil {
		return PasskeyCeremony{}, errNoPasskeys
	}
	if err := s.Limits.Allow(ctx, ratelimit.LoginAddress, ratelimit.AddressFrom(ctx)); err != nil {
		return PasskeyCeremony{}, err
	}
	options, state, err := s.PasskeyCeremonies.BeginSignIn(ctx)
	return PasskeyCeremony{Options: options, State: state}, err
}

// FinishPasskeySignIn starts a session of the user whose passkey answered
// the ceremony state began: no password, and no one-time code (a passkey
// is something the user has, unlocked by something they know or are).
func (s *Service) FinishPasskeySignIn(ctx context.Context, state, credential, device string) (auth.Pair, store.User, error) {
	if s.PasskeyCeremonies == nil {
		return auth.Pair{}, store.User{}, errNoPasskeys
	}
	if err := auth.ValidateDeviceName(device); err != nil {
		return auth.Pair{}, store.User{}, err
	}
	if err := s.Limits.Allow(ctx, ratelimit.LoginAddress, ratelimit.AddressFrom(ctx)); err != nil {
		return auth.Pair{}, store.User{}, err
	}
	var acct store.Account
	ref, key, err := s.PasskeyCeremonies.FinishSignIn(ctx, state, []byte(credential), func(ctx context.Context, login string) (store.UserRef, []store.Passkey, error) {
		a, err := s.Store.Account(ctx, login)
		if err != nil {
			return store.UserRef{}, nil, err
		}
		if a.Bot {
			return store.UserRef{}, nil, fmt.Errorf("bots have no passkeys: %w", store.ErrNotFound)
		}
		acct = a
		keys, err := s.Store.UserPasskeys(ctx, login)
		return a.UserRef, keys, err
	})
	if err != nil {
		return auth.Pair{}, store.User{}, err
	}
	// The new signature counter: a copy of the passkey that answers with
	// an older one is refused from now on.
	if err := s.Store.UpdatePasskey(ctx, key); errors.Is(err, store.ErrNotFound) {
		return auth.Pair{}, store.User{}, fmt.Errorf("%w: the passkey was deleted", auth.ErrUnauthenticated)
	} else if err != nil {
		return auth.Pair{}, store.User{}, err
	}
	pair, err := s.Sessions.StartWith(ctx, ref, auth.SignIn{Method: store.SignInPasskey, Device: device, TwoFactor: true})
	if err != nil {
		return auth.Pair{}, store.User{}, err
	}
	return pair, acct.User, nil
}
