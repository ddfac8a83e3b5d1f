package chat

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/killrchat/chatql/auth"
	"github.com/killrchat/chatql/ratelimit"
	"github.com/killrchat/chatql/store"
)

// RecoveryCodes is how many recovery codes two-factor sign-in gives.
const RecoveryCodes = 10

// totpIssuer names the server in authenticator apps.
const totpIssuer = "chatql"

// TwoFactorKey is a new TOTP key for an authenticator app, shown once.
type TwoFactorKey struct {
	// Secret is the key in base32, to type in.
	Secret string
	// URI is its otpauth:// URI, and QRCode the URI as a QR code: a PNG
	// image.
	URI    string
	QRCode []byte
}

// TwoFactorStatus is what a user sees of their two-factor sign-in.
type TwoFactorStatus struct {
	Enabled           bool
	RecoveryCodesLeft int
}

var (
	errWrongCode    = fmt.Errorf("%w: the code is wrong (or was used already)", auth.ErrUnauthenticated)
	errTwoFactorOff = fmt.Errorf("two-factor sign-in is not on: %w", store.ErrNotFound)
)

// TwoFactor is me's two-factor status.
func (s *Service) TwoFactor(ctx context.Context, me store.UserRef) (TwoFactorStatus, error) {
	tf, err := s.Store.TwoFactor(ctx, me.Login)
	if errors.Is(err, store.ErrNotFound) {
		return TwoFactorStatus{}, nil
	}
	if err != nil {
		return TwoFactorStatus{}, err
	}
	return TwoFactorStatus{Enabled: tf.Enabled, RecoveryCodesLeft: len(tf.RecoveryHashes)}, nil
}

// BeginTwoFactor gives me, who proves their password, a new TOTP key to
// confirm with a code (ConfirmTwoFactor): until then sign-in asks for none.
// A key begun before and not confirmed is replaced. CONFLICT if two-factor
// sign-in is on already.
func (s *Service) BeginTwoFactor(ctx context.Context, me store.UserRef, password string) (TwoFactorKey, error) {
	if err := s.limitLogin(ctx, me.Login); err != nil {
		return TwoFactorKey{}, err
	}
	if _, err := s.accountWithPassword(ctx, me.Login, password, "the password"); err != nil {
		return TwoFactorKey{}, err
	}
	cur, err := s.Store.TwoFactor(ctx, me.Login)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return TwoFactorKey{}, err
	case cur.Enabled:
		return TwoFactorKey{}, fmt.Errorf("two-factor sign-in is on already; disable it first: %w", store.ErrConflict)
	}
	key, err := auth.NewTOTPKey(totpIssuer, me.Login)
	if err != nil {
		return TwoFactorKey{}, err
	}
	next := store.TwoFactor{Login: me.Login, Secret: s.Sessions.Seal(me.Login, []byte(key.Secret)), Version: cur.Version + 1, UpdatedAt: s.now()}
	if err := s.Store.PutTwoFactor(ctx, next, cur.Version); err != nil {
		return TwoFactorKey{}, err
	}
	return TwoFactorKey{Secret: key.Secret, URI: key.URI, QRCode: key.QRCode}, nil
}

// ConfirmTwoFactor turns two-factor sign-in on, given a code of the key
// BeginTwoFactor gave, and returns the recovery codes, shown this once. The
// caller's session counts as having proven it; me's other sessions must
// give a code at their next refresh.
func (s *Service) ConfirmTwoFactor(ctx context.Context, me store.UserRef, session, code string) ([]string, error) {
	if err := s.limitCodes(ctx, me.Login); err != nil {
		return nil, err
	}
	cur, err := s.Store.TwoFactor(ctx, me.Login)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, fmt.Errorf("no two-factor key to confirm: begin with beginTwoFactor: %w", store.ErrNotFound)
	case err != nil:
		return nil, err
	case cur.Enabled:
		return nil, fmt.Errorf("two-factor sign-in is on already: %w", store.ErrConflict)
	}
	secret, err := s.Sessions.Open(me.Login, cur.Secret)
	if err != nil {
		return nil, err
	}
	step, ok := auth.MatchTOTP(string(secret), code, s.now(), cur.LastStep)
	if !ok {
		return nil, errWrongCode
	}
	codes, hashes := auth.NewRecoveryCodes(RecoveryCodes)
	next := cur
	next.Enabled, next.LastStep, next.RecoveryHashes, next.Version, next.UpdatedAt = true, step, hashes, cur.Version+1, s.now()
	if err := s.Store.PutTwoFactor(ctx, next, cur.Version); errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
		return nil, errWrongCode
	} else if err != nil {
		return nil, err
	}
	if session != "" {
		if err := s.Sessions.MarkTwoFactor(ctx, me.Login, session); err != nil {
			return nil, err
		}
	}
	return codes, nil
}

// DisableTwoFactor turns two-factor sign-in off, given a code (or a
// recovery code). NOT_FOUND if it is not on.
func (s *Service) DisableTwoFactor(ctx context.Context, me store.UserRef, code string) error {
	tf, err := s.useCode(ctx, me.Login, code)
	if err != nil {
		return err
	}
	if err := s.Store.DeleteTwoFactor(ctx, me.Login, tf.Version); errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("two-factor sign-in changed meanwhile; try again: %w", store.ErrConflict)
	}
	return err
}

