package chat

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/killrchat/chatql/store"
)

// Defaults of the profile cache.
const (
	// DefaultProfileTTL bounds how long an instance shows names it read,
	// should the announcement of their change be lost (a broker outage).
	DefaultProfileTTL = 10 * time.Second
	// DefaultProfileCacheSize caps the users an instance remembers.
	DefaultProfileCacheSize = 100_000
	// profileReadTimeout bounds a batch's store read, which runs for
	// several requests at once, detached from each.
	profileReadTimeout = 10 * time.Second
)

// A Profile is what the API shows of a user in a UserSummary: their names
// and avatar as they are now, whether they are a bot, or that the account
// was deleted.
type Profile struct {
	store.UserRef
	// Avatar is the user's picture; nil for none (or when the profile
	// could not be read).
	Avatar  *store.Picture
	Deleted bool
	// Bot marks a bot account.
	Bot bool
}

// Profiles is an instance's cache of its users' current names and avatars,
// which every UserSummary shows instead of the copy a room, message or
// event stored when it was written (see the schema's UserSummary).
//
// A miss is read from the store in a batch: misses that come while a read
// is in flight wait together for the next one, so a page of 50 messages by
// 50 uncached authors costs one or two store reads, and a page whose
// authors are cached, none. Entries live for TTL at most, and are dropped
// at once when a profile changes or an account is deleted: on this
// instance by Forget, on the others by the announcement Follow receives on
// the broker's profiles topic. A read that was in flight when an entry was
// dropped is not cached (its result may predate the change).
type Profiles struct {
	store store.Store
	log   *slog.Logger
	ttl   time.Duration
	now   func() time.Time

	mu       sync.Mutex
	lru      *simplelru.LRU[string, cachedProfile]
	epoch    atomic.Uint64 // counts the drops (under mu); a read started in an older epoch is not cached
	next     *profRead     // the read the next misses join; nil if none waits
	current  *profRead     // the read in flight; nil if none
	inFlight bool
	reads    int // store reads made, for tests
}

type cachedProfile struct {
	Profile
	expires time.Time
}

// profRead is one batched read of names.
type profRead struct {
	logins []string
	// epoch is the cache's when the read started, and has the logins it
	// reads: a miss of one of them in the same epoch waits for it.
	epoch uint64
	has   map[string]bool
	done  chan struct{}
	names map[string]store.PublicProfile
	err   error
}

// NewProfiles returns a cache of up to size users' profiles (0 for the
// default), each kept for at most ttl (0 for the default).
func NewProfiles(st store.Store, log *slog.Logger, size int, ttl time.Duration) *Profiles {
	if size <= 0 {
		size = DefaultProfileCacheSize
	}
	if ttl <= 0 {
		ttl = DefaultProfileTTL
	}
	lru, err := simplelru.NewLRU[string, cachedProfile](size, nil)
	if err != nil {
		panic(err) // only for a size that is not positive
	}
	return &Profiles{store: st, log: log, ttl: ttl, now: time.Now, lru: lru}
}

// cached returns login's profile if it is cached and fresh.
func (p *Profiles) cached(login string) (Profile, bool) {
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.freshAt(login, now)
}

// freshAt returns login's profile if it is cached and fresh at now. The
// caller holds p.mu.
func (p *Profiles) freshAt(login string, now time.Time) (Profile, bool) {
	c, ok := p.lru.Get(login)
	if !ok || !now.Before(c.expires) {
		return Profile{}, false
	}
	return c.Profile, true
}

// Epoch changes whenever cached profiles are dropped: what was encoded
// with the names of an older epoch may show stale names.
func (p *Profiles) Epoch() uint64 {
	return p.epoch.Load() // every delivery of every subscription asks: no lock
}

// Reads is how many store reads the cache made.
func (p *Profiles) Reads() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reads
}

// Forget drops login's cached profile.
func (p *Profiles) Forget(login string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.epoch.Add(1)
	p.lru.Remove(login)
}

