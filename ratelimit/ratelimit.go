package ratelimit

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"
)

// Action is a limited kind of write. Each has its own limit and counts per
// key: a login for what users do, a client address for what anyone may try.
type Action int

// The limited actions.
const (
	Post          Action = iota // postMessage, editMessage, addReaction, removeReaction, per user
	RoomChange                  // createRoom, joinRoom, leaveRoom, deleteRoom, addGroupMember, hideMessage, deleteMessage, blockUser, unblockUser, muteConversation, updateProfile, per user
	DirectMessage               // sendDirectMessage, per user
	Signup                      // signup, per client address
	Login                       // login attempts, per login tried
	LoginAddress                // login attempts, per client address
	Typing                      // typing, per user
	numActions
)

var actionNames = [numActions]struct{ key, words string }{
	Post:          {"post", "posts"},
	RoomChange:    {"room", "room changes"},
	DirectMessage: {"dm", "direct messages"},
	Signup:        {"signup", "signups from this address"},
	Login:         {"login", "login attempts for this login"},
	LoginAddress:  {"login-addr", "login attempts from this address"},
	Typing:        {"typing", "typing notices"},
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
	Redis  *redis.Client
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
		noteRetryAfter(ctx, ex)
	}
	return err
}
