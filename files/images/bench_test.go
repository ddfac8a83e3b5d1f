package images

import (
	"image"
	"sync"
	"testing"
)

// benchPhoto is a 12-megapixel (4000×3000) JPEG with EXIF, made once:
// gradients with pseudo-random grain, so that it compresses about as badly
// as a phone's photo (a few megabytes at quality 90).
var benchPhoto = sync.OnceValue(func() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 4000, 3000))
	grain := uint32(1)
	for y := 0; y < 3000; y++ {
		for x := 0; x < 4000; x++ {
			grain = grain*1664525 + 1013904223
			n := uint8(grain>>24) & 0x1F
			p := img.Pix[img.PixOffset(x, y):]
			p[0], p[1], p[2], p[3] = uint8(x/16)+n, uint8(y/12)+n, uint8((x^y)&0x3F+96)+n/2, 255
		}
	}
	return insertAfterSOI(encodeJPEG(&testing.B{}, img), exifAPP1(1))
})

func BenchmarkClean12MP(b *testing.B) {
	benchmarkClean(b, benchPhoto())
}

func BenchmarkClean12MPOrientation6(b *testing.B) {
	photo := benchPhoto()
	benchmarkClean(b, insertAfterSOI(photo, exifAPP1(6)))
}

func benchmarkClean(b *testing.B, data []byte) {
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Clean(data, Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkThumbnail12MP(b *testing.B) {
	for _, side := range []int{SmallThumbnailSide, PreviewSide} {
		b.Run(sideName(side), func(b *testing.B) {
			clean, _, err := Clean(benchPhoto(), Limits{})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, _, _, _, err := Thumbnail(clean, side); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkThumbnails12MPBothSides(b *testing.B) {
	clean, _, err := Clean(benchPhoto(), Limits{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Thumbnails(clean, SmallThumbnailSide, PreviewSide); err != nil {
			b.Fatal(err)
		}
	}
}

// sideName names a sub-benchmark after a thumbnail side.
func sideName(side int) string {
	if side == SmallThumbnailSide {
		return "small"
	}
	return "preview"
}
