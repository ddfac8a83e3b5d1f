package images

import (
	"image"
	"image/color"
	"math"
	"strings"
	"testing"
)

func TestBlurhashLength(t *testing.T) {
	img := photo(50, 30)
	for _, c := range [][2]int{{1, 1}, {4, 3}, {3, 4}, {9, 9}, {5, 1}} {
		hash := Blurhash(img, c[0], c[1])
		if want := 4 + 2*c[0]*c[1]; len(hash) != want {
			t.Errorf("%dx%d components: hash %q has length %d, want %d", c[0], c[1], hash, len(hash), want)
		}
		if got := decodeBase83(hash[:1]); got != (c[0]-1)+(c[1]-1)*9 {
			t.Errorf("%dx%d components: size flag %d", c[0], c[1], got)
		}
	}
}

func TestBlurhashOfSolidColourEncodesItInDC(t *testing.T) {
	for _, c := range []color.RGBA{{255, 0, 0, 255}, {12, 200, 99, 255}, {0, 0, 0, 255}, {255, 255, 255, 255}} {
		img := image.NewRGBA(image.Rect(0, 0, 40, 25))
		for i := 0; i < len(img.Pix); i += 4 {
			copy(img.Pix[i:], []uint8{c.R, c.G, c.B, c.A})
		}
		hash := Blurhash(img, 4, 3)
		dc := decodeBase83(hash[2:6])
		if got := (color.RGBA{uint8(dc >> 16), uint8(dc >> 8), uint8(dc), 255}); got != c {
			t.Errorf("solid %v: DC colour %v (hash %q)", c, got, hash)
		}
		// The algorithm samples cosines at x/width rather than pixel
		// centres, so even a flat image has small odd AC components, at
		// most 2/side of the colour: 2/20 on the 32×20 sample of a 40×25
		// image, quantised to 166×0.1-0.5 = 16. A noisy image has more.
		if largest := decodeBase83(hash[1:2]); largest > 16 {
			t.Errorf("solid %v: quantised largest AC %d, want small (hash %q)", c, largest, hash)
		}
	}
}

func TestBlurhashDecodesToTheImagesColours(t *testing.T) {
	red, blue := color.RGBA{220, 30, 30, 255}, color.RGBA{30, 30, 220, 255}
	img := halves(64, 48, red, blue)
	hash := Blurhash(img, 4, 3)
	decoded := decodeBlurhash(t, hash, 32, 24)
	left := averageColour(decoded, image.Rect(0, 0, 16, 24))
	right := averageColour(decoded, image.Rect(16, 0, 32, 24))
	if !within(left, averageColour(img, image.Rect(0, 0, 32, 48)), 30) ||
		!within(right, averageColour(img, image.Rect(32, 0, 64, 48)), 30) {
		t.Errorf("decoded halves %v and %v, want near %v and %v", left, right, red, blue)
	}
}

// decodeBase83 reads base-83 digits.
func decodeBase83(s string) int {
	v := 0
	for i := 0; i < len(s); i++ {
		v = v*83 + strings.IndexByte(base83Digits, s[i])
	}
	return v
}

// decodeBlurhash draws a hash as a w×h image, following the algorithm's
// description independently of the encoder.
func decodeBlurhash(t *testing.T, hash string, w, h int) *image.RGBA {
	t.Helper()
	flag := decodeBase83(hash[:1])
	nx, ny := flag%9+1, flag/9+1
	if len(hash) != 4+2*nx*ny {
		t.Fatalf("hash %q has the wrong length", hash)
	}
	maximum := float64(decodeBase83(hash[1:2])+1) / 166
	dc := decodeBase83(hash[2:6])
	factors := [][3]float64{{srgbToLinear(uint8(dc >> 16)), srgbToLinear(uint8(dc >> 8)), srgbToLinear(uint8(dc))}}
	for i := 6; i < len(hash); i += 2 {
		v := decodeBase83(hash[i : i+2])
		unquantise := func(q int) float64 {
			d := float64(q-9) / 9
			return math.Copysign(d*d, d) * maximum
		}
		factors = append(factors, [3]float64{unquantise(v / 361), unquantise(v / 19 % 19), unquantise(v % 19)})
	}
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			var sum [3]float64
			for j := 0; j < ny; j++ {
				for i := 0; i < nx; i++ {
					basis := math.Cos(math.Pi*float64(x*i)/float64(w)) * math.Cos(math.Pi*float64(y*j)/float64(h))
					for c := 0; c < 3; c++ {
						sum[c] += factors[j*nx+i][c] * basis
					}
				}
			}
			img.SetRGBA(x, y, color.RGBA{uint8(linearToSRGB(sum[0])), uint8(linearToSRGB(sum[1])), uint8(linearToSRGB(sum[2])), 255})
		}
	}
	return img
}

// averageColour returns the mean sRGB colour of img within r.
func averageColour(img image.Image, r image.Rectangle) [3]float64 {
	var sum [3]float64
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			c := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)
			sum[0] += float64(c.R)
			sum[1] += float64(c.G)
			sum[2] += float64(c.B)
		}
	}
	n := float64(r.Dx() * r.Dy())
	return [3]float64{sum[0] / n, sum[1] / n, sum[2] / n}
}

// within reports whether two colours differ by at most tolerance in each
// component.
func within(a, b [3]float64, tolerance float64) bool {
	for c := range a {
		if math.Abs(a[c]-b[c]) > tolerance {
			return false
		}
	}
	return true
}
