package ratelimit

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"golang.org/x/time/rate"
)

// DefaultMaxKeys is how many keys an in-process limit remembers at most.
// Keys idle long enough for their bucket to be full again are forgotten
// first; past the bound, the least recently used key is forgotten even if
// its bucket was not full yet, which can only let that key through sooner.
const DefaultMaxKeys = 100_000

// Local limits an action in this process: a token bucket (x/time/rate) per
// key, in an LRU list bounded to maxKeys.
type Local struct {
	action Action
	limit  Limit
	every  rate.Limit
	refill time.Duration
	now    func() time.Time

	mu      sync.Mutex
	buckets *simplelru.LRU[string, *bucket]
}

type bucket struct {
	tokens *rate.Limiter
	used   time.Time
}

var _ Limiter = (*Local)(nil)

// NewLocal limits action to limit (which must not be off) per key in this
// process. now is its clock (time.Now when nil); maxKeys bounds the keys it
// remembers (DefaultMaxKeys when not positive).
func NewLocal(action Action, limit Limit, now func() time.Time, maxKeys int) *Local {
	if now == nil {
		now = time.Now
	}
	if maxKeys <= 0 {
		maxKeys = DefaultMaxKeys
	}
	buckets, err := simplelru.NewLRU[string, *bucket](maxKeys, nil)
	if err != nil {
		panic(err) // only for a size that is not positive
	}
	return &Local{
		action:  action,
		limit:   limit,
		every:   rate.Limit(float64(limit.Rate) / limit.Period.Seconds()),
		refill:  limit.refill(),
		now:     now,
		buckets: buckets,
	}
}

// Allow counts one action of key.
func (l *Local) Allow(_ context.Context, key string) error {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.forgetIdle(now)
	b, ok := l.buckets.Get(key)
	if !ok {
		b = &bucket{tokens: rate.NewLimiter(l.every, l.limit.Burst)}
		l.buckets.Add(key, b)
	}
	b.used = now
	if b.tokens.AllowN(now, 1) {
		return nil
	}
	wait := time.Duration((1 - b.tokens.TokensAt(now)) / float64(l.every) * float64(time.Second))
	return &Exceeded{Action: l.action, Limit: l.limit, RetryAfter: wait}
}

// forgetIdle drops the keys whose buckets have filled up again since their
// last use: the LRU list is in order of last use, so they are at its end.
// Each key is dropped once, so this costs O(1) per Allow over time.
func (l *Local) forgetIdle(now time.Time) {
	for {
		_, b, ok := l.buckets.GetOldest()
		if !ok || now.Sub(b.used) < l.refill {
			return
		}
		l.buckets.RemoveOldest()
	}
}

// keys is how many keys the limit remembers.
func (l *Local) keys() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buckets.Len()
}
