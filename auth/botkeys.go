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
	"sync"
	"time"

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
	e, ok := s.keys.get(string(hash), s.now())
	if !ok {
		var err error
		if e, err = s.loadKey(ctx, hash); err != nil {
			return store.UserRef{}, err
		}
	}
	if e.err != nil {
		return store.UserRef{}, e.err
	}
	if s.userEnded(e.bot.Login) {
		return store.UserRef{}, errSessionEnded
	}
	return e.bot, nil
}

// loadKey reads the bot of the key whose hash is hash, and its profile,
// and caches the answer for CheckInterval. The store finds the key by its
// hash: what a lookup's timing could tell is about the hash, which says
// nothing of any other key.
func (s *Sessions) loadKey(ctx context.Context, hash []byte) (keyEntry, error) {
	until := s.now().Add(s.interval)
	login, err := s.store.BotByKey(ctx, hash)
	switch {
	case errors.Is(err, store.ErrNotFound):
		e := keyEntry{err: errBadKey, until: until}
		s.keys.put(string(hash), e)
		return e, nil
	case err != nil:
		return keyEntry{}, fmt.Errorf("auth: read API key: %w", err)
	}
	u, err := s.store.User(ctx, login)
	switch {
	case errors.Is(err, store.ErrNotFound) || err == nil && !u.Bot:
		e := keyEntry{err: errBadKey, until: until}
		s.keys.put(string(hash), e)
		return e, nil
	case err != nil:
		return keyEntry{}, fmt.Errorf("auth: read the bot of an API key: %w", err)
	}
	e := keyEntry{bot: u.UserRef, until: until}
	s.keys.put(string(hash), e)
	return e, nil
}

// RevokeKey records that the API key whose hash is hash, of the bot login,
// was replaced or deleted (the store's row being gone already): it stops
// working on this instance at once, and the streams it opened end. The
// instance that revoked it announces it, so that every other instance calls
// RevokeKey too (see chat.Service.FollowAnnouncements); without the
// announcement the others stop accepting it within CheckInterval.
func (s *Sessions) RevokeKey(login string, hash []byte) {
	s.keys.put(string(hash), keyEntry{err: errKeyRevoked, until: s.now().Add(s.interval)})
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
	e, err := s.loadKey(ctx, hash)
	switch {
	case err != nil:
		return err
	case e.err != nil:
		return e.err
	case subtle.ConstantTimeCompare([]byte(e.bot.Login), []byte(k.login)) != 1:
		return errBadKey
	}
	return nil
}

// keyEntry is what an instance knows of an API key: its bot, or why it is
// refused, until a deadline.
type keyEntry struct {
	bot   store.UserRef
	err   error
	until time.Time
}

// keyCache remembers API keys by hash, at most limit of them.
type keyCache struct {
	mu      sync.Mutex
	limit   int
	entries map[string]keyEntry
}

func (c *keyCache) get(hash string, now time.Time) (keyEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[hash]
	if !ok || !now.Before(e.until) {
		return keyEntry{}, false
	}
	return e, true
}

func (c *keyCache) put(hash string, e keyEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[hash]; !ok && len(c.entries) >= c.limit {
		for k := range c.entries { // arbitrary ones, as sessionCache.evict
			if len(c.entries) < c.limit*9/10 {
				break
			}
			delete(c.entries, k)
		}
	}
	c.entries[hash] = e
}
