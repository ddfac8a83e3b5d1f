// Package images is being written on the branch files-images; this
// declares what files.Service calls until it lands.
package images

import "errors"

var (
	ErrUnsupported   = errors.New("unsupported")
	ErrTooManyPixels = errors.New("too many pixels")
	ErrCorrupt       = errors.New("corrupt")
)

type Limits struct{ MaxPixels, MaxBytes int64 }

type Info struct {
	ContentType   string
	Width, Height int
	Blurhash      string
}

func Sniff(head []byte) string { return "application/octet-stream" }

func Clean(data []byte, l Limits) ([]byte, Info, error) { return nil, Info{}, ErrUnsupported }

func Thumbnail(clean []byte, side int) ([]byte, string, int, int, error) {
	return nil, "", 0, 0, ErrUnsupported
}

func ThumbnailSize(w, h, maxSide int) (int, int) { return w, h }
