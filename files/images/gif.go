package images

import (
	"bytes"
	"fmt"
)

// GIF block introducers and extension labels.
const (
	gifExtension      = 0x21
	gifImage          = 0x2C
	gifTrailer        = 0x3B
	gifGraphicControl = 0xF9 // frame delay and transparency: kept
	gifApplication    = 0xFF // kept only for the animation loop count
)

// Sizes of fixed GIF structures.
const (
	gifHeaderLen          = 13 // signature, version, logical screen descriptor
	gifImageDescriptorLen = 10 // introducer included
	gifColorTableFlag     = 0x80
)

// loopApplications are the application extensions that hold an animation's
// loop count; every other application extension (XMP, ICC, editors' data)
// is dropped.
var loopApplications = [][]byte{[]byte("NETSCAPE2.0"), []byte("ANIMEXTS1.0")}

// gifParts is what stripGIF finds in a GIF.
type gifParts struct {
	clean []byte
	// frames and framePixels count the frames and the sum of their areas.
	frames      int
	framePixels int64
}

// stripGIF walks the blocks of a GIF and copies all of them except comment,
// plain-text and application extensions (but the loop count's), and drops
// anything after the trailer. It counts the frames and their pixels, so the
// caller can refuse a large animation before decoding it.
func stripGIF(data []byte) (gifParts, error) {
	var parts gifParts
	if len(data) < gifHeaderLen {
		return parts, fmt.Errorf("%w: GIF header truncated", ErrCorrupt)
	}
	out := make([]byte, 0, len(data))
	pos := gifHeaderLen + colorTableLen(data[10])
	if pos > len(data) {
		return parts, fmt.Errorf("%w: GIF color table truncated", ErrCorrupt)
	}
	out = append(out, data[:pos]...)
	for {
		if pos >= len(data) {
			return parts, fmt.Errorf("%w: GIF truncated before trailer", ErrCorrupt)
		}
		switch data[pos] {
		case gifTrailer:
			parts.clean = append(out, gifTrailer)
			return parts, nil
		case gifExtension:
			end, err := extensionEnd(data, pos)
			if err != nil {
				return parts, err
			}
			if keepGIFExtension(data[pos:end]) {
				out = append(out, data[pos:end]...)
			}
			pos = end
		case gifImage:
			end, pixels, err := imageEnd(data, pos)
			if err != nil {
				return parts, err
			}
			parts.frames++
			parts.framePixels += pixels
			out = append(out, data[pos:end]...)
			pos = end
		default:
			return parts, fmt.Errorf("%w: unknown GIF block %#x", ErrCorrupt, data[pos])
		}
	}
}

// colorTableLen returns the size in bytes of the color table that a packed
// fields byte announces.
func colorTableLen(packed byte) int {
	if packed&gifColorTableFlag == 0 {
		return 0
	}
	return 3 << (packed&0x07 + 1)
}

// extensionEnd returns where the extension block at data[pos:] ends.
func extensionEnd(data []byte, pos int) (int, error) {
	if pos+2 > len(data) {
		return 0, fmt.Errorf("%w: GIF extension truncated", ErrCorrupt)
	}
	return subBlocksEnd(data, pos+2)
}

// imageEnd returns where the image (descriptor, color table and data) at
// data[pos:] ends and its area.
func imageEnd(data []byte, pos int) (int, int64, error) {
	if pos+gifImageDescriptorLen+1 > len(data) {
		return 0, 0, fmt.Errorf("%w: GIF image descriptor truncated", ErrCorrupt)
	}
	width := int64(data[pos+5]) | int64(data[pos+6])<<8
	height := int64(data[pos+7]) | int64(data[pos+8])<<8
	start := pos + gifImageDescriptorLen + colorTableLen(data[pos+9]) + 1 // LZW code size
	end, err := subBlocksEnd(data, start)
	return end, width * height, err
}

// subBlocksEnd returns where the data sub-blocks starting at data[pos:] end,
// after their zero-length terminator.
func subBlocksEnd(data []byte, pos int) (int, error) {
	for {
		if pos >= len(data) {
			return 0, fmt.Errorf("%w: GIF data truncated", ErrCorrupt)
		}
		size := int(data[pos])
		pos += 1 + size
		if size == 0 {
			return pos, nil
		}
	}
}

// keepGIFExtension reports whether an extension block is kept: graphic
// control extensions and the loop count's application extension.
func keepGIFExtension(block []byte) bool {
	switch block[1] {
	case gifGraphicControl:
		return true
	case gifApplication:
		return isLoopApplication(block)
	}
	return false
}

// isLoopApplication reports whether an application extension block holds
// an animation's loop count.
func isLoopApplication(block []byte) bool {
	if len(block) < 3+11 || block[2] != 11 {
		return false
	}
	id := block[3 : 3+11]
	for _, loop := range loopApplications {
		if bytes.Equal(id, loop) {
			return true
		}
	}
	return false
}
