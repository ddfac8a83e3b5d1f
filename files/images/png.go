package images

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// keptPNGChunks are the chunk types a clean PNG keeps: the critical chunks
// and the ancillary ones that change how the pixels look. Every other chunk
// is dropped: text (tEXt, zTXt, iTXt), EXIF (eXIf), the modification time
// (tIME), animation frames (acTL, fcTL, fdAT, which Go does not decode, so
// an animated PNG becomes its default image) and private chunks.
var keptPNGChunks = map[string]bool{
	"IHDR": true, "PLTE": true, "IDAT": true, "IEND": true,
	"tRNS": true, "gAMA": true, "cHRM": true, "sRGB": true, "iCCP": true,
	"sBIT": true, "bKGD": true, "pHYs": true, "cICP": true,
}

// pngChunkOverhead is the size of a chunk's length, type and CRC fields.
const pngChunkOverhead = 12

// colourPNGChunks are the kept chunks that say how to show the pixels'
// colours, carried over when a PNG is re-encoded upright.
var colourPNGChunks = map[string]bool{
	"gAMA": true, "cHRM": true, "sRGB": true, "iCCP": true, "cICP": true,
}

// pngParts is what stripPNG finds in a PNG.
type pngParts struct {
	// clean is the PNG without metadata chunks and trailing bytes.
	clean []byte
	// colour holds the kept colour chunks, whole, in order.
	colour [][]byte
	// orientation is the orientation of the eXIf chunk (1 if absent).
	orientation int
}

// stripPNG copies the signature and the kept chunks of a PNG up to and
// including IEND, without re-encoding, and drops anything after IEND.
func stripPNG(data []byte) (pngParts, error) {
	parts := pngParts{orientation: 1}
	if !bytes.HasPrefix(data, pngSignature) {
		return parts, fmt.Errorf("%w: PNG signature missing", ErrCorrupt)
	}
	out := make([]byte, 0, len(data))
	out = append(out, pngSignature...)
	pos := len(pngSignature)
	for {
		chunkType, end, err := nextPNGChunk(data, pos)
		if err != nil {
			return parts, err
		}
		chunk := data[pos:end]
		switch {
		case keptPNGChunks[chunkType]:
			out = append(out, chunk...)
			if colourPNGChunks[chunkType] {
				parts.colour = append(parts.colour, chunk)
			}
		case chunkType == "eXIf" && parts.orientation == 1:
			parts.orientation = pngEXIFOrientation(chunk[8 : len(chunk)-4])
		}
		if chunkType == "IEND" {
			parts.clean = out
			return parts, nil
		}
		pos = end
	}
}

// pngEXIFOrientation returns the orientation in an eXIf chunk's data,
// which is TIFF data (some writers put a JPEG-style "Exif" prefix first).
func pngEXIFOrientation(exif []byte) int {
	return tiffOrientation(bytes.TrimPrefix(exif, exifSignature))
}

// insertPNGChunks returns a PNG with chunks inserted right after its IHDR
// chunk, which Go's encoder writes first.
func insertPNGChunks(pngData []byte, chunks [][]byte) []byte {
	if len(chunks) == 0 {
		return pngData
	}
	at := len(pngSignature) + pngChunkOverhead + 13 // IHDR's data is 13 bytes
	out := make([]byte, 0, len(pngData)+len(chunks)*64)
	out = append(out, pngData[:at]...)
	for _, c := range chunks {
		out = append(out, c...)
	}
	return append(out, pngData[at:]...)
}

// nextPNGChunk returns the type of the chunk at data[pos:] and where it
// ends, CRC included.
func nextPNGChunk(data []byte, pos int) (chunkType string, end int, err error) {
	if pos+pngChunkOverhead > len(data) {
		return "", 0, fmt.Errorf("%w: PNG truncated before IEND", ErrCorrupt)
	}
	length := binary.BigEndian.Uint32(data[pos:])
	if uint64(length) > uint64(len(data)-pos-pngChunkOverhead) {
		return "", 0, fmt.Errorf("%w: PNG chunk truncated", ErrCorrupt)
	}
	return string(data[pos+4 : pos+8]), pos + pngChunkOverhead + int(length), nil
}
