package images

import (
	"image"
	"image/color"
	"runtime"
	"testing"
)

// allocated returns the bytes f allocates in all, freed or not: an upper
// bound of what it holds at its peak.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// nrgba64 returns a w×h image of 16-bit channels, which a PNG keeps and
// decodes to 8 bytes a pixel.
func nrgba64(w, h int) *image.NRGBA64 {
	img := image.NewNRGBA64(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.SetNRGBA64(x, y, color.NRGBA64{uint16(x * 65), uint16(y * 65), 30000, 60000})
		}
	}
	return img
}

func TestCleanAndThumbnailStayWithinTheMemoryBound(t *testing.T) {
	const w, h = 1000, 800
	cases := map[string][]byte{
		"JPEG turned upright":       insertAfterSOI(encodeJPEG(t, photo(w, h)), exifAPP1(6)),
		"16-bit PNG turned upright": insertAfterIHDR(encodePNG(t, nrgba64(w, h)), pngChunk("eXIf", exifTIFF(6))),
		"GIF":                       animatedGIF(t, w, h, 2),
	}
	for name, data := range cases {
		// The documented bound, with the GIF's frames and the scaler's
		// buffer for a preview.
		bound := uint64(2*len(data) + 20*w*h + 2*w*h + 64*PreviewSide*PreviewSide + 1<<20)
		var clean []byte
		if got := allocated(func() {
			var err error
			if clean, _, err = Clean(data, Limits{}); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}); got > bound {
			t.Errorf("%s: Clean allocated %d bytes, more than the bound %d", name, got, bound)
		}
		if got := allocated(func() {
			if _, err := Thumbnails(clean, SmallThumbnailSide, PreviewSide); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}); got > bound {
			t.Errorf("%s: Thumbnails allocated %d bytes, more than the bound %d", name, got, bound)
		}
		t.Logf("%s: bound %d", name, bound)
	}
}
