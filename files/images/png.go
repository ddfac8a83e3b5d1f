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

// stripPNG copies the signature and the kept chunks of a PNG up to and
// including IEND, without re-encoding, and drops anything after IEND.
func stripPNG(data []byte) ([]byte, error) {
	if !bytes.HasPrefix(data, pngSignature) {
		return nil, fmt.Errorf("%w: PNG signature missing", ErrCorrupt)
	}
	out := make([]byte, 0, len(data))
	out = append(out, pngSignature...)
	pos := len(pngSignature)
	for {
		chunkType, end, err := nextPNGChunk(data, pos)
		if err != nil {
			return nil, err
		}
		if keptPNGChunks[chunkType] {
			out = append(out, data[pos:end]...)
		}
		if chunkType == "IEND" {
			return out, nil
		}
		pos = end
	}
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
