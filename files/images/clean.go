package images

import (
	"bytes"
	"fmt"
	"image"
	"image/draw"
	"image/gif"
	"image/jpeg"
	"image/png"

	"golang.org/x/image/webp"
)

// reencodeQuality is the JPEG quality of a photo Clean had to turn upright,
// high enough that the second generation loses little.
const reencodeQuality = 92

// Clean checks that data is a supported image within limits, decodes it
// fully, and returns it without the metadata that could give people away,
// with its Info. Zero fields of limits take DefaultLimits' values.
//
// The image's header is checked before any pixel is decoded: an image whose
// width×height exceeds limits.MaxPixels (or a GIF whose frames hold more
// than limits.MaxTotalPixels) is refused with ErrTooManyPixels. Bytes that
// are not a supported image give ErrUnsupported, and an image that does not
// decode completely gives ErrCorrupt.
//
// Metadata is removed without re-encoding (see stripJPEG, stripPNG,
// stripGIF and stripWebP), except for a JPEG or PNG whose EXIF orientation
// is not 1: since the orientation goes with the EXIF data, the image is
// turned upright and re-encoded (a JPEG at quality 92, a PNG losslessly as
// 8-bit RGBA), keeping its ICC profile and colour chunks. The EXIF
// orientation of a WebP is ignored, as there is no WebP encoder to turn it
// with; WebP writers rarely set one.
func Clean(data []byte, limits Limits) (clean []byte, info Info, err error) {
	limits = limits.withDefaults()
	contentType := sniffImage(data)
	if contentType == "" {
		return nil, Info{}, ErrUnsupported
	}
	if err := checkConfig(data, contentType, limits); err != nil {
		return nil, Info{}, err
	}
	clean, turn, err := strip(data, contentType, limits)
	if err != nil {
		return nil, Info{}, err
	}
	img, err := decodeFully(clean, contentType)
	if err != nil {
		return nil, Info{}, err
	}
	if turn.orientation != 1 {
		img = orient(img, turn.orientation)
		if clean, err = turn.encode(img); err != nil {
			return nil, Info{}, err
		}
	}
	b := img.Bounds()
	return clean, Info{
		ContentType: contentType,
		Width:       b.Dx(),
		Height:      b.Dy(),
		Blurhash:    Blurhash(img, BlurhashXComponents, BlurhashYComponents),
	}, nil
}

// decodeConfig reads an image's header with the decoder of its content type.
func decodeConfig(data []byte, contentType string) (image.Config, error) {
	r := bytes.NewReader(data)
	switch contentType {
	case JPEG:
		return jpeg.DecodeConfig(r)
	case PNG:
		return png.DecodeConfig(r)
	case GIF:
		return gif.DecodeConfig(r)
	case WebP:
		return webp.DecodeConfig(r)
	}
	return image.Config{}, ErrUnsupported
}

// checkConfig refuses an image whose header is unreadable or claims more
// pixels than limits allow, reading only the header.
func checkConfig(data []byte, contentType string, limits Limits) error {
	cfg, err := decodeConfig(data, contentType)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return fmt.Errorf("%w: image is %dx%d", ErrCorrupt, cfg.Width, cfg.Height)
	}
	if pixels := int64(cfg.Width) * int64(cfg.Height); pixels > limits.MaxPixels {
		return fmt.Errorf("%w: %dx%d is more than %d pixels", ErrTooManyPixels,
			cfg.Width, cfg.Height, limits.MaxPixels)
	}
	return nil
}

// uprighting is how to turn a stripped image upright: its EXIF
// orientation, and (unless that is 1) how to encode the turned image with
// the colour information of the original.
type uprighting struct {
	orientation int
	encode      func(image.Image) ([]byte, error)
}

// upright is the uprighting of an image that is upright already.
var upright = uprighting{orientation: 1}

