package chat

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	netmail "net/mail"
	"strings"
	"time"

	"github.com/killrchat/chatql/auth"
	"github.com/killrchat/chatql/notify/mail"
	"github.com/killrchat/chatql/ratelimit"
	"github.com/killrchat/chatql/store"
)

// Email is the server's email: the mailer, where the links it sends point,
// and the timing of links and digests. Build it with NewEmail.
type Email struct {
	Mailer mail.Mailer
	// PublicURL is the scheme://host[:port] of the links.
	PublicURL string
	// LinkTTL is how long an emailed link works (DefaultLinkTTL when 0).
	LinkTTL time.Duration
	// DigestAfter is how long someone is away, with unread mentions or
	// direct messages, before they are emailed a digest; 0: no digests.
	// DigestEvery is the least time between two digests to one person.
	DigestAfter, DigestEvery time.Duration
	// UnsubscribeKey signs the digests' unsubscribe links.
	UnsubscribeKey []byte

	// letters queues the emails of links, sent in the background (RunEmail).
	letters chan func(context.Context)
}

// Email defaults and bounds.
const (
	DefaultLinkTTL     = 30 * time.Minute
	DefaultDigestAfter = time.Hour
	DefaultDigestEvery = 24 * time.Hour
	// lettersQueued bounds the letters waiting to be sent; past it, a
	// request's letter is dropped (and logged), never waited for.
	lettersQueued = 256
	letterTimeout = time.Minute
)

// NewEmail returns the server's email with its queue.
func NewEmail(e Email) *Email {
	if e.LinkTTL <= 0 {
		e.LinkTTL = DefaultLinkTTL
	}
	e.PublicURL = strings.TrimSuffix(e.PublicURL, "/")
	e.letters = make(chan func(context.Context), lettersQueued)
	return &e
}

// errNoEmail refuses email requests on a server that sends no email.
var errNoEmail = fmt.Errorf("%w: this server sends no email", store.ErrForbidden)

// errBadLink answers a link that is unknown, used, expired or for
// something else.
var errBadLink = store.Invalidf("invalid token: the link is unknown, used or expired; ask for a new one")

// RunEmail sends the queued letters until ctx ends.
func (s *Service) RunEmail(ctx context.Context) {
	if s.Email == nil {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case job := <-s.Email.letters:
			jctx, cancel := context.WithTimeout(ctx, letterTimeout)
			job(jctx)
			cancel()
		}
	}
}

// later queues job, or drops it if the queue is full: a request never
// waits for mail, and answers the same whatever the job will find.
func (s *Service) later(ctx context.Context, what string, job func(context.Context)) {
	select {
	case s.Email.letters <- job:
	default:
		s.Log.WarnContext(ctx, "mail: queue full, a letter is dropped", "letter", what)
	}
}

// newLinkToken returns a random token for a link, and its hash.
func newLinkToken() (token string, hash []byte) {
	raw := make([]byte, 32)
	_, _ = rand.Read(raw)
	token = base64.RawURLEncoding.EncodeToString(raw)
	return token, linkHash(token)
}