// RegenerateRecoveryCodes replaces me's recovery codes with new ones,
// returned this once: the old ones stop working. It needs a code of the
// authenticator app (or an unused recovery code), or else the session of
// the request must have signed in with two factors less than FreshSignIn
// ago. NOT_FOUND if two-factor sign-in is not on.
func (s *Service) RegenerateRecoveryCodes(ctx context.Context, me store.UserRef, session, code string) ([]string, error) {
	var cur store.TwoFactor
	var err error
	if code != "" {
		cur, err = s.useCode(ctx, me.Login, code)
	} else {
		if err := s.limit(ctx, ratelimit.Account, me); err != nil {
			return nil, err
		}
		cur, err = s.Store.TwoFactor(ctx, me.Login)
		if errors.Is(err, store.ErrNotFound) || err == nil && !cur.Enabled {
			err = errTwoFactorOff
		}
		if err == nil {
			_, err = s.freshSession(ctx, me, session, "give a code of your authenticator app, or sign in again (with your code or a passkey) and regenerate within 10 minutes", true)
		}
	}
	if err != nil {
		return nil, err
	}
	codes, hashes := auth.NewRecoveryCodes(RecoveryCodes)
	next := cur
	next.RecoveryHashes, next.Version, next.UpdatedAt = hashes, cur.Version+1, s.now()
	if err := s.Store.PutTwoFactor(ctx, next, cur.Version); errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("two-factor sign-in changed meanwhile; try again: %w", store.ErrConflict)
	} else if err != nil {
		return nil, err
	}
	return codes, nil
}

// useCode counts a code tried for login and, if it is right, uses it up:
// a TOTP code of a later step than the last one accepted, or an unused
// recovery code, which is then deleted. The write is a compare-and-set, so
// of concurrent uses of one code one succeeds. It returns the settings as
// written.
func (s *Service) useCode(ctx context.Context, login, code string) (store.TwoFactor, error) {
	if err := s.limitCodes(ctx, login); err != nil {
		return store.TwoFactor{}, err
	}
	cur, err := s.Store.TwoFactor(ctx, login)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return store.TwoFactor{}, errTwoFactorOff
	case err != nil:
		return store.TwoFactor{}, err
	case !cur.Enabled:
		return store.TwoFactor{}, errTwoFactorOff
	}
	secret, err := s.Sessions.Open(login, cur.Secret)
	if err != nil {
		return store.TwoFactor{}, err
	}
	next := cur
	next.Version, next.UpdatedAt = cur.Version+1, s.now()
	if step, ok := auth.MatchTOTP(string(secret), code, s.now(), cur.LastStep); ok {
		next.LastStep = step
	} else {
		h := auth.HashRecoveryCode(code)
		i := slices.IndexFunc(cur.RecoveryHashes, func(r []byte) bool { return bytes.Equal(r, h) })
		if i < 0 {
			return store.TwoFactor{}, errWrongCode
		}
		next.RecoveryHashes = slices.Delete(slices.Clone(cur.RecoveryHashes), i, i+1)
	}
	if err := s.Store.PutTwoFactor(ctx, next, cur.Version); errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
		return store.TwoFactor{}, errWrongCode
	} else if err != nil {
		return store.TwoFactor{}, err
	}
	return next, nil
}

// limitCodes counts a code tried for login, against the login and against
// the client address (as a login attempt).
func (s *Service) limitCodes(ctx context.Context, login string) error {
	if err := s.Limits.Allow(ctx, ratelimit.LoginAddress, ratelimit.AddressFrom(ctx)); err != nil {
		return err
	}
	return s.Limits.Allow(ctx, ratelimit.SecondFactor, login)
}

// twoFactorChallenge returns the challenge of a sign-in of acct as how
// says if its two-factor sign-in is on, nil otherwise.
func (s *Service) twoFactorChallenge(ctx context.Context, acct store.Account, how auth.SignIn) (*auth.TwoFactorRequired, error) {
	tf, err := s.Store.TwoFactor(ctx, acct.Login)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, err
	case !tf.Enabled:
		return nil, nil
	}
	c := auth.Challenge{Login: acct.Login, Method: how.Method, Device: how.Device}
	if how.Method == store.SignInPassword {
		c.Proof = auth.PasswordProof(acct.PassHash)
	}
	return s.Sessions.IssueChallenge(c), nil
}

// VerifyTwoFactor answers a sign-in's challenge with a code: a new sign-in
// starts its session, as having proven a second factor; a refresh that
// needed one gets its next pair. device, if not empty, names a new
// session.
func (s *Service) VerifyTwoFactor(ctx context.Context, challenge, code, device string) (auth.Pair, store.User, error) {
	if err := auth.ValidateDeviceName(device); err != nil {
		return auth.Pair{}, store.User{}, err
	}
	c, err := s.Sessions.ParseChallenge(challenge)
	if err != nil {
		return auth.Pair{}, store.User{}, err
	}
	if _, err := s.useCode(ctx, c.Login, code); err != nil {
		if errors.Is(err, store.ErrNotFound) { // turned off meanwhile
			err = fmt.Errorf("%w: the challenge is no longer valid; sign in again", auth.ErrUnauthenticated)
		}
		return auth.Pair{}, store.User{}, err
	}
	if c.Session != "" {
		return s.Sessions.ResumeRefresh(ctx, c)
	}
	acct, err := s.Store.Account(ctx, c.Login)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return auth.Pair{}, store.User{}, fmt.Errorf("%w: the account no longer exists", auth.ErrUnauthenticated)
	case err != nil:
		return auth.Pair{}, store.User{}, err
	case c.Proof != nil && !bytes.Equal(c.Proof, auth.PasswordProof(acct.PassHash)):
		return auth.Pair{}, store.User{}, fmt.Errorf("%w: the password changed; sign in again", auth.ErrUnauthenticated)
	}
	if device == "" {
		device = c.Device
	}
	pair, err := s.Sessions.StartWith(ctx, acct.UserRef, auth.SignIn{Method: c.Method, Device: device, TwoFactor: true})
	if err != nil {
		return auth.Pair{}, store.User{}, err
	}
	return pair, acct.User, nil
}
