package embedded

import (
	"hash/maphash"
	"slices"
	"sync"
)

// The lightweight transactions of the Cassandra model (INSERT ... IF NOT
// EXISTS, UPDATE ... IF EXISTS, DELETE ... IF) become read, check and write
// under the locks of the partitions involved. A lock per partition would
// grow without bound, so partitions share a fixed array of mutexes, picked by
// a hash of the partition key.
//
// Because unrelated partitions may share a stripe, the only deadlock-free
// order is the stripes' own: every operation takes all the stripes it needs
// at once, each once, in ascending index. (Ordering by partition, such as
// "room before users, users by login", would deadlock when two partitions
// of one operation hash to the stripes of another's in the opposite order.)
// An operation that learns which partitions it needs only after reading,
// DeleteRoom, takes what it knows, reads again and widens until the set it
// holds covers what it read.

// lockStripes is the number of mutexes. Operations hold them for the length
// of a local read and write, so a few hundred keep collisions rare.
const lockStripes = 256

type stripes struct {
	seed maphash.Seed
	mu   [lockStripes]sync.Mutex
}

// A lockSet is the sorted, duplicate-free stripe indexes of some partitions.
type lockSet []int

// of returns the lock set of the partitions, named by their key prefixes.
func (s *stripes) of(partitions ...key) lockSet {
	set := make(lockSet, len(partitions))
	for i, p := range partitions {
		set[i] = int(maphash.Bytes(s.seed, p) % lockStripes)
	}
	slices.Sort(set)
	return slices.Compact(set)
}

func (s *stripes) lock(set lockSet) {
	for _, i := range set {
		s.mu[i].Lock()
	}
}

func (s *stripes) unlock(set lockSet) {
	for _, i := range slices.Backward(set) {
		s.mu[i].Unlock()
	}
}

// covers reports whether every stripe of other is in set.
func (set lockSet) covers(other lockSet) bool {
	for _, i := range other {
		if _, found := slices.BinarySearch(set, i); !found {
			return false
		}
	}
	return true
}