// linkHash is the stored hash of a link's token.
func linkHash(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// sendLink stores a new token of purpose for acct's address and emails
// its link; what went wrong is logged, never answered. The caller counted
// it against the recipient's limit.
func (s *Service) sendLink(ctx context.Context, acct store.Account, purpose store.EmailPurpose) {
	e := s.Email
	token, hash := newLinkToken()
	t := store.EmailToken{Hash: hash, Purpose: purpose, Login: acct.Login, Email: acct.Email, ExpiresAt: s.now().Add(e.LinkTTL)}
	if err := s.Store.CreateEmailToken(ctx, t); err != nil {
		s.Log.WarnContext(ctx, "mail: storing a link's token failed", "login", acct.Login, "err", err)
		return
	}
	l := mail.Letter{To: netmail.Address{Address: acct.Email}}
	minutes := int(e.LinkTTL.Round(time.Minute) / time.Minute)
	ttl := fmt.Sprintf("%d minutes", max(minutes, 1))
	switch purpose {
	case store.VerifyEmailLink:
		l.Subject = "Confirm your email address on chatql"
		l.Text = fmt.Sprintf("Hello %s,\n\nOpen this link within %s to confirm that %s is your address on chatql:\n\n%s/email/verify?token=%s\n\nIf you did not give this address to chatql, ignore this email.\n",
			acct.Login, ttl, acct.Email, e.PublicURL, token)
	case store.ResetPasswordLink:
		l.Subject = "Reset your chatql password"
		l.Text = fmt.Sprintf("Hello %s,\n\nSomeone, hopefully you, asked to reset the password of your chatql account. Open this link within %s to choose a new one:\n\n%s/email/reset?token=%s\n\nChoosing a new password ends every session of the account. If you did not ask for this, ignore this email: your password stays as it is.\n",
			acct.Login, ttl, e.PublicURL, token)
	}
	if err := e.Mailer.SendLetter(ctx, l); err != nil {
		s.Log.WarnContext(ctx, "mail: sending a letter failed", "login", acct.Login, "purpose", purpose, "err", err)
	}
}

// limitEmailRequest counts a request for a link, or a use of one, against
// the client address.
func (s *Service) limitEmailRequest(ctx context.Context) error {
	if s.Email == nil {
		return errNoEmail
	}
	return s.Limits.Allow(ctx, ratelimit.EmailRequest, ratelimit.AddressFrom(ctx))
}

// limitEmailTo counts a letter to email against its recipient's limit.
func (s *Service) limitEmailTo(ctx context.Context, email string) error {
	return s.Limits.Allow(ctx, ratelimit.EmailTo, store.NormalizeEmail(email))
}

// sendVerification queues the verification letter of acct's address, a
// side effect of giving it (signup, setEmail): over the recipient's limit,
// it is not sent.
func (s *Service) sendVerification(ctx context.Context, acct store.Account) {
	if s.Email == nil || acct.Email == "" || acct.EmailVerified {
		return
	}
	s.later(ctx, "verification", func(ctx context.Context) {
		if err := s.limitEmailTo(ctx, acct.Email); err != nil {
			s.Log.InfoContext(ctx, "mail: a verification over its recipient's limit is not sent", "login", acct.Login)
			return
		}
		s.sendLink(ctx, acct, store.VerifyEmailLink)
	})
}

// SetEmail replaces me's address (empty removes it) and emails a link to
// verify the new one. The answer says nothing of other accounts: two
// accounts may give one address.
func (s *Service) SetEmail(ctx context.Context, me store.UserRef, email string) (*store.User, error) {
	if err := s.limit(ctx, ratelimit.RoomChange, me); err != nil {
		return nil, err
	}
	email = strings.TrimSpace(email)
	if email != "" {
		if err := store.ValidateEmail(email); err != nil {
			return nil, err
		}
	}
	if err := s.Store.SetEmail(ctx, me.Login, email); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("%w: the token's user no longer exists", auth.ErrUnauthenticated)
		}
		return nil, err
	}
	acct, err := s.Store.Account(ctx, me.Login)
	if err != nil {
		return nil, err
	}
	s.sendVerification(ctx, acct)
	return &acct.User, nil
}

// RequestEmailVerification emails me a new link to verify their address,
// if they have one not verified yet; it answers the same either way.
func (s *Service) RequestEmailVerification(ctx context.Context, me store.UserRef) error {
	if err := s.limitEmailRequest(ctx); err != nil {
		return err
	}
	acct, err := s.Store.Account(ctx, me.Login)
	if err != nil {
		return err
	}
	if acct.Email == "" || acct.EmailVerified {
		return nil
	}
	if err := s.limitEmailTo(ctx, acct.Email); err != nil {
		return err
	}
	s.later(ctx, "verification", func(ctx context.Context) { s.sendLink(ctx, acct, store.VerifyEmailLink) })
	return nil
}

// VerifyEmail uses a verification link's token: the address it went to is
// verified, if it is still the account's.
func (s *Service) VerifyEmail(ctx context.Context, token string) error {
	if err := s.limitEmailRequest(ctx); err != nil {
		return err
	}
	t, err := s.useLink(ctx, token, store.VerifyEmailLink)
	if err != nil {
		return err
	}
	err = s.Store.VerifyEmail(ctx, t.Login, t.Email)
	if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
		return store.Invalidf("invalid token: the account's address changed since this link was sent")
	}
	return err
}

// useLink uses up token, which must be a link for purpose.
func (s *Service) useLink(ctx context.Context, token string, purpose store.EmailPurpose) (store.EmailToken, error) {
	if token == "" || len(token) > 100 {
		return store.EmailToken{}, errBadLink
	}
	t, err := s.Store.UseEmailToken(ctx, linkHash(token))
	if errors.Is(err, store.ErrNotFound) || err == nil && t.Purpose != purpose {
		return store.EmailToken{}, errBadLink
	}
	return t, err
}

