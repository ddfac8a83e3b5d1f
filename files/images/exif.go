package images

import "encoding/binary"

// tagOrientation is the EXIF (TIFF) tag of the image's orientation.
const tagOrientation = 0x0112

// tiffOrientation returns the orientation tag of the first image file
// directory of TIFF-structured EXIF data: 1 (already upright) to 8. It
// returns 1 if the data is malformed or has no valid orientation.
func tiffOrientation(tiff []byte) int {
	if len(tiff) < 8 {
		return 1
	}
	var order binary.ByteOrder
	switch string(tiff[:4]) {
	case "II*\x00":
		order = binary.LittleEndian
	case "MM\x00*":
		order = binary.BigEndian
	default:
		return 1
	}
	ifd := int(order.Uint32(tiff[4:8]))
	if ifd < 8 || ifd+2 > len(tiff) {
		return 1
	}
	count := int(order.Uint16(tiff[ifd:]))
	for i := 0; i < count; i++ {
		entry := ifd + 2 + 12*i
		if entry+12 > len(tiff) {
			return 1
		}
		if order.Uint16(tiff[entry:]) == tagOrientation {
			return validOrientation(int(order.Uint16(tiff[entry+8:])))
		}
	}
	return 1
}

// validOrientation returns o if it is an EXIF orientation and 1 otherwise.
func validOrientation(o int) int {
	if o < 1 || o > 8 {
		return 1
	}
	return o
}
