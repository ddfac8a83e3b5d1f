package images

import (
	"bytes"
	"fmt"
)

// JPEG markers this package treats specially. A marker is 0xFF followed by
// one of these bytes.
const (
	markerSOI   = 0xD8 // start of image
	markerEOI   = 0xD9 // end of image
	markerSOS   = 0xDA // start of scan: entropy-coded data follows
	markerRST0  = 0xD0 // restart markers RST0..RST7 stand alone
	markerRST7  = 0xD7
	markerTEM   = 0x01 // stands alone
	markerAPP0  = 0xE0 // JFIF: density and version, nothing personal
	markerAPP1  = 0xE1 // Exif and XMP
	markerAPP2  = 0xE2 // ICC profile (kept), MPF second images (dropped)
	markerAPP14 = 0xEE // Adobe: colour transform needed to decode
	markerAPP15 = 0xEF
	markerCOM   = 0xFE // comment
)

// iccSignature starts an APP2 segment holding (part of) an ICC profile.
var iccSignature = []byte("ICC_PROFILE\x00")

// exifSignature starts an APP1 segment holding EXIF data.
var exifSignature = []byte("Exif\x00\x00")

// jpegParts is what stripJPEG finds in a JPEG.
type jpegParts struct {
	// clean is the JPEG without metadata segments and trailing bytes.
	clean []byte
	// icc holds the kept ICC profile segments, markers included, in order.
	icc [][]byte
	// orientation is the EXIF orientation (1 when absent or invalid).
	orientation int
}

// stripJPEG walks the segments of a JPEG and copies all of them except the
// metadata: APP1 (Exif, XMP), APP13 (IPTC), every other application segment
// but APP0 (JFIF), ICC profiles in APP2 and APP14 (Adobe), comments, and
// anything after the end-of-image marker. Entropy-coded scan data is copied
// as it is, so the image is not re-encoded.
func stripJPEG(data []byte) (jpegParts, error) {
	parts := jpegParts{orientation: 1}
	if !bytes.HasPrefix(data, []byte{0xFF, markerSOI}) {
		return parts, fmt.Errorf("%w: JPEG does not start with SOI", ErrCorrupt)
	}
	out := make([]byte, 0, len(data))
	out = append(out, 0xFF, markerSOI)
	pos := 2
	for {
		marker, start, err := nextJPEGMarker(data, pos)
		if err != nil {
			return parts, err
		}
		if marker == markerEOI {
			parts.clean = append(out, 0xFF, markerEOI)
			return parts, nil
		}
		end := start + 2
		if !standsAlone(marker) {
			if end+2 > len(data) {
				return parts, fmt.Errorf("%w: JPEG segment header truncated", ErrCorrupt)
			}
			end += int(data[end])<<8 | int(data[end+1])
			if end > len(data) || end < start+4 {
				return parts, fmt.Errorf("%w: JPEG segment truncated", ErrCorrupt)
			}
		}
		segment := data[start:end]
		if marker == markerSOS {
			end = scanEnd(data, end)
		}
		if keepJPEGSegment(marker, segment) {
			out = append(out, data[start:end]...)
			if marker == markerAPP2 {
				parts.icc = append(parts.icc, segment)
			}
		} else if marker == markerAPP1 && parts.orientation == 1 {
			parts.orientation = exifSegmentOrientation(segment[4:])
		}
		pos = end
	}
}

// nextJPEGMarker returns the first marker byte at or after data[pos] and
// where its 0xFF starts. Like libjpeg and Go's decoder, it skips stray
// bytes before the marker (which are dropped) and fill bytes (repeated
// 0xFF).
func nextJPEGMarker(data []byte, pos int) (marker byte, start int, err error) {
	if skip := bytes.IndexByte(data[min(pos, len(data)):], 0xFF); skip >= 0 {
		pos += skip
	} else {
		return 0, 0, fmt.Errorf("%w: JPEG truncated before end of image", ErrCorrupt)
	}
	for pos+1 < len(data) && data[pos+1] == 0xFF {
		pos++
	}
	if pos+1 >= len(data) {
		return 0, 0, fmt.Errorf("%w: JPEG truncated before end of image", ErrCorrupt)
	}
	return data[pos+1], pos, nil
}

// standsAlone reports whether marker has no length and payload.
func standsAlone(marker byte) bool {
	return marker == markerTEM || marker == markerSOI || marker == markerEOI ||
		(marker >= markerRST0 && marker <= markerRST7)
}

// scanEnd returns the index of the first marker after the entropy-coded data
// that starts at data[pos:], other than restart markers and stuffed zero
// bytes, which belong to the data. It returns len(data) if there is none.
func scanEnd(data []byte, pos int) int {
	for ; pos+1 < len(data); pos++ {
		if data[pos] != 0xFF {
			continue
		}
		next := data[pos+1]
		if next == 0x00 || next == 0xFF || (next >= markerRST0 && next <= markerRST7) {
			continue
		}
		return pos
	}
	return len(data)
}

// keepJPEGSegment reports whether a segment (starting with its marker) is
// needed to show the image and gives nobody away.
func keepJPEGSegment(marker byte, segment []byte) bool {
	switch {
	case marker == markerAPP0, marker == markerAPP14:
		return true
	case marker == markerAPP2:
		return bytes.HasPrefix(segment[4:], iccSignature)
	case marker >= markerAPP0 && marker <= markerAPP15, marker == markerCOM:
		return false
	}
	return true
}

// exifSegmentOrientation returns the orientation in an APP1 payload if it
// holds EXIF data, and 1 otherwise.
func exifSegmentOrientation(payload []byte) int {
	if !bytes.HasPrefix(payload, exifSignature) {
		return 1
	}
	return tiffOrientation(payload[len(exifSignature):])
}