// RequestPasswordReset emails a password reset link to the account that
// verified email, if any. It answers the same, and as fast, whether or
// not there is one: the request is checked and counted (per client
// address, and per address asked about whether it exists or not), then
// the search and the letter happen in the background.
func (s *Service) RequestPasswordReset(ctx context.Context, email string) error {
	if err := s.limitEmailRequest(ctx); err != nil {
		return err
	}
	email = strings.TrimSpace(email)
	if err := store.ValidateEmail(email); err != nil {
		return err
	}
	if err := s.limitEmailTo(ctx, email); err != nil {
		return err
	}
	s.later(ctx, "password reset", func(ctx context.Context) {
		acct, ok := s.accountOfVerified(ctx, email)
		if ok {
			s.sendLink(ctx, acct, store.ResetPasswordLink)
		}
	})
	return nil
}

// accountOfVerified is the account whose verified address email is.
func (s *Service) accountOfVerified(ctx context.Context, email string) (store.Account, bool) {
	login, err := s.Store.VerifiedEmailLogin(ctx, email)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			s.Log.WarnContext(ctx, "mail: finding an address's account failed", "err", err)
		}
		return store.Account{}, false
	}
	acct, err := s.Store.Account(ctx, login)
	if err != nil || acct.Bot || !acct.EmailVerified || store.NormalizeEmail(acct.Email) != store.NormalizeEmail(email) {
		return store.Account{}, false
	}
	return acct, true
}

// ResetPassword uses a password reset link's token: the account gets
// password, and every session of it ends (its tokens stop working, its
// sockets close), as a stolen session should.
func (s *Service) ResetPassword(ctx context.Context, token, password string) error {
	if err := s.limitEmailRequest(ctx); err != nil {
		return err
	}
	if err := store.ValidatePassword(password); err != nil {
		return err // before the token is used up
	}
	t, err := s.useLink(ctx, token, store.ResetPasswordLink)
	if err != nil {
		return err
	}
	acct, err := s.Store.Account(ctx, t.Login)
	if errors.Is(err, store.ErrNotFound) || err == nil && acct.Email != t.Email {
		return store.Invalidf("invalid token: the account's address changed since this link was sent")
	}
	if err != nil {
		return err
	}
	hash, err := s.Passwords.Hash(ctx, password)
	if err != nil {
		return err
	}
	if err := s.Store.ChangePassword(ctx, t.Login, acct.PassHash, hash); err != nil {
		return err
	}
	return s.Sessions.EndOthers(ctx, t.Login, "")
}

// SetEmailDigests turns me's email digests on or off.
func (s *Service) SetEmailDigests(ctx context.Context, me store.UserRef, on bool) (*store.User, error) {
	if err := s.limit(ctx, ratelimit.RoomChange, me); err != nil {
		return nil, err
	}
	if err := s.Store.SetEmailDigests(ctx, me.Login, on); err != nil {
		return nil, err
	}
	return s.Me(ctx, me)
}

// unsubscribeToken is the token of login's unsubscribe link: the login
// and its HMAC under the unsubscribe key. It does not expire: a digest's
// link works as long as the digest is kept.
func (e *Email) unsubscribeToken(login string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(login)) + "." + base64.RawURLEncoding.EncodeToString(e.unsubscribeMAC(login))
}

func (e *Email) unsubscribeMAC(login string) []byte {
	m := hmac.New(sha256.New, e.UnsubscribeKey)
	m.Write([]byte("chatql email digest unsubscribe\x00" + login))
	return m.Sum(nil)
}

// UnsubscribeLogin is the login whose unsubscribe link carries token;
// BAD_USER_INPUT if the token is not one.
func (s *Service) UnsubscribeLogin(token string) (string, error) {
	bad := store.Invalidf("invalid token: this is no unsubscribe link of this server")
	if s.Email == nil || len(token) > 200 {
		return "", bad
	}
	l, m, ok := strings.Cut(token, ".")
	login, err1 := base64.RawURLEncoding.DecodeString(l)
	mac, err2 := base64.RawURLEncoding.DecodeString(m)
	if !ok || err1 != nil || err2 != nil || !hmac.Equal(mac, s.Email.unsubscribeMAC(string(login))) {
		return "", bad
	}
	return string(login), nil
}

// Unsubscribe turns off the email digests of the user whose unsubscribe
// link carries token.
func (s *Service) Unsubscribe(ctx context.Context, token string) error {
	if err := s.limitEmailRequest(ctx); err != nil {
		return err
	}
	login, err := s.UnsubscribeLogin(token)
	if err != nil {
		return err
	}
	err = s.Store.SetEmailDigests(ctx, login, false)
	if errors.Is(err, store.ErrNotFound) {
		return nil // the account is gone, and its digests with it
	}
	if err == nil {
		s.Log.InfoContext(ctx, "mail: digests turned off by an unsubscribe link", slog.String("login", login))
	}
	return err
}
