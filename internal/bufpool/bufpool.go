// Package bufpool lends the byte buffers that the server encodes its
// largest answers in (a page of messages, then the response holding it),
// so that each does not leave a buffer of its size to the garbage
// collector: a history page allocated about 40 KB in them.
package bufpool

import "sync"

// maxKept is the largest buffer kept: one that grew past it (an unusual
// answer) is left to the collector rather than held by the pool.
const maxKept = 1 << 20

var pool = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// Get returns an empty buffer.
func Get() *[]byte {
	b := pool.Get().(*[]byte)
	*b = (*b)[:0]
	return b
}

// Put gives b back. Nothing may use *b afterwards: its next borrower
// writes over it.
func Put(b *[]byte) {
	if cap(*b) <= maxKept {
		pool.Put(b)
	}
}
