package images

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"image/gif"
	"testing"
)

func TestThumbnailSize(t *testing.T) {
	cases := []struct{ w, h, side, wantW, wantH int }{
		{4000, 3000, 640, 640, 480},
		{3000, 4000, 640, 480, 640},
		{4000, 3000, 160, 160, 120},
		{100, 50, 640, 100, 50},   // never scaled up
		{640, 640, 640, 640, 640}, // fits exactly
		{641, 640, 640, 640, 639},
		{10000, 10, 160, 160, 1}, // at least one pixel
		{10, 10000, 160, 1, 160},
		{1001, 1000, 100, 100, 100}, // rounded
		{50_000, 50_000, 160, 160, 160},
	}
	for _, c := range cases {
		if w, h := ThumbnailSize(c.w, c.h, c.side); w != c.wantW || h != c.wantH {
			t.Errorf("ThumbnailSize(%d, %d, %d) = %d, %d, want %d, %d", c.w, c.h, c.side, w, h, c.wantW, c.wantH)
		}
	}
}

func TestThumbnailOfPhotoIsAJPEGOfTheComputedSize(t *testing.T) {
	clean, _, err := Clean(encodeJPEG(t, photo(1000, 750)), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for _, side := range []int{SmallThumbnailSide, PreviewSide, 2000} {
		data, typ, w, h, err := Thumbnail(clean, side)
		if err != nil {
			t.Fatal(err)
		}
		wantW, wantH := ThumbnailSize(1000, 750, side)
		if typ != JPEG || w != wantW || h != wantH {
			t.Errorf("side %d: %s %dx%d, want image/jpeg %dx%d", side, typ, w, h, wantW, wantH)
		}
		assertConfig(t, data, typ, wantW, wantH)
	}
}

func TestThumbnailsDecodeOnceAndMatchThumbnail(t *testing.T) {
	clean := encodeJPEG(t, photo(900, 1200))
	thumbs, err := Thumbnails(clean, SmallThumbnailSide, PreviewSide)
	if err != nil {
		t.Fatal(err)
	}
	if len(thumbs) != 2 {
		t.Fatalf("%d thumbnails, want 2", len(thumbs))
	}
	for i, side := range []int{SmallThumbnailSide, PreviewSide} {
		data, typ, w, h, err := Thumbnail(clean, side)
		if err != nil {
			t.Fatal(err)
		}
		got := thumbs[i]
		if !bytes.Equal(got.Data, data) || got.ContentType != typ || got.Width != w || got.Height != h {
			t.Errorf("side %d: Thumbnails gave %s %dx%d, Thumbnail %s %dx%d", side, got.ContentType, got.Width, got.Height, typ, w, h)
		}
	}
	if _, err := Thumbnails(clean, 160, -1); err == nil {
		t.Error("a negative side is accepted")
	}
}

func TestThumbnailKeepsTransparencyAsPNG(t *testing.T) {
	sticker := image.NewNRGBA(image.Rect(0, 0, 400, 200))
	for y := 50; y < 150; y++ {
		for x := 100; x < 300; x++ {
			sticker.Set(x, y, color.NRGBA{255, 128, 0, 255})
		}
	}
	data, typ, w, h, err := Thumbnail(encodePNG(t, sticker), SmallThumbnailSide)
	if err != nil {
		t.Fatal(err)
	}
	if typ != PNG || w != 160 || h != 80 {
		t.Fatalf("%s %dx%d, want image/png 160x80", typ, w, h)
	}
	assertConfig(t, data, PNG, 160, 80)
	if _, typ, _, _, err := Thumbnail(encodePNG(t, photo(400, 200)), SmallThumbnailSide); err != nil || typ != JPEG {
		t.Errorf("an opaque PNG's thumbnail is %s (%v), want image/jpeg", typ, err)
	}
}

// twoFrameGIF returns a 300×150 animation: a red first frame covering
// frame1 of the screen (the rest transparent), then a white full frame.
func twoFrameGIF(t *testing.T, frame1 image.Rectangle) []byte {
	t.Helper()
	palette := color.Palette{color.Transparent, color.RGBA{255, 0, 0, 255}, color.White}
	red := image.NewPaletted(frame1, palette)
	for i := range red.Pix {
		red.Pix[i] = 1
	}
	white := image.NewPaletted(image.Rect(0, 0, 300, 150), palette)
	for i := range white.Pix {
		white.Pix[i] = 2
	}
	var buf bytes.Buffer
	err := gif.EncodeAll(&buf, &gif.GIF{
		Image:  []*image.Paletted{red, white},
		Delay:  []int{10, 10},
		Config: image.Config{ColorModel: palette, Width: 300, Height: 150},
	})
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestThumbnailOfAnimatedGIFIsItsFirstFrame(t *testing.T) {
	data, typ, w, h, err := Thumbnail(twoFrameGIF(t, image.Rect(0, 0, 300, 150)), 150)
	if err != nil {
		t.Fatal(err)
	}
	if typ != JPEG || w != 150 || h != 75 {
		t.Fatalf("%s %dx%d, want image/jpeg 150x75", typ, w, h)
	}
	thumb, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if !near(thumb.At(75, 37), color.RGBA{255, 0, 0, 255}) {
		t.Errorf("thumbnail is %v, want the red first frame", thumb.At(75, 37))
	}
}

func TestThumbnailOfGIFWithSmallFirstFrameIsTransparentAround(t *testing.T) {
	data, typ, w, h, err := Thumbnail(twoFrameGIF(t, image.Rect(100, 50, 200, 100)), 300)
	if err != nil {
		t.Fatal(err)
	}
	if typ != PNG || w != 300 || h != 150 {
		t.Fatalf("%s %dx%d, want image/png 300x150", typ, w, h)
	}
	thumb, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, a := thumb.At(10, 10).RGBA(); a != 0 {
		t.Errorf("outside the first frame: alpha %d, want transparent", a)
	}
	if !near(thumb.At(150, 75), color.RGBA{255, 0, 0, 255}) {
		t.Errorf("inside the first frame: %v, want red", thumb.At(150, 75))
	}
}

func TestThumbnailRefusesBadInput(t *testing.T) {
	if _, _, _, _, err := Thumbnail([]byte("<html>"), 160); !errors.Is(err, ErrUnsupported) {
		t.Errorf("HTML: %v, want ErrUnsupported", err)
	}
	if _, _, _, _, err := Thumbnail(hugePNG(50_000, 50_000), 160); !errors.Is(err, ErrTooManyPixels) {
		t.Errorf("huge PNG: %v, want ErrTooManyPixels", err)
	}
	jpegData := encodeJPEG(t, photo(64, 64))
	if _, _, _, _, err := Thumbnail(jpegData[:len(jpegData)/2], 160); !errors.Is(err, ErrCorrupt) {
		t.Errorf("truncated JPEG: %v, want ErrCorrupt", err)
	}
	if _, _, _, _, err := Thumbnail(jpegData, 0); err == nil {
		t.Error("a zero side is accepted")
	}
}

// assertConfig checks that data is an image of typ and size w×h.
func assertConfig(t *testing.T, data []byte, typ string, w, h int) {
	t.Helper()
	if got := Sniff(data); got != typ {
		t.Errorf("thumbnail sniffs as %s, want %s", got, typ)
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil || cfg.Width != w || cfg.Height != h {
		t.Errorf("thumbnail is %dx%d (%v), want %dx%d", cfg.Width, cfg.Height, err, w, h)
	}
}
