package images

import (
	"image"
	"image/draw"
)

// orient returns img turned the right way up for its EXIF orientation
// (2 to 8) as a new image; orientation 1 returns img itself. A YCbCr image
// (a decoded colour JPEG) is turned into a full-resolution YCbCr image,
// which is what the JPEG encoder reads fastest; any other image into RGBA.
func orient(img image.Image, orientation int) image.Image {
	if orientation <= 1 || orientation > 8 {
		return img
	}
	if ycc, ok := img.(*image.YCbCr); ok {
		return orientYCbCr(ycc, orientation)
	}
	return orientRGBA(toRGBA(img), orientation)
}

// orientedRect returns the bounds of a w×h image once upright.
func orientedRect(orientation, w, h int) image.Rectangle {
	if orientation >= 5 {
		w, h = h, w
	}
	return image.Rect(0, 0, w, h)
}

// orientYCbCr turns a YCbCr image upright, keeping full-resolution chroma.
func orientYCbCr(src *image.YCbCr, orientation int) *image.YCbCr {
	r := src.Rect
	dst := image.NewYCbCr(orientedRect(orientation, r.Dx(), r.Dy()), image.YCbCrSubsampleRatio444)
	for y := 0; y < dst.Rect.Dy(); y++ {
		for x := 0; x < dst.Rect.Dx(); x++ {
			sx, sy := sourcePoint(orientation, x, y, r.Dx(), r.Dy())
			sx, sy = sx+r.Min.X, sy+r.Min.Y
			d, ci := y*dst.YStride+x, src.COffset(sx, sy)
			dst.Y[d] = src.Y[src.YOffset(sx, sy)]
			dst.Cb[d], dst.Cr[d] = src.Cb[ci], src.Cr[ci]
		}
	}
	return dst
}

// orientRGBA turns an RGBA image whose bounds start at (0, 0) upright.
func orientRGBA(src *image.RGBA, orientation int) *image.RGBA {
	w, h := src.Rect.Dx(), src.Rect.Dy()
	dst := image.NewRGBA(orientedRect(orientation, w, h))
	for y := 0; y < dst.Rect.Dy(); y++ {
		row := dst.Pix[y*dst.Stride:]
		for x := 0; x < dst.Rect.Dx(); x++ {
			sx, sy := sourcePoint(orientation, x, y, w, h)
			copy(row[4*x:4*x+4], src.Pix[src.PixOffset(sx, sy):])
		}
	}
	return dst
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
