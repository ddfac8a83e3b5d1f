package ratelimit

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Action is a limited kind of write. Each has its own limit and counts per
// key: a login for what users do, a client address for what anyone may try.
type Action int

// The limited actions.
const (
	Post          Action = iota // postMessage, editMessage, addReaction, removeReaction, per user
	RoomChange                  // createRoom, joinRoom, leaveRoom, deleteRoom, addGroupMember, hideMessage, deleteMessage, blockUser, unblockUser, muteConversation, updateProfile, createWebhook, deleteWebhook, reviveWebhook, updateRoomSettings, pinMessage, unpinMessage, createInvite, revokeInvite, joinByInvite, per user
	DirectMessage               // sendDirectMessage, per user
	Signup                      // signup, per client address
	Login                       // login attempts, per login tried
	LoginAddress                // login attempts, per client address
	Typing                      // typing, per user
	Upload                      // createUpload, completeUpload, per user
	EmailTo                     // emails of links (verification, password reset), per recipient address
	EmailRequest                // asking for an emailed link or using one, per client address
	Search                      // searchMessages, searchUsers, searchRooms, per user
	Account                     // changes to how one signs in (two-factor, passkeys, identities, ending sessions), per user
	SecondFactor                // one-time codes tried (two-factor), per login
	numActions
)

var actionNames = [numActions]struct{ key, words, name string }{
	Post:          {"post", "posts", "post"},
	RoomChange:    {"room", "room changes", "room_change"},
	DirectMessage: {"dm", "direct messages", "direct_message"},
	Signup:        {"signup", "signups from this address", "signup"},
	Login:         {"login", "login attempts for this login", "login"},
	LoginAddress:  {"login-addr", "login attempts from this address", "login_address"},
	Typing:        {"typing", "typing notices", "typing"},
	Upload:        {"upload", "uploads", "upload"},
	EmailTo:       {"email-to", "emails to this address", "email_to"},
	EmailRequest:  {"email-req", "email requests from this address", "email_request"},
	Search:        {"search", "searches", "search"},
	Account:       {"account", "sign-in changes", "account"},
	SecondFactor:  {"2fa", "one-time codes tried for this login", "second_factor"},
}

// Name is the action's name in metrics: post, room_change,
// direct_message, signup, login, login_address, typing, upload,
// email_to, email_request, search, account, second_factor.
func (a Action) Name() string { return actionNames[a].name }

// Actions are every limited action.
func Actions() []Action {
	out := make([]Action, numActions)
	for i := range out {
		out[i] = Action(i)
	}
	return out
}

func (a Action) key() string      { return actionNames[a].key }
func (a Action) describe() string { return actionNames[a].words }

// Limits holds the limit of each action.
type Limits [numActions]Limit

// DefaultLimits suit a chat: a person types a few messages a second at
// most, and logs in or signs up a few times a day.
var DefaultLimits = Limits{
	Post:          {Rate: 10, Period: time.Second, Burst: 20},
	RoomChange:    {Rate: 2, Period: time.Second, Burst: 20},
	DirectMessage: {Rate: 10, Period: time.Second, Burst: 20},
	Signup:        {Rate: 5, Period: time.Minute, Burst: 5},
	Login:         {Rate: 10, Period: time.Minute, Burst: 10},
	LoginAddress:  {Rate: 10, Period: time.Minute, Burst: 10},
	Typing:        {Rate: 5, Period: time.Second, Burst: 10},
	Upload:        {Rate: 2, Period: time.Second, Burst: 20},
	EmailTo:       {Rate: 5, Period: time.Hour, Burst: 5},
	EmailRequest:  {Rate: 10, Period: time.Minute, Burst: 10},
	Search:        {Rate: 2, Period: time.Second, Burst: 10},
	Account:       {Rate: 30, Period: time.Minute, Burst: 30},
	SecondFactor:  {Rate: 5, Period: time.Minute, Burst: 5},
}

// Limiter limits how often each key may do one action.
type Limiter interface {
	// Allow counts one action of key. It returns nil when the action is
	// within the limit, and an *Exceeded error when it is not.
	Allow(ctx context.Context, key string) error
}

// Options configure New.
type Options struct {
	// Redis, when set, shares the limits among every instance that uses
	// the same Redis and Prefix.
	Redis  redis.UniversalClient
	Prefix string
	// Log receives a warning when Redis fails and limits fall back to this
	// instance's own, and a note when Redis answers again.
	Log *slog.Logger
	// Now is the clock of the in-process limits (time.Now by default).
	Now func() time.Time
	// MaxKeys bounds the keys each in-process limit remembers
	// (DefaultMaxKeys by default).
	MaxKeys int
}

// Set is the server's limiters, one per action. A nil Set, like a limit
// that is off, allows everything.
type Set struct {
	limiters [numActions]Limiter
	rejected [numActions]atomic.Uint64
	// health is the state of Redis, nil without it.
	health *redisHealth
}

// Stats are a Set's counts since it was built, for monitoring.
type Stats struct {
	// Rejected counts the actions refused over their limit, by Action.
	Rejected []uint64
	// Redis reports limits shared through Redis; RedisDown that its last
	// call failed, so that actions are counted on this instance alone, and
	// Fallbacks counts the actions so counted.
	Redis, RedisDown bool
	Fallbacks        uint64
}

// Stats returns the Set's counts now. A nil Set has counted nothing.
func (s *Set) Stats() Stats {
	st := Stats{Rejected: make([]uint64, numActions)}
	if s == nil {
		return st
	}
	for a := range st.Rejected {
		st.Rejected[a] = s.rejected[a].Load()
	}
	if s.health != nil {
		st.Redis, st.RedisDown, st.Fallbacks = true, s.health.down.Load(), s.health.fallbacks.Load()
	}
	return st
}

// New builds the limiters of limits: shared through o.Redis when it is set,
// in process otherwise. When Redis fails, an action is counted by this
// instance alone rather than refused or let through unchecked.
func New(limits Limits, o Options) *Set {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	s := &Set{}
	health := &redisHealth{log: o.Log}
	if o.Redis != nil {
		s.health = health
	}
	for a, l := range limits {
		if l.Off() {
			continue
		}
		local := NewLocal(Action(a), l, o.Now, o.MaxKeys)
		if o.Redis == nil {
			s.limiters[a] = local
		} else {
			s.limiters[a] = newRedis(o.Redis, o.Prefix, Action(a), l, local, health)
		}
	}
	return s
}

// Allow counts one action a of key (a login or a client address). When the
// limit is used up it returns an *Exceeded error and, on a plain HTTP
// request, sets its Retry-After header.
func (s *Set) Allow(ctx context.Context, a Action, key string) error {
	if s == nil || s.limiters[a] == nil {
		return nil
	}
	err := s.limiters[a].Allow(ctx, key)
	if ex, ok := errors.AsType[*Exceeded](err); ok {
		s.rejected[a].Add(1)
		noteRetryAfter(ctx, ex)
	}
	return err
}
