package images

import (
	"encoding/binary"
	"testing"
)

// bigEndianTIFF returns big-endian TIFF data whose first IFD holds only an
// orientation.
func bigEndianTIFF(orientation uint16) []byte {
	tiff := []byte("MM\x00*\x00\x00\x00\x08\x00\x01")
	entry := make([]byte, 12)
	binary.BigEndian.PutUint16(entry, tagOrientation)
	binary.BigEndian.PutUint16(entry[2:], 3)
	binary.BigEndian.PutUint32(entry[4:], 1)
	binary.BigEndian.PutUint16(entry[8:], orientation)
	return append(append(tiff, entry...), 0, 0, 0, 0)
}

func TestTIFFOrientation(t *testing.T) {
	cases := map[string]struct {
		tiff []byte
		want int
	}{
		"little-endian 6":         {exifTIFF(6), 6},
		"big-endian 3":            {bigEndianTIFF(3), 3},
		"out of range":            {bigEndianTIFF(9), 1},
		"zero":                    {bigEndianTIFF(0), 1},
		"truncated entry":         {bigEndianTIFF(6)[:16], 1},
		"not TIFF":                {[]byte("hello, world"), 1},
		"IFD offset past the end": {[]byte("II*\x00\xff\x00\x00\x00"), 1},
		"empty":                   {nil, 1},
	}
	for name, c := range cases {
		if got := tiffOrientation(c.tiff); got != c.want {
			t.Errorf("%s: orientation %d, want %d", name, got, c.want)
		}
	}
}

func TestPNGEXIFOrientationAcceptsAnExifPrefix(t *testing.T) {
	if got := pngEXIFOrientation(exifTIFF(5)); got != 5 {
		t.Errorf("bare TIFF: %d, want 5", got)
	}
	if got := pngEXIFOrientation(append([]byte("Exif\x00\x00"), exifTIFF(7)...)); got != 7 {
		t.Errorf("with an Exif prefix: %d, want 7", got)
	}
}
