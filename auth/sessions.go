package auth

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/killrchat/chatql/ratelimit"
	"github.com/killrchat/chatql/store"
)

// Sessions ties access tokens to stored sessions: logins start them, refresh
// tokens rotate them, logout and password changes end them, and every use
// of an access token checks that its session still stands.
//
// A session is read from the store at most once per CheckInterval per
// instance: each instance caches the answer (yes or no) for that long, in
// at most CacheSize entries. So a session ended on one instance stops
// working on every other within CheckInterval (at once on the instance
// that ended it), and a request costs a store read only when its session's
// entry is older than that. Open streams are watched: every CheckInterval
// the sessions they belong to are read again (one read per session, however
// many streams share it), and a stream whose session ended, or whose access
// token expired, is ended (see Watch).
//
// Bots' API keys (see BotKeyPrefix) are checked the same way: read from
// the store at most once per CheckInterval per instance, refused at once
// on the instance that revokes one (RevokeKey), and their streams watched
// like sessions'.
type Sessions struct {
	store      store.Store
	tokens     *Tokens
	key        []byte
	secrets    secretKeys
	refreshTTL time.Duration
	interval   time.Duration
	now        func() time.Time

	// cache remembers whether each session stands; keys does so for
	// API keys, with their bots. limits counts bad keys.
	cache  verdicts[sessionKey, struct{}]
	keys   verdicts[string, store.UserRef]
	limits *ratelimit.Set

	watchers *watchers

	mu sync.Mutex
	// endedUsers are the logins whose every session ended (a deleted
	// account) with when this instance may stop remembering it: by then no
	// session of theirs read before the end is still cached.
	endedUsers map[string]time.Time
}

// SessionConfig configures Sessions.
type SessionConfig struct {
	Store  store.Store
	Tokens *Tokens
	// Secret derives the key that authenticates refresh tokens (the JWT
	// secret).
	Secret []byte
	// RefreshTTL is how long a refresh token may be used; each refresh
	// issues a new one with a new lifetime.
	RefreshTTL time.Duration
	// CheckInterval is how long an instance trusts what it read of a
	// session (DefaultCheckInterval if zero).
	CheckInterval time.Duration
	// CacheSize caps the sessions an instance remembers, and the API keys
	// (DefaultCacheSize if zero).
	CacheSize int
	// Limits counts the bad API keys presented, per client address, as
	// login attempts (nil: no limit).
	Limits *ratelimit.Set
}

// Defaults of SessionConfig.
const (
	DefaultCheckInterval = 2 * time.Second
	DefaultCacheSize     = 100_000
)

// Pair is what a login or a refresh returns: a short-lived access token,
// and the refresh token that gets the next pair.
type Pair struct {
	AccessToken    string
	AccessExpires  time.Time
	RefreshToken   string
	RefreshExpires time.Time
	Session        string
}

var (
	errSessionEnded = fmt.Errorf("%w: the session has ended (logged out, revoked or expired); log in again", ErrUnauthenticated)
	errNoSession    = fmt.Errorf("%w: the token belongs to no session; log in again", ErrUnauthenticated)
	errTokenExpired = fmt.Errorf("%w: the token has expired; refresh it or log in again", ErrUnauthenticated)
	errReused       = fmt.Errorf("%w: the refresh token was already used, so its session is revoked; log in again", ErrUnauthenticated)
)

// NewSessions returns Sessions on cfg.Store. Watched streams are checked
// until ctx ends.
func NewSessions(ctx context.Context, cfg SessionConfig) (*Sessions, error) {
	if cfg.RefreshTTL <= 0 {
		return nil, fmt.Errorf("auth: refresh token lifetime must be positive, got %v", cfg.RefreshTTL)
	}
	if cfg.CheckInterval <= 0 {
		cfg.CheckInterval = DefaultCheckInterval
	}
	if cfg.CacheSize <= 0 {
		cfg.CacheSize = DefaultCacheSize
	}
	s := &Sessions{
		store:      cfg.Store,
		tokens:     cfg.Tokens,
		key:        refreshKey(cfg.Secret),
		secrets:    newSecretKeys(cfg.Secret),
		refreshTTL: cfg.RefreshTTL,
		interval:   cfg.CheckInterval,
		now:        time.Now,
		cache:      newVerdicts[sessionKey, struct{}](cfg.CacheSize),
		keys:       newVerdicts[string, store.UserRef](cfg.CacheSize),
		limits:     cfg.Limits,
		endedUsers: map[string]time.Time{},
	}
	s.watchers = newWatchers(func() time.Time { return s.now() })
	go s.watch(ctx)
	return s, nil
}

