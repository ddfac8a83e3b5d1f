// Package zstd stands in for github.com/DataDog/zstd, which wraps the C
// zstd library through cgo, with the pure-Go zstd of
// github.com/klauspost/compress. It implements only what pebble (the
// embedded store) uses: NewCtx, Ctx.CompressLevel, Ctx.DecompressInto and
// CompressBound.
//
// Why: pebble compresses with DataDog/zstd whenever cgo is on, and the
// first build of that C library takes minutes on a small machine, so the
// first `go run .` would sit silent for minutes. The zstd format is a
// standard: what one implementation writes, the other reads, so data
// directories move freely between builds with and without this stand-in.
// go.mod's replace directive selects it.
package zstd

import (
	"errors"

	kzstd "github.com/klauspost/compress/zstd"
)

// Ctx compresses and decompresses, reusing its state between calls. One
// Ctx is used by one goroutine at a time.
type Ctx interface {
	// CompressLevel compresses src into dst at the zstd level, appending
	// to dst[:0]: with cap(dst) >= CompressBound(len(src)) the result
	// shares dst's memory.
	CompressLevel(dst, src []byte, level int) ([]byte, error)
	// DecompressInto decompresses src into dst, which must be large
	// enough, and returns the decompressed length.
	DecompressInto(dst, src []byte) (int, error)
}

// NewCtx returns a new Ctx.
func NewCtx() Ctx { return &ctx{encoders: map[int]*kzstd.Encoder{}} }

// CompressBound is the largest size src of srcSize bytes compresses to
// (zstd's ZSTD_COMPRESSBOUND).
func CompressBound(srcSize int) int {
	const lowLimit = 128 << 10
	margin := 0
	if srcSize < lowLimit {
		margin = (lowLimit - srcSize) >> 11
	}
	return srcSize + srcSize>>8 + margin
}

type ctx struct {
	encoders map[int]*kzstd.Encoder
	decoder  *kzstd.Decoder
}

// ErrDstTooSmall: DecompressInto's dst cannot hold the decompressed data.
var ErrDstTooSmall = errors.New("zstd: destination buffer too small")

func (c *ctx) CompressLevel(dst, src []byte, level int) ([]byte, error) {
	enc, ok := c.encoders[level]
	if !ok {
		var err error
		enc, err = kzstd.NewWriter(nil, kzstd.WithEncoderLevel(kzstd.EncoderLevelFromZstd(level)), kzstd.WithEncoderConcurrency(1))
		if err != nil {
			return nil, err
		}
		c.encoders[level] = enc
	}
	return enc.EncodeAll(src, dst[:0]), nil
}

func (c *ctx) DecompressInto(dst, src []byte) (int, error) {
	if c.decoder == nil {
		dec, err := kzstd.NewReader(nil, kzstd.WithDecoderConcurrency(1))
		if err != nil {
			return 0, err
		}
		c.decoder = dec
	}
	out, err := c.decoder.DecodeAll(src, dst[:0])
	if err != nil {
		return 0, err
	}
	if len(out) > len(dst) || len(out) > 0 && &out[0] != &dst[:1][0] {
		return 0, ErrDstTooSmall
	}
	return len(out), nil
}
