package auth

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"strings"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"github.com/killrchat/chatql/store"
)

// Two-factor sign-in: TOTP codes (RFC 6238: 6 digits, 30 s steps, SHA-1,
// one step of clock skew either way, as every authenticator app makes them)
// and one-time recovery codes. The TOTP key is stored sealed with AES-GCM
// under a key derived from the JWT secret; recovery codes as their SHA-256
// (50 random bits each, and tried at a limited rate).
//
// A sign-in that needs a code answers ErrTwoFactorRequired with a
// challenge: a short-lived token, authenticated by an HMAC under another
// key derived from the JWT secret, naming the login and what the code will
// complete (a new session, or the refresh of a session that began without
// a second factor).

// ChallengeTTL is how long a sign-in challenge may be answered.
const ChallengeTTL = 5 * time.Minute

const (
	totpPeriod = 30
	totpSkew   = 1
	// recoveryCodeChars is the length of a recovery code, in base32
	// characters (5 bits each), shown as two groups of five.
	recoveryCodeChars = 10
	challengePrefix   = "chatql_2fa."
)

var totpOpts = totp.ValidateOpts{Period: totpPeriod, Skew: totpSkew, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1}

// ErrTwoFactorRequired means the sign-in needs a one-time code: the error
// is a *TwoFactorRequired carrying the challenge to answer with it.
var ErrTwoFactorRequired = errors.New("two-factor code required")

// TwoFactorRequired is the answer of a sign-in or a refresh that needs a
// one-time code: verifyTwoFactor(challenge, code) completes it.
type TwoFactorRequired struct {
	Challenge string
	ExpiresAt time.Time
}

func (e *TwoFactorRequired) Error() string {
	return "two-factor sign-in is on for this account: answer the challenge with a code from the authenticator app (or a recovery code)"
}

func (e *TwoFactorRequired) Is(target error) bool { return target == ErrTwoFactorRequired }

// Challenge is what a sign-in challenge stands for.
type Challenge struct {
	Login string `json:"l"`
	// Session and Generation name the session whose refresh the code
	// completes; empty for a new sign-in.
	Session    string `json:"s,omitempty"`
	Generation int    `json:"g,omitempty"`
	// Method and Device describe the new session (SignIn).
	Method string `json:"m,omitempty"`
	Device string `json:"d,omitempty"`
	// Proof binds a password sign-in to the password hash it checked: a
	// password changed meanwhile voids the challenge.
	Proof   []byte `json:"p,omitempty"`
	Expires int64  `json:"e"`
}

// secretKeys are the keys Sessions derives from the JWT secret for
// two-factor sign-in.
type secretKeys struct {
	seal      cipher.AEAD
	challenge []byte
}

func newSecretKeys(secret []byte) secretKeys {
	derive := func(label string) []byte {
		m := hmac.New(sha256.New, secret)
		m.Write([]byte(label))
		return m.Sum(nil)
	}
	block, _ := aes.NewCipher(derive("chatql sealed secrets")) // a 32-byte key never fails
	aead, _ := cipher.NewGCM(block)
	return secretKeys{seal: aead, challenge: derive("chatql sign-in challenges")}
}

// Seal encrypts and authenticates a secret to store (a TOTP key) for
// login: it opens only under this server's JWT secret, for the same login.
func (s *Sessions) Seal(login string, plain []byte) []byte {
	nonce := randomBytes(s.secrets.seal.NonceSize())
	return s.secrets.seal.Seal(nonce, nonce, plain, []byte(login))
}

// Open reverses Seal.
func (s *Sessions) Open(login string, sealed []byte) ([]byte, error) {
	n := s.secrets.seal.NonceSize()
	if len(sealed) < n {
		return nil, errors.New("auth: sealed secret too short")
	}
	plain, err := s.secrets.seal.Open(nil, sealed[:n], sealed[n:], []byte(login))
	if err != nil {
		return nil, fmt.Errorf("auth: sealed secret of %q does not open (was the JWT secret changed?): %w", login, err)
	}
	return plain, nil
}

// IssueChallenge returns the token of c, valid for ChallengeTTL.
func (s *Sessions) IssueChallenge(c Challenge) *TwoFactorRequired {
	exp := s.now().Add(ChallengeTTL).Truncate(time.Second)
	c.Expires = exp.Unix()
	body, _ := json.Marshal(c)
	enc := b64.EncodeToString(body)
	return &TwoFactorRequired{Challenge: challengePrefix + enc + "." + b64.EncodeToString(mac(s.secrets.challenge, enc)), ExpiresAt: exp}
}

// ParseChallenge checks a challenge token and returns what it stands for.
// Errors wrap ErrUnauthenticated.
func (s *Sessions) ParseChallenge(token string) (Challenge, error) {
	invalid := fmt.Errorf("%w: the challenge is not valid; sign in again", ErrUnauthenticated)
	rest, ok := strings.CutPrefix(token, challengePrefix)
	if !ok {
		return Challenge{}, invalid
	}
	enc, sig, ok := strings.Cut(rest, ".")
	got, err := b64.DecodeString(sig)
	if !ok || err != nil || !hmac.Equal(got, mac(s.secrets.challenge, enc)) {
		return Challenge{}, invalid
	}
	body, err := b64.DecodeString(enc)
	var c Challenge
	if err != nil || json.Unmarshal(body, &c) != nil || c.Login == "" {
		return Challenge{}, invalid
	}
	if !s.now().Before(time.Unix(c.Expires, 0)) {
		return Challenge{}, fmt.Errorf("%w: the challenge has expired; sign in again", ErrUnauthenticated)
	}
	return c, nil
}