// Start opens a new session for u, who has just proven who they are with
// their password alone, and returns its first pair of tokens.
func (s *Sessions) Start(ctx context.Context, u store.UserRef) (Pair, error) {
	return s.StartWith(ctx, u, SignIn{Method: store.SignInPassword})
}

// StartWith opens a new session for u, who has just proven who they are as
// how says, and returns its first pair of tokens. The session shows the
// client's address and its device's name.
func (s *Sessions) StartWith(ctx context.Context, u store.UserRef, how SignIn) (Pair, error) {
	now := s.now()
	sess := store.Session{
		Login: u.Login, ID: newSessionID(), CreatedAt: now, ExpiresAt: now.Add(s.refreshTTL),
		Device: deviceName(ctx, how.Device), Address: clientAddress(ctx), Method: how.Method,
		LastSeenAt: now, TwoFactor: how.TwoFactor,
	}
	refresh := mintRefresh(s.key, u.Login, sess.ID, sess.Generation, "")
	sess.RefreshHash = hashRefresh(refresh)
	if err := s.store.CreateSession(ctx, sess); err != nil {
		return Pair{}, err
	}
	return s.pair(u, sess, refresh)
}

func (s *Sessions) pair(u store.UserRef, sess store.Session, refresh string) (Pair, error) {
	access, exp, err := s.tokens.IssueFor(u, sess.ID)
	if err != nil {
		return Pair{}, err
	}
	return Pair{AccessToken: access, AccessExpires: exp, RefreshToken: refresh, RefreshExpires: sess.ExpiresAt, Session: sess.ID}, nil
}

// RefreshGrace is how long after a rotation the client that asked for it
// may ask again with the same refresh token and get the same session's
// current pair, rather than end the session: a client that lost the answer
// of its refresh (a page reloaded, a connection dropped) retries with the
// token it still holds. It proves it is the client that asked by sending
// the same clientRefreshId, a secret it made for that refresh and kept
// until it stored the answer (as a message's clientMessageId). Without it,
// or later, a second use is a reuse: a thief holding only the old token
// still ends the session.
const RefreshGrace = 30 * time.Second

// Refresh exchanges a refresh token for a new pair, and the user's
// profile. The token is used up: the rotation is a compare-and-set on the
// session's generation. A token that was already used (or that lost a race
// with another use of itself) ends its whole session: whoever holds the
// newer tokens, a thief or the rightful client, must log in again. The
// exception is the retry of a refresh by the client that made it, within
// RefreshGrace (see there): clientRefreshID, which may be "", names the
// refresh.
func (s *Sessions) Refresh(ctx context.Context, token, clientRefreshID string) (Pair, store.User, error) {
	if err := validateClientRefreshID(clientRefreshID); err != nil {
		return Pair{}, store.User{}, err
	}
	rt, err := parseRefresh(s.key, token)
	if err != nil {
		return Pair{}, store.User{}, err
	}
	for read := 0; ; read++ {
		sess, err := s.store.Session(ctx, rt.login, rt.session)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return Pair{}, store.User{}, errSessionEnded
		case err != nil:
			return Pair{}, store.User{}, err
		}
		current := rt.generation == sess.Generation && subtle.ConstantTimeCompare(hashRefresh(token), sess.RefreshHash) == 1
		retried := !current && s.retriedInGrace(rt, sess, clientRefreshID)
		if !current && !retried {
			return Pair{}, store.User{}, s.revokeReused(ctx, rt)
		}
		if !sess.TwoFactor {
			// A session that began without a second factor, of a user who
			// turned two-factor sign-in on since: the refresh needs a code.
			tf, err := s.store.TwoFactor(ctx, rt.login)
			switch {
			case err == nil && tf.Enabled:
				return Pair{}, store.User{}, s.IssueChallenge(Challenge{Login: rt.login, Session: sess.ID, Generation: sess.Generation, Method: sess.Method})
			case err != nil && !errors.Is(err, store.ErrNotFound):
				return Pair{}, store.User{}, err
			}
		}
		if retried {
			return s.reissue(ctx, sess, clientRefreshID)
		}
		p, u, err := s.rotate(ctx, sess, rt, clientRefreshID)
		if errors.Is(err, errRotatedMeanwhile) && read == 0 {
			continue // another use of this token won: read what it made
		}
		return p, u, err
	}
}

