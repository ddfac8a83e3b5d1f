package embedded

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/DataDog/zstd"
)

// The zstd of pebble is third_party/purezstd (see go.mod): what
// CompressLevel writes, DecompressInto reads back, at every level
// pebble uses, for compressible and random input; the result lives in the
// buffer given, as pebble checks.
func TestPureZstdRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 200<<10)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	inputs := map[string][]byte{
		"empty":    {},
		"small":    []byte("hello, hello, hello"),
		"repeated": bytes.Repeat([]byte("chat message "), 10000),
		"random":   random,
	}
	c := zstd.NewCtx()
	for name, src := range inputs {
		for _, level := range []int{1, 3, 7, 19} {
			buf := make([]byte, 0, zstd.CompressBound(len(src)))
			compressed, err := c.CompressLevel(buf, src, level)
			if err != nil {
				t.Fatalf("%s at %d: %v", name, level, err)
			}
			if len(compressed) > 0 && &compressed[0] != &buf[:1][0] {
				t.Fatalf("%s at %d: the result left the buffer given (%d bytes, bound %d)", name, level, len(compressed), cap(buf))
			}
			dst := make([]byte, len(src))
			n, err := c.DecompressInto(dst, compressed)
			if err != nil || n != len(src) || !bytes.Equal(dst, src) {
				t.Fatalf("%s at %d: DecompressInto = %d, %v; want the %d bytes back", name, level, n, err, len(src))
			}
		}
	}
	compressed, _ := c.CompressLevel(nil, inputs["repeated"], 3)
	if _, err := c.DecompressInto(make([]byte, 10), compressed); !errors.Is(err, zstd.ErrDstTooSmall) {
		t.Fatalf("DecompressInto a short buffer = %v, want zstd.ErrDstTooSmall", err)
	}
}