// PasswordProof is what a challenge keeps of the password hash it was
// issued after (Challenge.Proof).
func PasswordProof(hash []byte) []byte {
	h := sha256.Sum256(hash)
	return h[:16]
}

// A TOTPKey is a new TOTP key for an authenticator app: its base32
// secret, its otpauth:// URI, and the URI as a QR code (a PNG image).
type TOTPKey struct {
	Secret, URI string
	QRCode      []byte
}

// qrCodeSize is the width and height of a key's QR code, in pixels: large
// enough for a phone's camera at arm's length on any screen.
const qrCodeSize = 256

// NewTOTPKey returns a new random TOTP key of login's, for an
// authenticator app.
func NewTOTPKey(issuer, login string) (TOTPKey, error) {
	key, err := totp.Generate(totp.GenerateOpts{Issuer: issuer, AccountName: login, Period: totpPeriod, SecretSize: 20, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		return TOTPKey{}, fmt.Errorf("auth: new TOTP key: %w", err)
	}
	img, err := key.Image(qrCodeSize, qrCodeSize)
	if err != nil {
		return TOTPKey{}, fmt.Errorf("auth: the QR code of a TOTP key: %w", err)
	}
	var qr bytes.Buffer
	if err := png.Encode(&qr, img); err != nil {
		return TOTPKey{}, fmt.Errorf("auth: the QR code of a TOTP key: %w", err)
	}
	return TOTPKey{Secret: key.Secret(), URI: key.URL(), QRCode: qr.Bytes()}, nil
}

// MatchTOTP reports whether code is the TOTP code of secret (base32) at
// now, give or take a step, and of a later step than after (a code, once
// accepted, is never accepted again); and the step it is of.
func MatchTOTP(secret, code string, now time.Time, after int64) (int64, bool) {
	code = strings.TrimSpace(code)
	if len(code) != 6 {
		return 0, false
	}
	step := now.Unix() / totpPeriod
	for s := step - totpSkew; s <= step+totpSkew; s++ {
		if s <= after {
			continue
		}
		want, err := totp.GenerateCodeCustom(secret, time.Unix(s*totpPeriod, 0), totpOpts)
		if err == nil && subtle.ConstantTimeCompare([]byte(want), []byte(code)) == 1 {
			return s, true
		}
	}
	return 0, false
}

// TOTPCode is the code of secret at t (for tests and tools).
func TOTPCode(secret string, t time.Time) (string, error) {
	return totp.GenerateCodeCustom(secret, t, totpOpts)
}

var recoveryEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// NewRecoveryCodes returns n new recovery codes ("abcde-fghij") and the
// hashes to store of them.
func NewRecoveryCodes(n int) ([]string, [][]byte) {
	codes := make([]string, n)
	hashes := make([][]byte, n)
	for i := range codes {
		raw := strings.ToLower(recoveryEncoding.EncodeToString(randomBytes(8)))[:recoveryCodeChars]
		codes[i] = raw[:5] + "-" + raw[5:]
		hashes[i] = HashRecoveryCode(codes[i])
	}
	return codes, hashes
}

// HashRecoveryCode is what the store keeps of a recovery code: the SHA-256
// of its characters, lower case, without spaces or dashes.
func HashRecoveryCode(code string) []byte {
	norm := strings.Map(func(r rune) rune {
		switch {
		case r == '-' || r == ' ':
			return -1
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return r
	}, code)
	h := sha256.Sum256([]byte(norm))
	return h[:]
}

// MarkTwoFactor records that the session proved a second factor (its user
// just turned two-factor sign-in on from it), so that its refreshes need
// no code.
func (s *Sessions) MarkTwoFactor(ctx context.Context, login, session string) error {
	for range 3 {
		sess, err := s.store.Session(ctx, login, session)
		if err != nil {
			return err
		}
		next := sess
		next.TwoFactor = true
		err = s.store.RotateSession(ctx, next, sess.Generation)
		if !errors.Is(err, store.ErrConflict) { // a refresh ran meanwhile: read it again
			return err
		}
	}
	return fmt.Errorf("session of %q keeps changing: %w", login, store.ErrConflict)
}

// ResumeRefresh completes the refresh that c challenged, the code having
// been checked: the session, now marked as having proven a second factor,
// rotates from the generation the challenge names, as Refresh would have.
func (s *Sessions) ResumeRefresh(ctx context.Context, c Challenge) (Pair, store.User, error) {
	sess, err := s.store.Session(ctx, c.Login, c.Session)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return Pair{}, store.User{}, errSessionEnded
	case err != nil:
		return Pair{}, store.User{}, err
	case sess.Generation != c.Generation:
		return Pair{}, store.User{}, fmt.Errorf("%w: the challenge was used already; sign in again", ErrUnauthenticated)
	}
	sess.TwoFactor = true
	rt := refreshToken{login: c.Login, session: c.Session, generation: c.Generation}
	p, u, err := s.rotate(ctx, sess, rt, "")
	if errors.Is(err, errRotatedMeanwhile) {
		return Pair{}, store.User{}, s.revokeReused(ctx, rt)
	}
	return p, u, err
}