// retriedInGrace reports whether rt, authentic, is the token sess's last
// rotation replaced, used again within RefreshGrace of it (LastSeenAt is
// the rotation's time) by the client whose refresh clientRefreshID made
// sess's current token.
func (s *Sessions) retriedInGrace(rt refreshToken, sess store.Session, clientRefreshID string) bool {
	return clientRefreshID != "" && rt.generation == sess.Generation-1 &&
		s.now().Sub(sess.LastSeenAt) < RefreshGrace &&
		subtle.ConstantTimeCompare(hashRefresh(mintRefresh(s.key, rt.login, sess.ID, sess.Generation, clientRefreshID)), sess.RefreshHash) == 1
}

// reissue answers a retried refresh with sess's current pair: its refresh
// token again, and a new access token. Nothing is written.
func (s *Sessions) reissue(ctx context.Context, sess store.Session, clientRefreshID string) (Pair, store.User, error) {
	u, err := s.store.User(ctx, sess.Login)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return Pair{}, store.User{}, errors.Join(errSessionEnded, s.End(ctx, sess.Login, sess.ID))
	case err != nil:
		return Pair{}, store.User{}, err
	}
	p, err := s.pair(u.UserRef, sess, mintRefresh(s.key, sess.Login, sess.ID, sess.Generation, clientRefreshID))
	return p, u, err
}

// errRotatedMeanwhile is rotate's answer when the session rotated between
// its read and the rotation.
var errRotatedMeanwhile = errors.New("auth: the session rotated meanwhile")

// rotate issues the next pair of the session sess, as read at the
// generation of the refresh token rt, for the refresh clientRefreshID
// names; errRotatedMeanwhile if it rotated since.
func (s *Sessions) rotate(ctx context.Context, sess store.Session, rt refreshToken, clientRefreshID string) (Pair, store.User, error) {
	u, err := s.store.User(ctx, rt.login)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return Pair{}, store.User{}, errors.Join(errSessionEnded, s.End(ctx, rt.login, rt.session))
	case err != nil:
		return Pair{}, store.User{}, err
	}
	next := sess
	next.Generation++
	refresh := mintRefresh(s.key, rt.login, sess.ID, next.Generation, clientRefreshID)
	next.RefreshHash = hashRefresh(refresh)
	next.ExpiresAt = s.now().Add(s.refreshTTL)
	// "Last seen" is the last refresh: written with the rotation, at no
	// cost of its own, and at most one access token's lifetime old.
	next.LastSeenAt = s.now()
	if addr := clientAddress(ctx); addr != "" {
		next.Address = addr
	}
	switch err := s.store.RotateSession(ctx, next, sess.Generation); {
	case errors.Is(err, store.ErrConflict):
		return Pair{}, store.User{}, errRotatedMeanwhile
	case errors.Is(err, store.ErrNotFound):
		return Pair{}, store.User{}, errSessionEnded
	case err != nil:
		return Pair{}, store.User{}, err
	}
	p, err := s.pair(u.UserRef, next, refresh)
	return p, u, err
}

// revokeReused ends the session of a refresh token used a second time.
func (s *Sessions) revokeReused(ctx context.Context, rt refreshToken) error {
	if err := s.End(ctx, rt.login, rt.session); err != nil {
		return err
	}
	return errReused
}

// End revokes one session (logout): its tokens stop working at once on
// this instance and within CheckInterval on the others.
func (s *Sessions) End(ctx context.Context, login, session string) error {
	if err := s.store.DeleteSession(ctx, login, session); err != nil {
		return err
	}
	s.ended(func(k sessionKey) bool { return k == sessionKey{login, session} })
	return nil
}

// EndOthers revokes every session of login but keep (a password change).
func (s *Sessions) EndOthers(ctx context.Context, login, keep string) error {
	if err := s.store.DeleteSessions(ctx, login, keep); err != nil {
		return err
	}
	s.ended(func(k sessionKey) bool { return k.login == login && k.id != keep })
	return nil
}

// EndUser records that every session of login has ended, the store's
// sessions being gone already (the account was deleted, on this instance or
// on another, which announced it): the user's tokens stop working on this
// instance at once, even those whose session it had read and trusted, and
// their streams end.
func (s *Sessions) EndUser(login string) {
	now := s.now()
	s.mu.Lock()
	for l, until := range s.endedUsers {
		if !now.Before(until) {
			delete(s.endedUsers, l)
		}
	}
	// A read of a session that began before the end may finish after it and
	// trust the session for one interval: remember the end for two.
	s.endedUsers[login] = now.Add(2 * s.interval)
	s.mu.Unlock()
	s.ended(func(k sessionKey) bool { return k.login == login })
}

// userEnded reports whether EndUser ended login's sessions lately.
func (s *Sessions) userEnded(login string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	until, ok := s.endedUsers[login]
	return ok && s.now().Before(until)
}

