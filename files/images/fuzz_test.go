package images

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"testing"
)

// fuzzLimits are small, so that the fuzzer reaches the pixel checks often.
var fuzzLimits = Limits{MaxPixels: 64 * 64, MaxTotalPixels: 4 * 64 * 64}

// FuzzClean feeds Clean arbitrary bytes: it must never panic, must return
// exactly one of its sentinel errors or a clean image within the limits,
// and a clean image must itself come through Clean unchanged in size.
func FuzzClean(f *testing.F) {
	f.Add(encodeJPEG(f, photo(16, 12)))
	f.Add(insertAfterSOI(encodeJPEG(f, photo(8, 8)), exifAPP1(6)))
	f.Add(insertAfterIHDR(encodePNG(f, photo(9, 7)), pngChunk("tEXt", []byte("a\x00b"))))
	f.Add(animatedGIF(f, 8, 8, 3))
	f.Add(webpFile(vp8xChunk(vp8xEXIF, 5, 5), riffChunk("VP8L", solidVP8L(5, 5, color.RGBA{9, 8, 7, 255})), riffChunk("EXIF", exifTIFF(1))))
	f.Add(hugePNG(50_000, 50_000))
	f.Add([]byte("<html>"))
	f.Fuzz(func(t *testing.T, data []byte) {
		clean, info, err := Clean(data, fuzzLimits)
		if err != nil {
			if !isSentinel(err) {
				t.Fatalf("error %v is none of the sentinels", err)
			}
			return
		}
		if int64(info.Width)*int64(info.Height) > fuzzLimits.MaxPixels || info.Width <= 0 || info.Height <= 0 {
			t.Fatalf("accepted a %dx%d image", info.Width, info.Height)
		}
		cfg, _, err := image.DecodeConfig(bytes.NewReader(clean))
		if err != nil || cfg.Width != info.Width || cfg.Height != info.Height {
			t.Fatalf("clean image is %dx%d (%v), info says %dx%d", cfg.Width, cfg.Height, err, info.Width, info.Height)
		}
		if Sniff(clean) != info.ContentType {
			t.Fatalf("clean image sniffs as %s, info says %s", Sniff(clean), info.ContentType)
		}
		again, info2, err := Clean(clean, fuzzLimits)
		if err != nil || info2.Width != info.Width || info2.Height != info.Height {
			t.Fatalf("cleaning a clean image: %v, %+v then %+v", err, info, info2)
		}
		if !bytes.Equal(again, clean) {
			t.Fatal("cleaning a clean image changed it")
		}
	})
}

// isSentinel reports whether err wraps exactly one of the package's errors.
func isSentinel(err error) bool {
	n := 0
	for _, s := range []error{ErrUnsupported, ErrTooManyPixels, ErrCorrupt} {
		if errors.Is(err, s) {
			n++
		}
	}
	return n == 1
}