// strip removes the metadata of an image of contentType without decoding
// its pixels, and says how to turn it upright. A GIF with too many frame
// pixels is refused here.
func strip(data []byte, contentType string, limits Limits) ([]byte, uprighting, error) {
	switch contentType {
	case JPEG:
		parts, err := stripJPEG(data)
		return parts.clean, uprighting{parts.orientation, func(img image.Image) ([]byte, error) {
			return encodeUprightJPEG(img, parts.icc)
		}}, err
	case PNG:
		parts, err := stripPNG(data)
		return parts.clean, uprighting{parts.orientation, func(img image.Image) ([]byte, error) {
			return encodeUprightPNG(img, parts.colour)
		}}, err
	case GIF:
		clean, err := stripCheckedGIF(data, limits)
		return clean, upright, err
	case WebP:
		clean, err := stripWebP(data)
		return clean, upright, err
	}
	return nil, upright, ErrUnsupported
}

// stripCheckedGIF strips a GIF and refuses it if its frames hold more
// pixels than limits.MaxTotalPixels.
func stripCheckedGIF(data []byte, limits Limits) ([]byte, error) {
	parts, err := stripGIF(data)
	if err != nil {
		return nil, err
	}
	if parts.framePixels > limits.MaxTotalPixels {
		return nil, fmt.Errorf("%w: %d frames of %d pixels in all, more than %d",
			ErrTooManyPixels, parts.frames, parts.framePixels, limits.MaxTotalPixels)
	}
	return parts.clean, nil
}

// decodeFully decodes every pixel of an image (every frame of a GIF) and
// returns the image shown first.
func decodeFully(data []byte, contentType string) (image.Image, error) {
	r := bytes.NewReader(data)
	var img image.Image
	var err error
	switch contentType {
	case JPEG:
		img, err = jpeg.Decode(r)
	case PNG:
		img, err = png.Decode(r)
	case GIF:
		img, err = decodeGIF(r)
	case WebP:
		img, err = webp.Decode(r)
	default:
		return nil, ErrUnsupported
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return img, nil
}

// decodeGIF decodes all frames of a GIF and returns its first frame drawn
// on the logical screen.
func decodeGIF(r *bytes.Reader) (image.Image, error) {
	all, err := gif.DecodeAll(r)
	if err != nil {
		return nil, err
	}
	if len(all.Image) == 0 {
		return nil, fmt.Errorf("GIF has no frames")
	}
	return firstGIFFrame(all), nil
}

// firstGIFFrame returns the first frame of an animation on its logical
// screen.
func firstGIFFrame(all *gif.GIF) image.Image {
	return onScreen(all.Image[0], all.Config.Width, all.Config.Height)
}

// onScreen returns a GIF frame drawn on a width×height logical screen,
// transparent where the frame does not cover it; a frame that covers the
// screen exactly is returned as it is.
func onScreen(frame image.Image, width, height int) image.Image {
	screen := image.Rect(0, 0, width, height)
	if frame.Bounds() == screen {
		return frame
	}
	canvas := image.NewRGBA(screen)
	draw.Draw(canvas, frame.Bounds(), frame, frame.Bounds().Min, draw.Over)
	return canvas
}

// encodeUprightJPEG encodes an image turned upright as JPEG, with the ICC
// profile segments of the original.
func encodeUprightJPEG(img image.Image, icc [][]byte) ([]byte, error) {
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: reencodeQuality}); err != nil {
		return nil, fmt.Errorf("images: re-encoding JPEG: %w", err)
	}
	return insertSegments(buf.Bytes(), icc), nil
}

// encodeUprightPNG encodes an image turned upright as PNG (losslessly, but
// as 8-bit RGBA), with the colour chunks of the original.
func encodeUprightPNG(img image.Image, colour [][]byte) ([]byte, error) {
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil, fmt.Errorf("images: re-encoding PNG: %w", err)
	}
	return insertPNGChunks(buf.Bytes(), colour), nil
}

// insertSegments returns a JPEG with segments inserted right after its SOI
// marker.
func insertSegments(jpegData []byte, segments [][]byte) []byte {
	if len(segments) == 0 {
		return jpegData
	}
	out := make([]byte, 0, len(jpegData)+len(segments)*64)
	out = append(out, jpegData[:2]...)
	for _, s := range segments {
		out = append(out, s...)
	}
	return append(out, jpegData[2:]...)
}
