package cassandra

import (
	"sync"
	"time"

	"github.com/killrchat/chatql/store"
)

// roomBucket is one row of messages_bucket.
type roomBucket struct {
	room   string
	bucket store.Bucket
}

// maxKnownBuckets bounds the memory of a bucketBuffer. Past it the buffer
// forgets what it listed, which costs only repeated (idempotent) writes.
const maxKnownBuckets = 100_000

// bucketBuffer is the seed's write-behind buffer for messages_bucket: it
// remembers the pairs of today already listed or queued, so a post adds no
// write of its own, and queues new ones for the flusher.
type bucketBuffer struct {
	mu      sync.Mutex
	today   store.Bucket
	known   map[roomBucket]bool // listed or queued today
	pending map[roomBucket]bool // queued, not yet listed
}

func newBucketBuffer() *bucketBuffer {
	return &bucketBuffer{known: map[roomBucket]bool{}, pending: map[roomBucket]bool{}}
}

// note records that a message of room is going into bucket b, at now. It
// returns false if the caller must list the bucket itself, before the post:
// only today's bucket may wait for the flusher, as only the recent buckets
// are probed by readers while unlisted.
func (bb *bucketBuffer) note(room string, b store.Bucket, now time.Time) bool {
	today := store.BucketOf(now)
	if b != today {
		return false
	}
	rb := roomBucket{room, b}
	bb.mu.Lock()
	defer bb.mu.Unlock()
	if bb.today != today || len(bb.known) >= maxKnownBuckets {
		// A new day: yesterday's pairs will not be posted to again.
		bb.today = today
		bb.known = make(map[roomBucket]bool, len(bb.pending))
		for p := range bb.pending {
			bb.known[p] = true
		}
	}
	if !bb.known[rb] {
		bb.known[rb] = true
		bb.pending[rb] = true
	}
	return true
}

// take removes and returns the queued pairs.
func (bb *bucketBuffer) take() []roomBucket {
	bb.mu.Lock()
	defer bb.mu.Unlock()
	out := make([]roomBucket, 0, len(bb.pending))
	for rb := range bb.pending {
		out = append(out, rb)
	}
	clear(bb.pending)
	return out
}

// requeue queues again a pair whose write failed.
func (bb *bucketBuffer) requeue(rb roomBucket) {
	bb.mu.Lock()
	defer bb.mu.Unlock()
	bb.pending[rb] = true
}

// forget drops what the buffer knows of a deleted room, so that a new room
// of the same name gets its buckets listed again.
func (bb *bucketBuffer) forget(room string) {
	bb.mu.Lock()
	defer bb.mu.Unlock()
	for rb := range bb.known {
		if rb.room == room {
			delete(bb.known, rb)
		}
	}
}
