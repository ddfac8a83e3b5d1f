package images

import (
	"image"
	"image/color"
	"image/draw"
)

// orient returns img turned the right way up for its EXIF orientation
// (2 to 8), as a new RGBA image; orientation 1 returns img itself. A YCbCr
// image (a decoded JPEG) is read in place, other images through an RGBA
// copy.
func orient(img image.Image, orientation int) image.Image {
	if orientation <= 1 || orientation > 8 {
		return img
	}
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	dw, dh := w, h
	if orientation >= 5 {
		dw, dh = h, w
	}
	dst := image.NewRGBA(image.Rect(0, 0, dw, dh))
	pixel := pixelReader(img)
	for y := 0; y < dh; y++ {
		row := dst.Pix[y*dst.Stride:]
		for x := 0; x < dw; x++ {
			sx, sy := sourcePoint(orientation, x, y, w, h)
			pixel(row[4*x:4*x+4], sx, sy)
		}
	}
	return dst
}

// pixelReader returns a function that copies the RGBA colour of img's
// pixel (x, y), counted from its top-left corner, to p.
func pixelReader(img image.Image) func(p []uint8, x, y int) {
	if ycc, ok := img.(*image.YCbCr); ok {
		minX, minY := ycc.Rect.Min.X, ycc.Rect.Min.Y
		return func(p []uint8, x, y int) {
			x, y = x+minX, y+minY
			ci := ycc.COffset(x, y)
			p[0], p[1], p[2] = color.YCbCrToRGB(ycc.Y[ycc.YOffset(x, y)], ycc.Cb[ci], ycc.Cr[ci])
			p[3] = 0xFF
		}
	}
	rgba := toRGBA(img)
	return func(p []uint8, x, y int) {
		copy(p, rgba.Pix[rgba.PixOffset(x, y):][:4])
	}
}

// sourcePoint returns the pixel of a w×h source image shown at (x, y) once
// the image is turned upright for its EXIF orientation.
func sourcePoint(orientation, x, y, w, h int) (int, int) {
	switch orientation {
	case 2: // mirrored left to right
		return w - 1 - x, y
	case 3: // upside down
		return w - 1 - x, h - 1 - y
	case 4: // mirrored top to bottom
		return x, h - 1 - y
	case 5: // transposed
		return y, x
	case 6: // needs a quarter turn clockwise
		return y, h - 1 - x
	case 7: // transversed
		return w - 1 - y, h - 1 - x
	case 8: // needs a quarter turn anticlockwise
		return w - 1 - y, x
	}
	return x, y
}

// toRGBA returns img as an RGBA image whose bounds start at (0, 0),
// converting it if needed.
func toRGBA(img image.Image) *image.RGBA {
	if rgba, ok := img.(*image.RGBA); ok && rgba.Rect.Min == (image.Point{}) {
		return rgba
	}
	b := img.Bounds()
	rgba := image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.Draw(rgba, rgba.Rect, img, b.Min, draw.Src)
	return rgba
}
