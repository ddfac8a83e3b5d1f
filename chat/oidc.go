package chat

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/killrchat/chatql/auth"
	"github.com/killrchat/chatql/ratelimit"
	"github.com/killrchat/chatql/store"
)

// BeginOIDC starts a sign-in (or a link) at the OpenID Connect provider:
// the URL to send the browser to, and the flow's state to send back with
// the code. Counted as a login attempt of the client address.
func (s *Service) BeginOIDC(ctx context.Context) (string, string, error) {
	if s.OIDC == nil {
		return "", "", auth.ErrNoOIDC
	}
	if err := s.Limits.Allow(ctx, ratelimit.LoginAddress, ratelimit.AddressFrom(ctx)); err != nil {
		return "", "", err
	}
	return s.OIDC.Begin(ctx)
}

// OIDCSignIn finishes a sign-in at the provider (flow from BeginOIDC, the
// code and state the provider sent back) and signs in the account linked
// to the identity. An identity linked to none gets a new account of its
// own, named after its claims: never an existing account, even one of the
// same email address, which the user links by proving it (LinkOIDC, signed
// in). An account with two-factor sign-in on answers TWO_FACTOR_REQUIRED.
func (s *Service) OIDCSignIn(ctx context.Context, flow, code, state, device string) (auth.Pair, store.User, error) {
	if s.OIDC == nil {
		return auth.Pair{}, store.User{}, auth.ErrNoOIDC
	}
	if err := auth.ValidateDeviceName(device); err != nil {
		return auth.Pair{}, store.User{}, err
	}
	if err := s.Limits.Allow(ctx, ratelimit.LoginAddress, ratelimit.AddressFrom(ctx)); err != nil {
		return auth.Pair{}, store.User{}, err
	}
	claims, err := s.OIDC.Finish(ctx, flow, code, state)
	if err != nil {
		return auth.Pair{}, store.User{}, err
	}
	id, err := s.Store.Identity(ctx, claims.Issuer, claims.Subject)
	if errors.Is(err, store.ErrNotFound) {
		id, err = s.newOIDCAccount(ctx, claims)
	}
	if err != nil {
		return auth.Pair{}, store.User{}, err
	}
	acct, err := s.Store.Account(ctx, id.Login)
	if errors.Is(err, store.ErrNotFound) {
		return auth.Pair{}, store.User{}, fmt.Errorf("%w: the account this identity signs in was deleted", auth.ErrUnauthenticated)
	}
	if err != nil {
		return auth.Pair{}, store.User{}, err
	}
	how := auth.SignIn{Method: store.SignInOIDC, Device: device}
	switch challenge, err := s.twoFactorChallenge(ctx, acct, how); {
	case err != nil:
		return auth.Pair{}, store.User{}, err
	case challenge != nil:
		return auth.Pair{}, store.User{}, challenge
	}
	pair, err := s.Sessions.StartWith(ctx, acct.UserRef, how)
	if err != nil {
		return auth.Pair{}, store.User{}, err
	}
	return pair, acct.User, nil
}

// newOIDCAccount creates the account of an identity seen for the first
// time, with no password, and links it. Its login is the identity's
// preferred username (or its email's local part), made valid, with a
// number after it if taken.
func (s *Service) newOIDCAccount(ctx context.Context, c auth.OIDCClaims) (store.Identity, error) {
	if err := s.Limits.Allow(ctx, ratelimit.Signup, ratelimit.AddressFrom(ctx)); err != nil {
		return store.Identity{}, err
	}
	first, last := c.GivenName, c.FamilyName
	if first == "" && c.Name != "" {
		first, last, _ = strings.Cut(c.Name, " ")
	}
	email := ""
	if c.EmailVerified {
		email = c.Email
	}
	base := loginFrom(c.PreferredUsername)
	if base == "" {
		local, _, _ := strings.Cut(c.Email, "@")
		base = loginFrom(local)
	}
	if base == "" {
		base = "user"
	}
	for i := 1; i <= 20; i++ {
		login := base
		if i > 1 {
			suffix := "-" + strconv.Itoa(i)
			login = base[:min(len(base), maxLoginLength-len(suffix))] + suffix
		}
		u := store.User{UserRef: store.UserRef{Login: login, Firstname: orDefault(first, login), Lastname: orDefault(last, "-")}, Email: email}
		if u.Validate() != nil {
			u.Firstname, u.Lastname, u.Email = login, "-", ""
		}
		err := s.Store.CreateUser(ctx, store.Account{User: u})
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		if err != nil {
			return store.Identity{}, err
		}
		id := store.Identity{Issuer: c.Issuer, Subject: c.Subject, Login: login, Email: c.Email, LinkedAt: s.now()}
		if err := s.Store.LinkIdentity(ctx, id); errors.Is(err, store.ErrConflict) {
			// Another sign-in of this identity linked it meanwhile: it
			// signs in that account, and this one stays unused.
			return s.Store.Identity(ctx, c.Issuer, c.Subject)
		} else if err != nil {
			return store.Identity{}, err
		}
		if u.Email != "" {
			// The provider vouches for the address (email_verified), as a
			// link we email would: it is verified, and finds the account
			// for password resets, as for any verified address.
			if err := s.Store.VerifyEmail(ctx, login, u.Email); err != nil {
				s.Log.WarnContext(ctx, "oidc: marking the provider's verified address verified failed", "login", login, "err", err)
			}
		}
		return id, nil
	}
	return store.Identity{}, fmt.Errorf("no free login like %q for the new account: %w", base, store.ErrConflict)
}

