package images

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/image/webp"
)

func TestSniffByBytesNotName(t *testing.T) {
	red := color.RGBA{255, 0, 0, 255}
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"photo.png is a JPEG", encodeJPEG(t, photo(8, 8)), JPEG},
		{"cat.jpg is a PNG", encodePNG(t, photo(8, 8)), PNG},
		{"a.webp is a GIF", animatedGIF(t, 4, 4, 1), GIF},
		{"b.gif is a WebP", webpFile(riffChunk("VP8L", solidVP8L(4, 4, red))), WebP},
		{"image.jpg is HTML", []byte("<!DOCTYPE html><script>alert(1)</script>"), "text/plain; charset=utf-8"},
		{"icon.svg", []byte(`<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>`), "text/plain; charset=utf-8"},
		{"notes.txt", []byte("hello there"), "text/plain; charset=utf-8"},
		{"report.pdf", []byte("%PDF-1.7\n"), "application/pdf"},
		{"binary", []byte{0, 1, 2, 3, 0xfe, 0xff, 0x10}, "application/octet-stream"},
		{"song.mp3", []byte("ID3\x03\x00\x00\x00\x00\x00\x00"), "audio/mpeg"},
		{"clip.mp4", []byte("\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom"), "video/mp4"},
		{"voice.ogg", []byte("OggS\x00\x02"), "application/ogg"},
		{"utf-16 text", []byte("\xfe\xff\x00h\x00i"), "text/plain; charset=utf-16be"},
		{"page.xml", []byte("<?xml version=\"1.0\"?><html xmlns=\"http://www.w3.org/1999/xhtml\"/>"), "text/plain; charset=utf-8"},
		{"bitmap is not a supported image", []byte("BM\x00\x00\x00\x00\x00\x00"), "application/octet-stream"},
	}
	for _, c := range cases {
		if got := Sniff(c.data); got != c.want {
			t.Errorf("%s: Sniff = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestCleanJPEGDropsStrayBytesBetweenSegments(t *testing.T) {
	original := encodeJPEG(t, photo(16, 16))
	dirty := insertAfterSOI(original, jpegSegment(markerCOM, []byte("hi")), []byte("junk"+plantedSerial))
	if _, err := jpeg.Decode(bytes.NewReader(dirty)); err != nil {
		t.Fatalf("Go does not decode the test JPEG: %v", err)
	}
	clean, _, err := Clean(dirty, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(clean, original) {
		t.Error("the stray bytes were not dropped")
	}
}

func TestCleanReportsEachFormatsSize(t *testing.T) {
	cases := []struct {
		name string
		data []byte
		typ  string
	}{
		{"jpeg", encodeJPEG(t, photo(37, 21)), JPEG},
		{"png", encodePNG(t, photo(37, 21)), PNG},
		{"gif", animatedGIF(t, 37, 21, 3), GIF},
		{"webp", webpFile(riffChunk("VP8L", solidVP8L(37, 21, color.RGBA{0, 0, 255, 255}))), WebP},
	}
	for _, c := range cases {
		clean, info, err := Clean(c.data, Limits{})
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if info.ContentType != c.typ || info.Width != 37 || info.Height != 21 {
			t.Errorf("%s: info = %+v, want %s 37x21", c.name, info, c.typ)
		}
		if cfg, _, err := image.DecodeConfig(bytes.NewReader(clean)); err != nil || cfg.Width != 37 || cfg.Height != 21 {
			t.Errorf("%s: clean image config %+v, %v", c.name, cfg, err)
		}
		if len(info.Blurhash) != 4+2*BlurhashXComponents*BlurhashYComponents {
			t.Errorf("%s: blurhash %q", c.name, info.Blurhash)
		}
	}
}

func TestCleanRefusesWhatIsNotAnImage(t *testing.T) {
	for _, data := range [][]byte{nil, []byte("<html>"), []byte("BM not supported")} {
		if _, _, err := Clean(data, Limits{}); !errors.Is(err, ErrUnsupported) {
			t.Errorf("Clean(%q) error = %v, want ErrUnsupported", data, err)
		}
	}
}

func TestCleanJPEGDropsPersonalMetadataAndKeepsICC(t *testing.T) {
	original := encodeJPEG(t, photo(64, 48))
	dirty := insertAfterSOI(original,
		exifAPP1(1),
		jpegSegment(markerAPP1, []byte(plantedXMP)),
		jpegSegment(0xED, []byte(plantedIPTC)),
		jpegSegment(markerCOM, []byte(plantedComment)),
		jpegSegment(markerAPP2, []byte(plantedICC)),
		jpegSegment(markerAPP2, []byte("MPF\x00second image by "+plantedSerial)),
	)
	dirty = append(dirty, []byte("trailing "+plantedSerial)...)
	if !bytes.Contains(dirty, []byte(plantedSerial)) {
		t.Fatal("test image lacks the planted serial")
	}
	clean, info, err := Clean(dirty, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"Exif", "MPF", plantedSerial, plantedGPSRef, plantedComment, "xmpmeta", "Photoshop", "8BIM"} {
		if bytes.Contains(clean, []byte(secret)) {
			t.Errorf("clean JPEG still contains %q", secret)
		}
	}
	if bytes.Contains(clean, []byte{0xFF, markerAPP1}) {
		t.Error("clean JPEG still has an APP1 segment")
	}
	if !bytes.Contains(clean, []byte(plantedICC)) {
		t.Error("clean JPEG lost its ICC profile")
	}
	if !bytes.Equal(clean, insertAfterSOI(original, jpegSegment(markerAPP2, []byte(plantedICC)))) {
		t.Error("an upright JPEG was changed beyond dropping segments")
	}
	img, err := jpeg.Decode(bytes.NewReader(clean))
	if err != nil || img.Bounds().Dx() != 64 || img.Bounds().Dy() != 48 || info.Width != 64 || info.Height != 48 {
		t.Errorf("clean JPEG decodes to %v (%v), info %+v, want 64x48", img.Bounds(), err, info)
	}
}

func TestCleanJPEGAppliesOrientation6(t *testing.T) {
	red, blue := color.RGBA{255, 0, 0, 255}, color.RGBA{0, 0, 255, 255}
	sideways := insertAfterSOI(encodeJPEG(t, halves(80, 40, red, blue)),
		exifAPP1(6), jpegSegment(markerAPP2, []byte(plantedICC)))
	clean, info, err := Clean(sideways, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if info.Width != 40 || info.Height != 80 {
		t.Fatalf("info %dx%d, want 40x80", info.Width, info.Height)
	}
	img, err := jpeg.Decode(bytes.NewReader(clean))
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 40 || b.Dy() != 80 {
		t.Fatalf("clean JPEG is %v, want 40x80", b)
	}
	// A quarter turn clockwise brings the left (red) half to the top.
	if !near(img.At(20, 10), red) || !near(img.At(20, 70), blue) {
		t.Errorf("top %v, bottom %v: want red over blue", img.At(20, 10), img.At(20, 70))
	}
	if bytes.Contains(clean, []byte("Exif")) || !bytes.Contains(clean, []byte(plantedICC)) {
		t.Error("re-encoded JPEG has EXIF or lost its ICC profile")
	}
}

func TestOrientYCbCrMatchesOrientRGBA(t *testing.T) {
	src := image.NewYCbCr(image.Rect(2, 3, 12, 9), image.YCbCrSubsampleRatio420)
	for i := range src.Y {
		src.Y[i] = uint8(40 + i)
	}
	for i := range src.Cb {
		src.Cb[i], src.Cr[i] = uint8(100+i), uint8(140-i)
	}
	for o := 2; o <= 8; o++ {
		fast, slow := toRGBA(orient(src, o)), orientRGBA(toRGBA(src), o)
		if fast.Rect != slow.Rect {
			t.Fatalf("orientation %d: %v and %v", o, fast.Rect, slow.Rect)
		}
		for i := range fast.Pix {
			if d := int(fast.Pix[i]) - int(slow.Pix[i]); d < -1 || d > 1 {
				t.Fatalf("orientation %d: byte %d is %d, want %d", o, i, fast.Pix[i], slow.Pix[i])
			}
		}
	}
}

func TestOrientationsMapCorners(t *testing.T) {
	// A 3×2 image whose pixels are numbered 0..5 in reading order.
	src := image.NewRGBA(image.Rect(0, 0, 3, 2))
	for i := 0; i < 6; i++ {
		src.Pix[4*i] = uint8(i)
	}
	// The pixel numbers of each upright image's first row.
	want := map[int][]uint8{
		1: {0, 1, 2}, 2: {2, 1, 0}, 3: {5, 4, 3}, 4: {3, 4, 5},
		5: {0, 3}, 6: {3, 0}, 7: {5, 2}, 8: {2, 5},
	}
	for o, row := range want {
		got := toRGBA(orient(src, o))
		if got.Rect.Dx() != len(row) {
			t.Errorf("orientation %d: width %d, want %d", o, got.Rect.Dx(), len(row))
			continue
		}
		for x, p := range row {
			if got.Pix[4*x] != p {
				t.Errorf("orientation %d: first row %v, want %v", o, got.Pix[:4*len(row)], row)
				break
			}
		}
	}
}

func TestCleanPNGDropsTextAndEXIFChunks(t *testing.T) {
	original := encodePNG(t, photo(30, 20))
	dirty := insertAfterIHDR(original,
		pngChunk("tEXt", []byte("Author\x00"+plantedSerial)),
		pngChunk("iTXt", []byte("Comment\x00\x00\x00en\x00\x00"+plantedComment)),
		pngChunk("zTXt", []byte("Title\x00\x00x")),
		pngChunk("eXIf", exifTIFF(1)),
		pngChunk("tIME", []byte{7, 234, 11, 26, 12, 0, 0}),
		pngChunk("gAMA", []byte{0, 0, 177, 143}),
		pngChunk("acTL", []byte{0, 0, 0, 1, 0, 0, 0, 0}),
		pngChunk("prVt", []byte(plantedSerial+"2")),
	)
	clean, info, err := Clean(dirty, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{"tEXt", "iTXt", "zTXt", "eXIf", "tIME", "acTL", "prVt", plantedSerial, plantedComment} {
		if bytes.Contains(clean, []byte(gone)) {
			t.Errorf("clean PNG still contains %q", gone)
		}
	}
	if !bytes.Contains(clean, []byte("gAMA")) {
		t.Error("clean PNG lost its gamma")
	}
	img, err := png.Decode(bytes.NewReader(clean))
	if err != nil || img.Bounds().Dx() != 30 || img.Bounds().Dy() != 20 || info.Width != 30 {
		t.Errorf("clean PNG decodes to %v, %v; info %+v", img.Bounds(), err, info)
	}
}

func TestCleanPNGAppliesEXIFOrientation8(t *testing.T) {
	red, blue := color.RGBA{255, 0, 0, 255}, color.RGBA{0, 0, 255, 255}
	srgb := pngChunk("sRGB", []byte{0})
	sideways := insertAfterIHDR(encodePNG(t, halves(60, 30, red, blue)),
		srgb, pngChunk("eXIf", exifTIFF(8)))
	clean, info, err := Clean(sideways, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if info.Width != 30 || info.Height != 60 {
		t.Fatalf("info %dx%d, want 30x60", info.Width, info.Height)
	}
	img, err := png.Decode(bytes.NewReader(clean))
	if err != nil {
		t.Fatal(err)
	}
	// A quarter turn anticlockwise brings the left (red) half to the bottom.
	if img.At(15, 5) != color.Color(color.RGBA{0, 0, 255, 255}) || img.At(15, 55) != color.Color(color.RGBA{255, 0, 0, 255}) {
		t.Errorf("top %v, bottom %v: want blue over red", img.At(15, 5), img.At(15, 55))
	}
	if bytes.Contains(clean, []byte("eXIf")) || bytes.Contains(clean, []byte(plantedSerial)) || !bytes.Contains(clean, srgb) {
		t.Error("re-encoded PNG has EXIF or lost its sRGB chunk")
	}
}

func TestCleanRefusesTruncatedAndCorruptImages(t *testing.T) {
	jpegData := encodeJPEG(t, photo(64, 64))
	pngData := encodePNG(t, photo(64, 64))
	badCRC := bytes.Clone(pngData)
	badCRC[len(badCRC)-20] ^= 0xFF // inside the IDAT data or its CRC
	badScan := bytes.Clone(jpegData)
	copy(badScan[len(badScan)-60:], bytes.Repeat([]byte{0xFF, 0xC4}, 10)) // stray markers
	cases := map[string][]byte{
		"truncated JPEG":        jpegData[:len(jpegData)/2],
		"JPEG without EOI":      jpegData[:len(jpegData)-2],
		"JPEG with broken scan": badScan,
		"truncated PNG":         pngData[:len(pngData)/2],
		"PNG with a bad CRC":    badCRC,
		"truncated GIF":         animatedGIF(t, 16, 16, 2)[:60],
		"truncated WebP":        webpFile(riffChunk("VP8L", solidVP8L(8, 8, color.RGBA{1, 2, 3, 255})))[:22],
	}
	for name, data := range cases {
		if _, _, err := Clean(data, Limits{}); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: error %v, want ErrCorrupt", name, err)
		}
	}
}

// hugePNG returns a tiny PNG whose header claims w×h RGBA pixels.
func hugePNG(w, h uint32) []byte {
	ihdr := []byte{byte(w >> 24), byte(w >> 16), byte(w >> 8), byte(w),
		byte(h >> 24), byte(h >> 16), byte(h >> 8), byte(h), 8, 6, 0, 0, 0}
	data := append([]byte{}, pngSignature...)
	data = append(data, pngChunk("IHDR", ihdr)...)
	data = append(data, pngChunk("IDAT", []byte{0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01})...)
	return append(data, pngChunk("IEND", nil)...)
}

func TestCleanRefusesTooManyPixelsQuicklyWithoutAllocating(t *testing.T) {
	bomb := hugePNG(50_000, 50_000)
	if len(bomb) > 100 {
		t.Fatalf("the bomb is %d bytes", len(bomb))
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	_, _, err := Clean(bomb, Limits{})
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrTooManyPixels) {
		t.Fatalf("error %v, want ErrTooManyPixels", err)
	}
	if elapsed > 100*time.Millisecond {
		t.Errorf("refusing took %v", elapsed)
	}
	if allocated := after.TotalAlloc - before.TotalAlloc; allocated > 1<<20 {
		t.Errorf("refusing allocated %d bytes", allocated)
	}
}

func TestCleanRefusesEachFormatAboveMaxPixels(t *testing.T) {
	limits := Limits{MaxPixels: 100 * 100}
	for name, data := range map[string][]byte{
		"jpeg": encodeJPEG(t, photo(101, 100)),
		"png":  encodePNG(t, photo(100, 101)),
		"gif":  animatedGIF(t, 101, 100, 1),
		"webp": webpFile(riffChunk("VP8L", solidVP8L(200, 60, color.RGBA{1, 2, 3, 255}))),
	} {
		if _, _, err := Clean(data, limits); !errors.Is(err, ErrTooManyPixels) {
			t.Errorf("%s: error %v, want ErrTooManyPixels", name, err)
		}
	}
	if _, _, err := Clean(encodePNG(t, photo(100, 100)), limits); err != nil {
		t.Errorf("an image of exactly MaxPixels is refused: %v", err)
	}
}

func TestCleanRefusesAnimationAboveMaxTotalPixels(t *testing.T) {
	animation := animatedGIF(t, 20, 20, 10)
	if _, _, err := Clean(animation, Limits{MaxTotalPixels: 20 * 20 * 9}); !errors.Is(err, ErrTooManyPixels) {
		t.Errorf("error %v, want ErrTooManyPixels", err)
	}
	if _, _, err := Clean(animation, Limits{MaxTotalPixels: 20 * 20 * 10}); err != nil {
		t.Errorf("an animation within limits is refused: %v", err)
	}
}

// withGIFExtensions returns a GIF with extension blocks inserted after its
// header and global color table.
func withGIFExtensions(data []byte, blocks ...[]byte) []byte {
	at := gifHeaderLen + colorTableLen(data[10])
	out := append([]byte{}, data[:at]...)
	for _, b := range blocks {
		out = append(out, b...)
	}
	return append(out, data[at:]...)
}

func TestCleanGIFKeepsLoopAndDropsComments(t *testing.T) {
	comment := append(append([]byte{gifExtension, 0xFE, byte(len(plantedComment))}, plantedComment...), 0)
	xmp := append([]byte{gifExtension, gifApplication, 11}, "XMP DataXMP"...)
	xmp = append(append(xmp, 9), "creator A"...)
	xmp = append(xmp, 0)
	// A plain text extension: a 12-byte header, then the text to draw.
	plainText := append([]byte{gifExtension, 0x01, 12}, make([]byte, 12)...)
	plainText = append(append(plainText, 8), "SECRETTX"...)
	plainText = append(plainText, 0)
	dirty := withGIFExtensions(animatedGIF(t, 10, 10, 3), comment, xmp, plainText)
	dirty = append(dirty, plantedSerial...)
	before, err := gif.DecodeAll(bytes.NewReader(dirty))
	if err != nil {
		t.Fatal(err)
	}
	clean, info, err := Clean(dirty, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{plantedComment, "XMP DataXMP", plantedSerial, "SECRETTX"} {
		if bytes.Contains(clean, []byte(gone)) {
			t.Errorf("clean GIF still contains %q", gone)
		}
	}
	after, err := gif.DecodeAll(bytes.NewReader(clean))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(clean, []byte("NETSCAPE2.0")) || after.LoopCount != before.LoopCount {
		t.Errorf("loop count %d, want %d", after.LoopCount, before.LoopCount)
	}
	if len(after.Image) != 3 || info.Width != 10 || info.Height != 10 {
		t.Errorf("%d frames, info %+v", len(after.Image), info)
	}
}

func TestCleanWebPDropsEXIFAndXMPChunks(t *testing.T) {
	green := color.RGBA{0, 200, 0, 255}
	dirty := webpFile(
		vp8xChunk(vp8xEXIF|vp8xXMP|0x20, 12, 7),
		riffChunk("ICCP", []byte("fake-profile")),
		riffChunk("VP8L", solidVP8L(12, 7, green)),
		riffChunk("EXIF", exifTIFF(1)),
		riffChunk("XMP ", []byte(plantedXMP)),
	)
	if _, err := webp.Decode(bytes.NewReader(dirty)); err != nil {
		t.Fatalf("test WebP does not decode: %v", err)
	}
	clean, info, err := Clean(dirty, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{"EXIF", "XMP ", plantedSerial, "xmpmeta"} {
		if bytes.Contains(clean, []byte(gone)) {
			t.Errorf("clean WebP still contains %q", gone)
		}
	}
	if flags := clean[riffHeaderLen+8]; flags&(vp8xEXIF|vp8xXMP) != 0 || flags&0x20 == 0 {
		t.Errorf("VP8X flags %#x: want EXIF and XMP cleared, ICC kept", flags)
	}
	img, err := webp.Decode(bytes.NewReader(clean))
	if err != nil || info.Width != 12 || info.Height != 7 || !near(img.At(3, 3), green) {
		t.Errorf("clean WebP: %v, info %+v", err, info)
	}
}

func TestCleanRefusesAnimatedWebP(t *testing.T) {
	animated := webpFile(vp8xChunk(vp8xAnimation, 4, 4), riffChunk("ANIM", make([]byte, 6)), riffChunk("ANMF", make([]byte, 16)))
	if _, _, err := Clean(animated, Limits{}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("error %v, want ErrUnsupported", err)
	}
}

// near reports whether c is within a JPEG's error of want.
func near(c color.Color, want color.RGBA) bool {
	r, g, b, _ := c.RGBA()
	diff := func(a uint32, b uint8) bool {
		d := int(a>>8) - int(b)
		return d > -40 && d < 40
	}
	return diff(r, want.R) && diff(g, want.G) && diff(b, want.B)
}

func TestErrorsAreDistinct(t *testing.T) {
	all := []error{ErrUnsupported, ErrTooManyPixels, ErrCorrupt}
	for i, a := range all {
		for j, b := range all {
			if (i == j) != errors.Is(a, b) {
				t.Errorf("errors.Is(%v, %v) = %v", a, b, errors.Is(a, b))
			}
		}
		if !strings.HasPrefix(a.Error(), "images: ") {
			t.Errorf("%v lacks the package prefix", a)
		}
	}
}