// ended records locally that the sessions matching match have ended, and
// ends their streams.
func (s *Sessions) ended(match func(sessionKey) bool) {
	s.cache.revoke(match, errSessionEnded, s.now().Add(s.interval))
	for _, w := range s.watchers.matching(match) {
		w.fire(errSessionEnded)
	}
}

// Verify checks an access token and that its session stands.
func (s *Sessions) Verify(ctx context.Context, token string) (Claims, error) {
	c, err := s.tokens.Parse(token)
	if err != nil {
		return Claims{}, err
	}
	if c.Session == "" {
		return Claims{}, errNoSession
	}
	if err := s.check(ctx, sessionKey{c.User.Login, c.Session}); err != nil {
		return Claims{}, err
	}
	return c, nil
}

// Authenticate returns ctx carrying the caller the access token names, or
// the bot an API key (BotKeyPrefix...) belongs to, or, if the token or its
// session fails verification, the reason, for UserFrom to report.
func (s *Sessions) Authenticate(ctx context.Context, token string) context.Context {
	if IsBotKey(token) {
		return s.authenticateKey(ctx, token)
	}
	c, err := s.Verify(ctx, token)
	if err != nil {
		return WithRejectedToken(ctx, err)
	}
	return withClaims(ctx, c)
}

// Middleware authenticates requests that carry 'Authorization: Bearer
// <token>' with Authenticate. Requests without the header pass through
// anonymous.
func (s *Sessions) Middleware(next http.Handler) http.Handler {
	return middleware(s.Authenticate, next)
}

// check answers from the cache, or reads the session.
func (s *Sessions) check(ctx context.Context, k sessionKey) error {
	if s.userEnded(k.login) {
		return errSessionEnded
	}
	if v, ok := s.cache.get(k, s.now()); ok {
		return v.err
	}
	return s.load(ctx, k)
}

// load reads the session, or the API key, and caches the answer.
func (s *Sessions) load(ctx context.Context, k sessionKey) error {
	if strings.HasPrefix(k.id, keySessionPrefix) {
		return s.loadKeySession(ctx, k)
	}
	now, epoch := s.now(), s.cache.readEpoch()
	sess, err := s.store.Session(ctx, k.login, k.id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		s.cache.remember(k, verdict[struct{}]{err: errSessionEnded, until: now.Add(s.interval)}, epoch)
		return errSessionEnded
	case err != nil:
		return fmt.Errorf("auth: read session: %w", err)
	}
	until := now.Add(s.interval)
	if sess.ExpiresAt.Before(until) {
		until = sess.ExpiresAt
	}
	s.cache.remember(k, verdict[struct{}]{until: until}, epoch)
	return nil
}

// OnEnd calls end once, with a cause wrapping ErrUnauthenticated, when the
// access token of ctx's caller expires or its session ends, unless stop
// was called first; stop is nil, and end never called, if ctx has no
// caller with a session (anonymous). Watching costs no goroutine and no
// context: a place in the set the periodic check reads and among those
// whose token expires, which stop gives back.
func (s *Sessions) OnEnd(ctx context.Context, end func(cause error)) (stop func()) {
	c, err := callerFrom(ctx)
	if err != nil || c.session == "" {
		return nil
	}
	var expires int64
	if !c.bot { // an API key does not expire
		expires = c.expires
	}
	return s.watchers.add(sessionKey{c.user.Login, c.session}, expires, end).stop
}

// Watch returns a context derived from ctx that ends, with a cause wrapping
// ErrUnauthenticated, when the access token of ctx's caller expires or its
// session ends (OnEnd); nil if ctx has no caller with a session
// (anonymous). A stream running in it ends with its credentials.
func (s *Sessions) Watch(ctx context.Context) context.Context {
	wctx, cancel := context.WithCancelCause(ctx)
	stop := s.OnEnd(ctx, cancel)
	if stop == nil {
		cancel(nil)
		return nil
	}
	context.AfterFunc(wctx, stop)
	return wctx
}

// Watching is how many sessions have streams watching them.
func (s *Sessions) Watching() int {
	return s.watchers.count()
}

// watch reads the watched sessions again every CheckInterval, until ctx
// ends, and ends the streams of those that ended.
func (s *Sessions) watch(ctx context.Context) {
	tick := time.NewTicker(s.interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for _, k := range s.watchers.sessions() {
			if err := s.load(ctx, k); errors.Is(err, ErrUnauthenticated) {
				s.ended(func(other sessionKey) bool { return other == k })
			}
		}
	}
}

type sessionKey struct{ login, id string }
