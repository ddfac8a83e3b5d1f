// Package images checks and cleans the images people send in chat before
// anyone else sees them.
//
// The server calls Sniff on the first bytes of every upload to learn what
// the file really is (the declared name and type are never trusted), then
// Clean on the whole file of a supported image (JPEG, PNG, GIF, WebP). Clean
// refuses images that are too large before decoding any pixels, decodes the
// image fully to refuse truncated or corrupt files, removes the metadata that
// gives people away (EXIF with GPS positions and camera serial numbers, XMP,
// IPTC, comments, text chunks) and returns the clean bytes with their size
// and a blurhash placeholder. Thumbnail makes the scaled copies that clients
// show in the conversation.
//
// # Memory bound
//
// Nothing is allocated in proportion to an image's claimed dimensions before
// they are checked against Limits: the header is read with DecodeConfig, and
// the metadata is removed by walking the file's segments, chunks or blocks,
// which allocates at most one copy of the input. After the check:
//
//   - A decoded image holds at most 8 bytes a pixel (16-bit PNG; a JPEG 3,
//     or 4 if CMYK; a GIF 1 a frame pixel, MaxTotalPixels in all). While a
//     progressive JPEG decodes, its coefficients take 4 more bytes a pixel
//     for each colour component (up to 16 for CMYK), freed once it is done.
//   - Turning an image upright adds a copy: 3 bytes a pixel for a colour
//     JPEG, and for any other image 4 bytes a pixel plus another 4 for
//     reading it as RGBA.
//   - Block averaging before scaling (blurhash, thumbnails) reads any image
//     but a colour JPEG through a 4-byte-a-pixel RGBA copy, and scaling a
//     thumbnail of side maxSide takes a buffer of at most 64×maxSide² bytes
//     (26 MB for a preview, 1.6 MB for a small thumbnail).
//
// So Clean and Thumbnail hold at most about 2×len(data) + 20×MaxPixels bytes
// at their peak (a progressive CMYK JPEG while it decodes; a 16-bit PNG
// being turned upright holds 16), plus MaxTotalPixels for an animated GIF
// and, in Thumbnail, the scaler's buffer. With the default
// 40-megapixel limit that is under a gigabyte in the very worst case, and
// about 100 MB for an ordinary 12-megapixel photo. A server that cleans
// several uploads at once should bound how many run together.
package images

import (
	"errors"
)

// The sentinel errors of Clean and Thumbnail, which the server maps to client
// errors. Returned errors wrap them with details: test them with errors.Is.
var (
	// ErrUnsupported means the bytes are not an image of a supported format
	// (JPEG, PNG, GIF, still WebP), whatever the file was called.
	ErrUnsupported = errors.New("images: not a supported image")
	// ErrTooManyPixels means the image's dimensions (or, for an animation,
	// the sum of its frames' areas) exceed the limits; no pixels were decoded.
	ErrTooManyPixels = errors.New("images: image has too many pixels")
	// ErrCorrupt means the image is truncated or malformed.
	ErrCorrupt = errors.New("images: image is corrupt or truncated")
)

// Content types of the supported image formats, as Sniff and Info report them.
const (
	JPEG = "image/jpeg"
	PNG  = "image/png"
	GIF  = "image/gif"
	WebP = "image/webp"
)

// Thumbnail sizes the server makes for every image: the longest side of a
// small thumbnail (in a conversation's message list) and of a preview (when
// someone opens the image on a phone).
const (
	SmallThumbnailSide = 160
	PreviewSide        = 640
)

// Limits bound the work Clean does on one image.
type Limits struct {
	// MaxPixels is the largest width×height accepted (the canvas of an
	// animation). Zero means DefaultLimits.MaxPixels.
	MaxPixels int64
	// MaxTotalPixels is the largest sum of all frames' areas of an animated
	// GIF, whose frames are all decoded to be checked. Zero means
	// DefaultLimits.MaxTotalPixels.
	MaxTotalPixels int64
}

// DefaultLimits accept photos up to 40 megapixels (a 48-megapixel phone
// camera saves 12-megapixel photos by default) and animations of up to 100
// million frame pixels (300 frames of 480×640, or 100 MB of palette indices).
var DefaultLimits = Limits{
	MaxPixels:      40_000_000,
	MaxTotalPixels: 100_000_000,
}

// withDefaults returns l with its zero fields set from DefaultLimits.
func (l Limits) withDefaults() Limits {
	if l.MaxPixels <= 0 {
		l.MaxPixels = DefaultLimits.MaxPixels
	}
	if l.MaxTotalPixels <= 0 {
		l.MaxTotalPixels = DefaultLimits.MaxTotalPixels
	}
	return l
}

// Info describes a clean image.
type Info struct {
	// ContentType is one of JPEG, PNG, GIF, WebP.
	ContentType string
	// Width and Height are the image's size as it is shown, after its EXIF
	// orientation was applied.
	Width, Height int
	// Blurhash is a short string from which clients draw a blurred
	// placeholder while the image loads (see Blurhash).
	Blurhash string
}
