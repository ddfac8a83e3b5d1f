package bufpool

import "testing"

func TestGetIsEmpty(t *testing.T) {
	b := Get()
	*b = append(*b, "a page"...)
	Put(b)
	for range 10 {
		if got := Get(); len(*got) != 0 {
			t.Fatalf("Get returned a buffer holding %q", *got)
		}
	}
}

func TestPutLeavesLargeBuffers(t *testing.T) {
	large := make([]byte, 0, maxKept+1)
	Put(&large)
	for range 100 {
		if got := Get(); cap(*got) > maxKept {
			t.Fatalf("the pool kept a buffer of %d bytes", cap(*got))
		}
	}
}

func TestPutBytesLeavesSmallBuffers(t *testing.T) {
	for range 100 {
		PutBytes(make([]byte, 10, newSize-1)) // a small answer's own buffer
	}
	for range 100 {
		if got := Get(); cap(*got) < newSize {
			t.Fatalf("the pool lent a buffer of %d bytes, smaller than a new one (%d)", cap(*got), newSize)
		}
	}
}

func TestPutBytesLendsItsArrayEmpty(t *testing.T) {
	b := append(*Get(), "a query's data"...)
	PutBytes(b)
	for range 10 {
		if got := GetBuffer(); got.Len() != 0 {
			t.Fatalf("GetBuffer returned a buffer holding %q", got.Bytes())
		}
	}
}
