package embedded

import (
	"slices"
	"sync"

	"github.com/killrchat/chatql/store"
)

// maxListedPartitions bounds the listings the store remembers: about 100
// bytes each, plus 8 a day.
const maxListedPartitions = 1 << 16

// listedDays remembers, per listing partition (a room's days in
// messages_bucket, an author's in author_buckets, an inbox's log days), the
// days the store knows are listed, so that a post does not read its day's
// listing back (three point reads a post) and a page does not scan it. The
// store is the only writer of its pebble (the directory's lock), so what it
// wrote and read is what is on disk, but for the races this guards against:
//
//   - A listing is remembered only after the batch that wrote it committed,
//     or after a read found it.
//   - Deleting a partition (a room's deletion) forgets it after its commit.
//     A listing read or written before a deletion, remembered after it, may
//     be gone: it is not remembered, and what was known of its partition is
//     dropped (that partition may have been the one deleted, or not).
//   - A partition's complete list is kept only from a scan that no deletion
//     and no drop overtook, merged with the days remembered meanwhile (a
//     post committing while the page scanned): a dropped day would be
//     missing from it.
type listedDays struct {
	mu sync.Mutex
	// deletions counts forget's calls, drops the times remembered days
	// were let go (a remembering that a deletion overtook, the bound).
	deletions, drops uint64
	parts            map[string]*dayList
}

// dayList is what is known of one partition's listed days, ascending.
type dayList struct {
	// days never changes once shared: adding a day makes a new slice, so
	// a page may read it without the lock.
	days []store.Bucket
	// complete says days are all the partition lists (from a scan), not
	// only those seen written.
	complete bool
}

// A listingStamp is taken before reading or writing a listing, for
// remember and fill to tell what overtook them.
type listingStamp struct{ deletions, drops uint64 }

// stamp returns the stamp to give to remember and fill.
func (l *listedDays) stamp() listingStamp {
	l.mu.Lock()
	defer l.mu.Unlock()
	return listingStamp{l.deletions, l.drops}
}

// has reports whether day is known listed in partition p.
func (l *listedDays) has(p key, day store.Bucket) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	d := l.parts[string(p)]
	if d == nil {
		return false
	}
	_, found := slices.BinarySearch(d.days, day)
	return found
}

// all returns every day partition p lists, if known.
func (l *listedDays) all(p key) ([]store.Bucket, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if d := l.parts[string(p)]; d != nil && d.complete {
		return d.days, true
	}
	return nil, false
}

// remember records that day is listed in p, as written or read after
// stamp was taken.
func (l *listedDays) remember(p key, day store.Bucket, stamp listingStamp) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if stamp.deletions != l.deletions {
		delete(l.parts, string(p))
		l.drops++
		return
	}
	d := l.entry(p)
	i, found := slices.BinarySearch(d.days, day)
	if !found {
		d.days = slices.Insert(slices.Clip(d.days), i, day)
	}
}

// fill records the days a scan of p found, started after stamp was taken,
// as p's complete list.
func (l *listedDays) fill(p key, days []store.Bucket, stamp listingStamp) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if stamp != (listingStamp{l.deletions, l.drops}) {
		return
	}
	d := l.entry(p)
	merged := slices.Concat(days, d.days)
	slices.Sort(merged)
	d.days, d.complete = slices.Compact(merged), true
}

// forget drops what is known of partition p, deleted.
func (l *listedDays) forget(p key) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.deletions++
	delete(l.parts, string(p))
}

// entry returns p's entry, made room for: at the bound, every partition
// is let go. The caller holds l.mu.
func (l *listedDays) entry(p key) *dayList {
	if d := l.parts[string(p)]; d != nil {
		return d
	}
	if l.parts == nil || len(l.parts) >= maxListedPartitions {
		if l.parts != nil {
			l.drops++
		}
		l.parts = make(map[string]*dayList)
	}
	d := &dayList{}
	l.parts[string(p)] = d
	return d
}
