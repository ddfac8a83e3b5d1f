package ratelimit

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// RedisTimeout bounds how long an action waits for Redis to count it;
// past that, it is counted in process (see Redis).
const RedisTimeout = 250 * time.Millisecond

// Redis limits an action across every instance that shares a Redis:
// redis_rate's GCRA, one Redis key per action and key, which expires once
// the key is idle.
//
// When Redis fails (down, unreachable, too slow), the action is counted by
// the fallback, this instance's own in-process limit: neither refused
// (logins and chat keep working through a Redis outage) nor let through
// unchecked (password guessing stays bounded, per instance). The first
// failure is logged as a warning, and recovery as a note.
type Redis struct {
	limiter  *redis_rate.Limiter
	prefix   string // of the keys, with the action's name
	action   Action
	limit    Limit
	gcra     redis_rate.Limit
	fallback *Local
	health   *redisHealth
}

var _ Limiter = (*Redis)(nil)

// newRedis limits action to limit (which must not be off) per key across
// the instances that share client and prefix, falling back to fallback.
func newRedis(client redis.UniversalClient, prefix string, action Action, limit Limit, fallback *Local, health *redisHealth) *Redis {
	return &Redis{
		limiter:  redis_rate.NewLimiter(client),
		prefix:   prefix + action.key() + ":",
		action:   action,
		limit:    limit,
		gcra:     redis_rate.Limit{Rate: limit.Rate, Period: limit.Period, Burst: limit.Burst},
		fallback: fallback,
		health:   health,
	}
}

// Allow counts one action of key in Redis, or in process if Redis fails.
func (r *Redis) Allow(ctx context.Context, key string) error {
	rctx, cancel := context.WithTimeout(ctx, RedisTimeout)
	res, err := r.limiter.Allow(rctx, r.prefix+key, r.gcra)
	cancel()
	if err != nil {
		if ctx.Err() == nil { // not the caller giving up
			r.health.failed(ctx, err)
		}
		r.health.fallbacks.Add(1)
		return r.fallback.Allow(ctx, key)
	}
	r.health.answered(ctx)
	if res.Allowed > 0 {
		return nil
	}
	return &Exceeded{Action: r.action, Limit: r.limit, RetryAfter: res.RetryAfter}
}

// redisHealth logs when the limits lose Redis and when they get it back,
// once each, however many actions fail in between.
type redisHealth struct {
	log       *slog.Logger
	down      atomic.Bool
	fallbacks atomic.Uint64 // actions counted in process because Redis failed
}

func (h *redisHealth) failed(ctx context.Context, err error) {
	if !h.down.Swap(true) {
		h.log.WarnContext(ctx, "rate limits: Redis failed; counting actions on this instance alone until it answers again", "err", err)
	}
}

func (h *redisHealth) answered(ctx context.Context) {
	if h.down.Load() && h.down.Swap(false) {
		h.log.InfoContext(ctx, "rate limits: Redis answers again; limits are shared again")
	}
}
