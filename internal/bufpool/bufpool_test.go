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