// Purge drops every cached profile (announcements may have been lost).
func (p *Profiles) Purge() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.epoch.Add(1)
	p.lru.Purge()
}

// Get returns u's current profile. If it cannot be read (the store fails,
// or ctx ends first), it returns the names u carries, as stored with it:
// better stale names than a failed message page.
func (p *Profiles) Get(ctx context.Context, u store.UserRef) Profile {
	if got, ok := p.cached(u.Login); ok {
		return got
	}
	r := p.join([]string{u.Login})
	select {
	case <-r.done:
	case <-ctx.Done():
		return Profile{UserRef: u}
	}
	if r.err != nil {
		return Profile{UserRef: u}
	}
	return profileOf(u.Login, r.names)
}

// Warm reads, in one batch, the profiles of the logins not cached, so that
// the resolvers of a page find them all. Errors are left for Get.
func (p *Profiles) Warm(ctx context.Context, logins []string) {
	missing := p.missing(logins)
	if len(missing) == 0 {
		return
	}
	r := p.join(missing)
	select {
	case <-r.done:
	case <-ctx.Done():
	}
}

// missing returns the logins whose profile is not cached and fresh, each
// once: a page's fifty authors are a few, often several messages in a row
// by one, so the clock is read once and the lock taken once.
func (p *Profiles) missing(logins []string) []string {
	var missing []string
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, login := range logins {
		if i > 0 && login == logins[i-1] {
			continue
		}
		if _, fresh := p.freshAt(login, now); !fresh && !slices.Contains(missing, login) {
			missing = append(missing, login)
		}
	}
	return missing
}

// join returns a read of logins: the one in flight if it reads them all and
// nothing was dropped since it started (a UserSummary's three fields miss
// at once), else the read the next misses wait for, with logins added,
// starting it if no read is in flight.
func (p *Profiles) join(logins []string) *profRead {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c := p.current; c != nil && c.epoch == p.epoch.Load() && !slices.ContainsFunc(logins, func(l string) bool { return !c.has[l] }) {
		return c
	}
	if p.next == nil {
		p.next = &profRead{done: make(chan struct{})}
	}
	r := p.next
	r.logins = append(r.logins, logins...)
	if !p.inFlight {
		p.inFlight = true
		p.next = nil
		go p.run(r)
	}
	return r
}

// run makes the read r, then each read that gathered meanwhile, until none
// waits.
func (p *Profiles) run(r *profRead) {
	for r != nil {
		p.mu.Lock()
		epoch := p.epoch.Load()
		p.reads++
		slices.Sort(r.logins)
		r.logins = slices.Compact(r.logins)
		r.epoch, r.has = epoch, make(map[string]bool, len(r.logins))
		for _, l := range r.logins {
			r.has[l] = true
		}
		p.current = r
		p.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), profileReadTimeout)
		r.names, r.err = p.store.Names(ctx, r.logins)
		cancel()
		if r.err != nil {
			p.log.Warn("reading profiles failed; showing names as stored", "users", len(r.logins), "err", r.err)
		}
		p.mu.Lock()
		if r.err == nil && epoch == p.epoch.Load() {
			expires := p.now().Add(p.ttl)
			for _, login := range r.logins {
				p.lru.Add(login, cachedProfile{Profile: profileOf(login, r.names), expires: expires})
			}
		}
		close(r.done)
		p.current = nil
		r, p.next = p.next, nil
		if r == nil {
			p.inFlight = false
		}
		p.mu.Unlock()
	}
}

// profileOf is login's profile in what a read found: a login it did not
// find is a deleted account's (or no account's).
func profileOf(login string, names map[string]store.PublicProfile) Profile {
	if u, ok := names[login]; ok {
		return Profile{UserRef: u.UserRef, Avatar: u.Avatar, Bot: u.Bot}
	}
	return Profile{UserRef: store.UserRef{Login: login}, Deleted: true}
}
