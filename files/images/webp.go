package images

import (
	"encoding/binary"
	"fmt"
)

// Flags of a WebP VP8X chunk's first byte.
const (
	vp8xAnimation = 0x02
	vp8xXMP       = 0x04
	vp8xEXIF      = 0x08
)

// riffHeaderLen is the size of "RIFF", the file size and "WEBP".
const riffHeaderLen = 12

// keptWebPChunks are the chunks a clean WebP keeps: the image, its alpha,
// the extended header and the ICC profile. EXIF, XMP and unknown chunks are
// dropped.
var keptWebPChunks = map[string]bool{
	"VP8 ": true, "VP8L": true, "VP8X": true, "ALPH": true, "ICCP": true,
}

// stripWebP copies the kept chunks of a still WebP, clears the EXIF and XMP
// flags of its VP8X chunk and fixes the RIFF size, without re-encoding.
// Animated WebP is refused as unsupported: Go cannot decode it.
func stripWebP(data []byte) ([]byte, error) {
	if len(data) < riffHeaderLen || string(data[:4]) != "RIFF" || string(data[8:12]) != "WEBP" {
		return nil, fmt.Errorf("%w: WebP RIFF header missing", ErrCorrupt)
	}
	riffEnd := 8 + int64(binary.LittleEndian.Uint32(data[4:8]))
	if riffEnd > int64(len(data)) {
		return nil, fmt.Errorf("%w: WebP truncated", ErrCorrupt)
	}
	out := make([]byte, riffHeaderLen, len(data))
	copy(out, data[:riffHeaderLen])
	for pos := riffHeaderLen; pos < int(riffEnd); {
		fourCC, end, err := nextRIFFChunk(data[:riffEnd], pos)
		if err != nil {
			return nil, err
		}
		if fourCC == "ANIM" || fourCC == "ANMF" {
			return nil, fmt.Errorf("%w: animated WebP", ErrUnsupported)
		}
		if keptWebPChunks[fourCC] {
			out = append(out, data[pos:end]...)
		}
		if fourCC == "VP8X" {
			clearVP8XFlags(out[len(out)-(end-pos):])
		}
		pos = end
	}
	binary.LittleEndian.PutUint32(out[4:8], uint32(len(out)-8))
	return out, nil
}

// nextRIFFChunk returns the FourCC of the chunk at data[pos:] and where it
// ends, padding included.
func nextRIFFChunk(data []byte, pos int) (fourCC string, end int, err error) {
	if pos+8 > len(data) {
		return "", 0, fmt.Errorf("%w: WebP chunk header truncated", ErrCorrupt)
	}
	size := int64(binary.LittleEndian.Uint32(data[pos+4:]))
	end64 := int64(pos) + 8 + size + size%2
	if end64 > int64(len(data)) {
		return "", 0, fmt.Errorf("%w: WebP chunk truncated", ErrCorrupt)
	}
	return string(data[pos : pos+4]), int(end64), nil
}

// clearVP8XFlags clears the EXIF and XMP flags of a copied VP8X chunk.
// A chunk too short to hold flags is left for the decoder to refuse.
func clearVP8XFlags(chunk []byte) {
	if len(chunk) > 8 {
		chunk[8] &^= vp8xEXIF | vp8xXMP
	}
}
