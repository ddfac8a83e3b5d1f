package images

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"testing"
)

// photo returns a w×h opaque image with smooth gradients, like a photo.
func photo(w, h int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, color.RGBA{uint8(x * 255 / w), uint8(y * 255 / h), 128, 255})
		}
	}
	return img
}

// halves returns a w×h image whose left half is left and right half right.
func halves(w, h int, left, right color.RGBA) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			if x < w/2 {
				img.SetRGBA(x, y, left)
			} else {
				img.SetRGBA(x, y, right)
			}
		}
	}
	return img
}

func encodeJPEG(t testing.TB, img image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func encodePNG(t testing.TB, img image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// animatedGIF returns a GIF of frames w×h frames that loops forever.
func animatedGIF(t testing.TB, w, h, frames int) []byte {
	t.Helper()
	palette := color.Palette{color.Black, color.White, color.RGBA{255, 0, 0, 255}}
	all := &gif.GIF{LoopCount: 0}
	for i := 0; i < frames; i++ {
		frame := image.NewPaletted(image.Rect(0, 0, w, h), palette)
		for p := range frame.Pix {
			frame.Pix[p] = uint8((p + i) % 3)
		}
		all.Image = append(all.Image, frame)
		all.Delay = append(all.Delay, 10)
	}
	var buf bytes.Buffer
	if err := gif.EncodeAll(&buf, all); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// jpegSegment returns a JPEG segment with marker and payload.
func jpegSegment(marker byte, payload []byte) []byte {
	seg := []byte{0xFF, marker, 0, 0}
	binary.BigEndian.PutUint16(seg[2:], uint16(len(payload)+2))
	return append(seg, payload...)
}

// insertAfterSOI returns a JPEG with segments inserted after its SOI.
func insertAfterSOI(jpegData []byte, segments ...[]byte) []byte {
	out := append([]byte{}, jpegData[:2]...)
	for _, s := range segments {
		out = append(out, s...)
	}
	return append(out, jpegData[2:]...)
}

// Private data planted in metadata, which a clean image must not contain.
const (
	plantedSerial   = "SERIAL-4C0FFEE42"
	plantedGPSRef   = "N\x00GPSMARK"
	plantedComment  = "taken at home, 12 Elm Street"
	plantedXMP      = "http://ns.adobe.com/xap/1.0/\x00<x:xmpmeta>creator Alice</x:xmpmeta>"
	plantedIPTC     = "Photoshop 3.0\x008BIM\x04\x04 byline Alice"
	plantedICC      = "ICC_PROFILE\x00\x01\x01fake-profile-bytes"
	plantedLatitude = 0x5EC12E7
)

// exifTIFF returns little-endian TIFF EXIF data whose first IFD has the
// orientation, a body serial number and a GPS IFD with a latitude.
func exifTIFF(orientation int) []byte {
	le := binary.LittleEndian
	const entries = 3
	ifd0 := 8
	serialAt := ifd0 + 2 + 12*entries + 4
	gpsAt := serialAt + len(plantedSerial) + 1
	tiff := make([]byte, gpsAt)
	copy(tiff, "II*\x00")
	le.PutUint32(tiff[4:], uint32(ifd0))
	le.PutUint16(tiff[ifd0:], entries)
	entry := func(i int, tag, typ uint16, count, value uint32) {
		e := tiff[ifd0+2+12*i:]
		le.PutUint16(e[0:], tag)
		le.PutUint16(e[2:], typ)
		le.PutUint32(e[4:], count)
		le.PutUint32(e[8:], value)
	}
	entry(0, tagOrientation, 3, 1, uint32(orientation))
	entry(1, 0xA431, 2, uint32(len(plantedSerial)+1), uint32(serialAt)) // BodySerialNumber
	entry(2, 0x8825, 4, 1, uint32(gpsAt))                               // GPSInfo
	copy(tiff[serialAt:], plantedSerial)
	gps := make([]byte, 2+12*2+4)
	le.PutUint16(gps, 2)
	le.PutUint16(gps[2:], 1) // GPSLatitudeRef
	le.PutUint16(gps[4:], 2)
	le.PutUint32(gps[6:], 2)
	copy(gps[10:], plantedGPSRef[:2])
	le.PutUint16(gps[14:], 2) // GPSLatitude, one rational for brevity
	le.PutUint16(gps[16:], 5)
	le.PutUint32(gps[18:], 1)
	le.PutUint32(gps[22:], uint32(gpsAt+len(gps)))
	tiff = append(tiff, gps...)
	lat := make([]byte, 8)
	le.PutUint32(lat, plantedLatitude)
	le.PutUint32(lat[4:], 1)
	tiff = append(tiff, lat...)
	return append(tiff, plantedGPSRef[2:]...)
}

// exifAPP1 returns an APP1 segment of EXIF data with orientation.
func exifAPP1(orientation int) []byte {
	return jpegSegment(markerAPP1, append([]byte("Exif\x00\x00"), exifTIFF(orientation)...))
}

// pngChunk returns a PNG chunk of type typ with data and its CRC.
func pngChunk(typ string, data []byte) []byte {
	chunk := make([]byte, 8, 12+len(data))
	binary.BigEndian.PutUint32(chunk, uint32(len(data)))
	copy(chunk[4:], typ)
	chunk = append(chunk, data...)
	return binary.BigEndian.AppendUint32(chunk, crc32.ChecksumIEEE(chunk[4:]))
}

// insertAfterIHDR returns a PNG with chunks inserted after its IHDR.
func insertAfterIHDR(pngData []byte, chunks ...[]byte) []byte {
	at := len(pngSignature) + 12 + 13
	out := append([]byte{}, pngData[:at]...)
	for _, c := range chunks {
		out = append(out, c...)
	}
	return append(out, pngData[at:]...)
}

// bitWriter writes bits least significant first, as VP8L does.
type bitWriter struct {
	buf   []byte
	nbits uint
}

func (w *bitWriter) write(value uint32, n uint) {
	for i := uint(0); i < n; i++ {
		if w.nbits%8 == 0 {
			w.buf = append(w.buf, 0)
		}
		w.buf[len(w.buf)-1] |= byte(value>>i&1) << (w.nbits % 8)
		w.nbits++
	}
}

// solidVP8L returns a lossless WebP bitstream of a w×h image of one opaque
// colour: every prefix code has a single symbol, so pixels take no bits.
func solidVP8L(w, h int, c color.RGBA) []byte {
	bw := &bitWriter{buf: []byte{0x2f}, nbits: 8}
	bw.write(uint32(w-1), 14)
	bw.write(uint32(h-1), 14)
	bw.write(0, 1) // alpha hint
	bw.write(0, 3) // version
	bw.write(0, 1) // no transform
	bw.write(0, 1) // no colour cache
	bw.write(0, 1) // no meta prefix codes
	for _, symbol := range []uint8{c.G, c.R, c.B, 255, 0} {
		bw.write(1, 1) // simple code
		bw.write(0, 1) // one symbol
		bw.write(1, 1) // eight-bit symbol
		bw.write(uint32(symbol), 8)
	}
	return bw.buf
}

// riffChunk returns a RIFF chunk, padded to an even length.
func riffChunk(fourCC string, data []byte) []byte {
	chunk := append([]byte(fourCC), 0, 0, 0, 0)
	binary.LittleEndian.PutUint32(chunk[4:], uint32(len(data)))
	chunk = append(chunk, data...)
	if len(data)%2 == 1 {
		chunk = append(chunk, 0)
	}
	return chunk
}

// webpFile wraps chunks in a RIFF WEBP container.
func webpFile(chunks ...[]byte) []byte {
	body := []byte("WEBP")
	for _, c := range chunks {
		body = append(body, c...)
	}
	return append(riffChunk("RIFF", body)[:8], body...)
}

// vp8xChunk returns an extended-format header chunk.
func vp8xChunk(flags byte, w, h int) []byte {
	data := make([]byte, 10)
	data[0] = flags
	data[4], data[5], data[6] = byte(w-1), byte((w-1)>>8), byte((w-1)>>16)
	data[7], data[8], data[9] = byte(h-1), byte((h-1)>>8), byte((h-1)>>16)
	return riffChunk("VP8X", data)
}
