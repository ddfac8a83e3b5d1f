// Package bufpool lends the byte buffers that the server encodes its
// largest answers in (a page of messages, the operation's data holding it,
// then the response holding that), so that each does not leave a buffer
// of its size to the garbage collector: a history page allocated about
// 55 KB in them.
package bufpool

import (
	"bytes"
	"sync"
)

// newSize is the capacity of a new buffer; maxKept is the largest kept:
// one that grew past it (an unusual answer) is left to the collector
// rather than held by the pool, and so is one given back smaller than a
// new one (a small answer's, written in a buffer of its own).
const (
	newSize = 16 << 10
	maxKept = 1 << 20
)

var pool = sync.Pool{New: func() any { b := make([]byte, 0, newSize); return &b }}

// Get returns an empty buffer.
func Get() *[]byte {
	b := pool.Get().(*[]byte)
	*b = (*b)[:0]
	return b
}

// Put gives b back. Nothing may use *b afterwards: its next borrower
// writes over it.
func Put(b *[]byte) {
	if c := cap(*b); c >= newSize && c <= maxKept {
		pool.Put(b)
	}
}

// GetBuffer returns an empty buffer as a bytes.Buffer, for writers that
// want an io.Writer. Its bytes may go back with PutBytes.
func GetBuffer() *bytes.Buffer {
	return bytes.NewBuffer(*Get())
}

// PutBytes gives back the buffer that b was written in, whether it came
// from this pool or not (Get empties it). Nothing may use b, or any slice
// of its array, afterwards.
func PutBytes(b []byte) { Put(&b) }
