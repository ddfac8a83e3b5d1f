package images

import (
	"bytes"
	"fmt"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"

	"golang.org/x/image/draw"
)

// thumbnailQuality is the JPEG quality of thumbnails: small files that
// still look sharp on a phone.
const thumbnailQuality = 82

// ThumbnailSize returns the size of the thumbnail of a w×h image that fits
// in a maxSide×maxSide square: the image's own size if it fits already
// (thumbnails are never scaled up), and otherwise its size scaled down so
// that its longest side is maxSide, keeping its aspect ratio (rounded, and
// never below one pixel).
func ThumbnailSize(w, h, maxSide int) (int, int) {
	if w <= maxSide && h <= maxSide {
		return w, h
	}
	if w >= h {
		return maxSide, scaleSide(h, maxSide, w)
	}
	return scaleSide(w, maxSide, h), maxSide
}

// scaleSide returns side×num/den rounded to the nearest pixel, at least 1.
func scaleSide(side, num, den int) int {
	scaled := (int64(side)*int64(num) + int64(den)/2) / int64(den)
	return int(max(scaled, 1))
}

// Thumbnail returns a copy of a clean image (Clean's output) scaled to fit
// in maxSide×maxSide, never scaled up, with its content type and size. The
// first frame of an animated GIF is used.
//
// A thumbnail is a JPEG, small and good for photos, unless it has
// transparent pixels, which JPEG cannot keep: then it is a PNG, so that a
// sticker or logo shows on the conversation's background rather than on
// black. The choice is made on the scaled pixels, not on the format, so an
// opaque PNG screenshot gets a JPEG thumbnail.
//
// Thumbnail checks the image's header against DefaultLimits (not the
// Limits given to Clean: a server that raises them must keep its images
// within the defaults to thumbnail them) before it decodes it, and returns
// the errors of Clean.
func Thumbnail(clean []byte, maxSide int) (data []byte, contentType string, width, height int, err error) {
	thumbs, err := Thumbnails(clean, maxSide)
	if err != nil {
		return nil, "", 0, 0, err
	}
	t := thumbs[0]
	return t.Data, t.ContentType, t.Width, t.Height, nil
}

// Thumb is one encoded thumbnail.
type Thumb struct {
	Data          []byte
	ContentType   string
	Width, Height int
}

// Thumbnails makes the thumbnail of a clean image for each of maxSides, as
// Thumbnail does, decoding the image only once: the server makes its small
// thumbnail and its preview together with
// Thumbnails(clean, SmallThumbnailSide, PreviewSide).
func Thumbnails(clean []byte, maxSides ...int) ([]Thumb, error) {
	for _, side := range maxSides {
		if side <= 0 {
			return nil, fmt.Errorf("images: thumbnail side %d is not positive", side)
		}
	}
	img, err := decodeClean(clean)
	if err != nil {
		return nil, err
	}
	thumbs := make([]Thumb, len(maxSides))
	for i, side := range maxSides {
		if thumbs[i], err = thumbnailOf(img, side); err != nil {
			return nil, err
		}
	}
	return thumbs, nil
}

// thumbnailOf scales img to fit in maxSide×maxSide and encodes it.
func thumbnailOf(img image.Image, maxSide int) (Thumb, error) {
	b := img.Bounds()
	width, height := ThumbnailSize(b.Dx(), b.Dy(), maxSide)
	scaled := image.NewRGBA(image.Rect(0, 0, width, height))
	small := shrink(img, maxSide)
	draw.CatmullRom.Scale(scaled, scaled.Rect, small, small.Bounds(), draw.Src, nil)
	data, contentType, err := encodeThumbnail(scaled)
	return Thumb{Data: data, ContentType: contentType, Width: width, Height: height}, err
}

// decodeClean checks and decodes the first image of clean bytes.
func decodeClean(clean []byte) (image.Image, error) {
	contentType := sniffImage(clean)
	if contentType == "" {
		return nil, ErrUnsupported
	}
	if err := checkConfig(clean, contentType, DefaultLimits); err != nil {
		return nil, err
	}
	if contentType == GIF {
		// Only the first frame is needed, and gif.Decode reads no further.
		return decodeFirstGIFFrame(clean)
	}
	return decodeFully(clean, contentType)
}

// decodeFirstGIFFrame decodes the first frame of a GIF on its logical
// screen.
func decodeFirstGIFFrame(data []byte) (image.Image, error) {
	cfg, err := decodeConfig(data, GIF)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	first, err := gif.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return onScreen(first, cfg.Width, cfg.Height), nil
}

// encodeThumbnail encodes a thumbnail as JPEG if it is opaque and as PNG
// otherwise.
func encodeThumbnail(img *image.RGBA) ([]byte, string, error) {
	var buf bytes.Buffer
	if img.Opaque() {
		if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: thumbnailQuality}); err != nil {
			return nil, "", fmt.Errorf("images: encoding thumbnail: %w", err)
		}
		return buf.Bytes(), JPEG, nil
	}
	if err := png.Encode(&buf, img); err != nil {
		return nil, "", fmt.Errorf("images: encoding thumbnail: %w", err)
	}
	return buf.Bytes(), PNG, nil
}
