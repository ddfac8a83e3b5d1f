package auth

import (
	"sync"
	"time"
)

// verdicts remembers, for a while, what the store said of a credential (a
// session, an API key): that it stands, with what it names (V), or why
// not. It holds at most limit entries.
//
// A revocation (revoke, revokeOne) must not be undone by a read that began
// before it: such a read may have seen the credential still standing, and
// caching that would let it work again until the entry expired. So a
// reader takes the epoch before it reads the store and gives it to
// remember, which keeps a "stands" verdict only if no revocation happened
// meanwhile (a refusal is always kept). The epoch counts every
// revocation, not the key's own, so a reader may miss caching now and then
// when unrelated credentials are revoked; it only costs a read later.
type verdicts[K comparable, V any] struct {
	mu      sync.Mutex
	limit   int
	entries map[K]verdict[V]
	epoch   uint64
}

// A verdict is what is known of one credential, until a deadline: it
// stands (err nil) and names val, or err says why not.
type verdict[V any] struct {
	val   V
	err   error
	until time.Time
}

func newVerdicts[K comparable, V any](limit int) verdicts[K, V] {
	return verdicts[K, V]{limit: limit, entries: map[K]verdict[V]{}}
}

// get returns k's verdict if it has not expired at now.
func (c *verdicts[K, V]) get(k K, now time.Time) (verdict[V], bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.entries[k]
	if !ok || !now.Before(v.until) {
		return verdict[V]{}, false
	}
	return v, true
}

// readEpoch is taken by a reader before it reads the store.
func (c *verdicts[K, V]) readEpoch() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.epoch
}

// remember caches the verdict of a read that began at epoch; see verdicts.
func (c *verdicts[K, V]) remember(k K, v verdict[V], epoch uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v.err == nil && epoch != c.epoch {
		return
	}
	c.set(k, v)
}

// revokeOne records k as refused for err until until.
func (c *verdicts[K, V]) revokeOne(k K, err error, until time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	c.set(k, verdict[V]{err: err, until: until})
}

// revoke records every cached credential matching match as refused for
// err until until. One not cached needs nothing: the store no longer has
// it, and a read in flight will not cache it as standing.
func (c *verdicts[K, V]) revoke(match func(K) bool, err error, until time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	for k := range c.entries {
		if match(k) {
			c.entries[k] = verdict[V]{err: err, until: until}
		}
	}
}

// set stores v for k, making room first if k is new and the cache full:
// it drops a tenth of the entries, arbitrary ones (Go maps iterate from a
// random place), so that a full cache costs amortized constant time per
// entry. Called with mu held.
func (c *verdicts[K, V]) set(k K, v verdict[V]) {
	if _, ok := c.entries[k]; !ok && len(c.entries) >= c.limit {
		for other := range c.entries {
			if len(c.entries) < c.limit*9/10 {
				break
			}
			delete(c.entries, other)
		}
	}
	c.entries[k] = v
}
