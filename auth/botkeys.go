package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/killrchat/chatql/ratelimit"
	"github.com/killrchat/chatql/store"
)

// BotKeyPrefix starts every bot's API key, so that a bearer token is
// recognised as one without a lookup, and a leaked key is easy to find.
const BotKeyPrefix = "chatql_bot_"

// botKeyBytes is the randomness of a key: far beyond guessing, so one
// SHA-256, not a slow password hash, is a safe way to store it.
const botKeyBytes = 32

// botKeyShown is how many characters of a key its owner's list shows.
const botKeyShown = len(BotKeyPrefix) + 6

// keySessionPrefix starts the session id of a caller authenticated by an
// API key, which Watch follows like a login's session.
const keySessionPrefix = "key:"

var (
	errBadKey     = fmt.Errorf("%w: the API key is not valid (revoked, replaced or never issued)", ErrUnauthenticated)
	errKeyRevoked = fmt.Errorf("%w: the API key was revoked", ErrUnauthenticated)
)

// NewBotKey returns a fresh API key, to show once to the bot's owner, and
// its stored half.
func NewBotKey() (string, store.BotKey, error) {
	raw := make([]byte, botKeyBytes)
	if _, err := rand.Read(raw); err != nil {
		return "", store.BotKey{}, err
	}
	key := BotKeyPrefix + base64.RawURLEncoding.EncodeToString(raw)
	return key, store.BotKey{Hash: hashBotKey(key), Prefix: key[:botKeyShown]}, nil
}

// IsBotKey reports whether token has the shape of an API key rather than
// of an access token.
func IsBotKey(token string) bool { return strings.HasPrefix(token, BotKeyPrefix) }

func hashBotKey(key string) []byte {
	h := sha256.Sum256([]byte(key))
	return h[:]
}

// keySession is the session id of a caller authenticated by the key whose
// hash is hash.
func keySession(hash []byte) string { return keySessionPrefix + hex.EncodeToString(hash) }

// authenticateKey returns ctx carrying the bot the API key belongs to, or
// the reason it is refused. A bad key counts against its client address's
// login attempts (ratelimit.LoginAddress), so that keys cannot be tried
// fast; past the limit, bad keys are answered RATE_LIMITED.
func (s *Sessions) authenticateKey(ctx context.Context, key string) context.Context {
	hash := hashBotKey(key)
	bot, err := s.checkKey(ctx, hash)
	if errors.Is(err, ErrUnauthenticated) {
		if lerr := s.limits.Allow(ctx, ratelimit.LoginAddress, ratelimit.AddressFrom(ctx)); lerr != nil {
			err = lerr
		}
	}
	if err != nil {
		return WithRejectedToken(ctx, err)
	}
	return context.WithValue(ctx, callerKey{}, caller{user: bot, session: keySession(hash), bot: true})
}

// checkKey answers from the key cache, or reads the key and its bot.
func (s *Sessions) checkKey(ctx context.Context, hash []byte) (store.UserRef, error) {
	v, ok := s.keys.get(string(hash), s.now())
	if !ok {
		var err error
		if v, err = s.loadKey(ctx, hash); err != nil {
			return store.UserRef{}, err
		}
	}
	if v.err != nil {
		return store.UserRef{}, v.err
	}
	if s.userEnded(v.val.Login) {
		return store.UserRef{}, errSessionEnded
	}
	return v.val, nil
}

// loadKey reads the bot of the key whose hash is hash, and its profile,
// and caches the answer for CheckInterval. The store finds the key by its
// hash: what a lookup's timing could tell is about the hash, which says
// nothing of any other key.
func (s *Sessions) loadKey(ctx context.Context, hash []byte) (verdict[store.UserRef], error) {
	until, epoch := s.now().Add(s.interval), s.keys.readEpoch()
	v := verdict[store.UserRef]{err: errBadKey, until: until}
	login, err := s.store.BotByKey(ctx, hash)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return verdict[store.UserRef]{}, fmt.Errorf("auth: read API key: %w", err)
	default:
		u, err := s.store.User(ctx, login)
		switch {
		case errors.Is(err, store.ErrNotFound) || err == nil && !u.Bot:
		case err != nil:
			return verdict[store.UserRef]{}, fmt.Errorf("auth: read the bot of an API key: %w", err)
		default:
			v.val, v.err = u.UserRef, nil
		}
	}
	s.keys.remember(string(hash), v, epoch)
	return v, nil
}

// RevokeKey records that the API key whose hash is hash, of the bot login,
// was replaced or deleted (the store's row being gone already): it stops
// working on this instance at once, and the streams it opened end. The
// instance that revoked it announces it, so that every other instance calls
// RevokeKey too (see chat.Service.FollowAnnouncements); without the
// announcement the others stop accepting it within CheckInterval.
func (s *Sessions) RevokeKey(login string, hash []byte) {
	s.keys.revokeOne(string(hash), errKeyRevoked, s.now().Add(s.interval))
	k := sessionKey{login, keySession(hash)}
	s.ended(func(other sessionKey) bool { return other == k })
}

// RevokeKeyHex is RevokeKey of a hash in hex, as announcements carry it;
// a malformed one is ignored.
func (s *Sessions) RevokeKeyHex(login, hash string) {
	if b, err := hex.DecodeString(hash); err == nil {
		s.RevokeKey(login, b)
	}
}

// loadKeySession reads again the key a watched stream was opened with.
func (s *Sessions) loadKeySession(ctx context.Context, k sessionKey) error {
	hash, err := hex.DecodeString(strings.TrimPrefix(k.id, keySessionPrefix))
	if err != nil {
		return errBadKey
	}
	v, err := s.loadKey(ctx, hash)
	switch {
	case err != nil:
		return err
	case v.err != nil:
		return v.err
	case subtle.ConstantTimeCompare([]byte(v.val.Login), []byte(k.login)) != 1:
		return errBadKey
	}
	return nil
}