// loginFrom makes s a valid login, or "" if too little of it is left.
func loginFrom(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case (r == '.' || r == '_' || r == '-') && b.Len() > 0:
			b.WriteRune(r)
		}
	}
	login := b.String()
	login = login[:min(len(login), maxLoginLength-3)]
	if len(login) < 3 || store.ValidateLogin(login) != nil {
		return ""
	}
	return login
}

func orDefault(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}

// LinkOIDC links the identity that signed in at the provider (flow from
// BeginOIDC, the code and state it sent back) to me, who proves the
// account is theirs by being signed in: from then on it signs me in.
// CONFLICT if it is linked already.
func (s *Service) LinkOIDC(ctx context.Context, me store.UserRef, flow, code, state string) (store.Identity, error) {
	if s.OIDC == nil {
		return store.Identity{}, auth.ErrNoOIDC
	}
	if err := s.limit(ctx, ratelimit.Account, me); err != nil {
		return store.Identity{}, err
	}
	claims, err := s.OIDC.Finish(ctx, flow, code, state)
	if err != nil {
		return store.Identity{}, err
	}
	id := store.Identity{Issuer: claims.Issuer, Subject: claims.Subject, Login: me.Login, Email: claims.Email, LinkedAt: s.now()}
	if err := s.Store.LinkIdentity(ctx, id); err != nil {
		return store.Identity{}, err
	}
	return id, nil
}

// Identities are the provider identities linked to me.
func (s *Service) Identities(ctx context.Context, me store.UserRef) ([]store.Identity, error) {
	return s.Store.UserIdentities(ctx, me.Login)
}

// UnlinkOIDC unlinks one of the identities linked to me: it signs them
// in no more, and may be linked again (to any account). NOT_FOUND if it is
// not linked to me; CONFLICT if it is the last way me has to sign in (no
// password, no passkey, no other identity). It needs no provider
// configured, so that identities of a provider the server left can go.
// The check and the unlink are two steps: an unlink and a passkey's
// deletion at the same moment could both pass it.
func (s *Service) UnlinkOIDC(ctx context.Context, me store.UserRef, issuer, subject string) error {
	if err := s.limit(ctx, ratelimit.Account, me); err != nil {
		return err
	}
	acct, err := s.myAccount(ctx, me)
	if err != nil {
		return err
	}
	ids, err := s.Store.UserIdentities(ctx, me.Login)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(ids, func(id store.Identity) bool { return id.Issuer == issuer && id.Subject == subject }) {
		return fmt.Errorf("no identity %q at %q is linked to your account: %w", subject, issuer, store.ErrNotFound)
	}
	switch ways, err := s.signInWays(ctx, acct); {
	case err != nil:
		return err
	case ways <= 1:
		return errLastSignInWay
	}
	return s.Store.UnlinkIdentity(ctx, me.Login, issuer, subject)
}

// OIDCProvider is the issuer URL of the provider people sign in with, and
// a name for it (its host); ok is false when none is configured.
func (s *Service) OIDCProvider() (name, issuer string, ok bool) {
	if s.OIDC == nil {
		return "", "", false
	}
	issuer = s.OIDC.Issuer()
	name = issuer
	if u, err := url.Parse(issuer); err == nil && u.Host != "" {
		name = u.Host
	}
	return name, issuer, true
}

// maxLoginLength is the longest login store.LoginRule allows.
const maxLoginLength = 32
