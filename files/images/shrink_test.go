package images

import (
	"image"
	"image/color"
	"testing"
)

func TestShrinkAveragesBlocks(t *testing.T) {
	// A 10×5 image: columns 0-3 red, 4-7 blue, 8-9 half-transparent green.
	img := image.NewRGBA(image.Rect(0, 0, 10, 5))
	for y := 0; y < 5; y++ {
		for x := 0; x < 10; x++ {
			c := color.RGBA{0, 128, 0, 128}
			if x < 4 {
				c = color.RGBA{200, 0, 0, 255}
			} else if x < 8 {
				c = color.RGBA{0, 0, (uint8(y) % 2) * 100, 255}
			}
			img.SetRGBA(x, y, c)
		}
	}
	got := toRGBA(shrink(img, 2)) // a factor of 10/2 = 5
	if got.Rect.Dx() != 2 || got.Rect.Dy() != 1 {
		t.Fatalf("shrunk to %v, want 2x1", got.Rect)
	}
	// Block 0: 20 red, 5 blue pixels (2 rows of 100, 3 of 0).
	if c := got.RGBAAt(0, 0); c != (color.RGBA{160, 0, 8, 255}) {
		t.Errorf("block 0 is %v, want {160 0 8 255}", c)
	}
	// Block 1: 15 blue pixels (6 of 100, 9 of 0) and 10 green ones.
	if c := got.RGBAAt(1, 0); c != (color.RGBA{0, 51, 24, 204}) {
		t.Errorf("block 1 is %v, want {0 51 24 204}", c)
	}
}

func TestShrinkYCbCrMatchesShrinkingItsRGBA(t *testing.T) {
	for _, ratio := range []image.YCbCrSubsampleRatio{image.YCbCrSubsampleRatio420, image.YCbCrSubsampleRatio444} {
		ycc := image.NewYCbCr(image.Rect(3, 7, 203, 157), ratio)
		// Colours well inside the RGB gamut, where averaging in YCbCr
		// and in RGB agree up to rounding.
		for i := range ycc.Y {
			ycc.Y[i] = uint8(60 + i%120)
		}
		for i := range ycc.Cb {
			ycc.Cb[i], ycc.Cr[i] = uint8(110+i%30), uint8(120+i%20)
		}
		fast, slow := toRGBA(shrink(ycc, 40)), shrinkRGBA(toRGBA(ycc), 5)
		if fast.Rect != slow.Rect || fast.Rect.Dx() != 40 || fast.Rect.Dy() != 30 {
			t.Fatalf("%v: shrunk to %v and %v, want 40x30", ratio, fast.Rect, slow.Rect)
		}
		for i := range fast.Pix {
			if d := int(fast.Pix[i]) - int(slow.Pix[i]); d < -2 || d > 2 {
				t.Fatalf("%v: byte %d is %d, want about %d", ratio, i, fast.Pix[i], slow.Pix[i])
			}
		}
	}
}

func TestShrinkLeavesSmallImagesAlone(t *testing.T) {
	// 319/160 is 1: no whole factor of 2 or more keeps 160 pixels.
	img := photo(319, 200)
	if shrink(img, 160) != image.Image(img) {
		t.Error("a 319x200 image was shrunk for a 160 thumbnail")
	}
	if got := shrink(photo(320, 200), 160).Bounds(); got.Dx() != 160 || got.Dy() != 100 {
		t.Errorf("a 320x200 image was shrunk to %v, want 160x100", got)
	}
}
