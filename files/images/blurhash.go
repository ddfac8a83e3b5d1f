package images

import (
	"image"
	"math"
	"strings"

	"golang.org/x/image/draw"
)

// Blurhash components: how many cosine components the placeholder keeps
// across and down. Four by three suits photos of most shapes.
const (
	BlurhashXComponents = 4
	BlurhashYComponents = 3
)

// blurhashSampleSide is the longest side of the copy a blurhash is computed
// on: the hash keeps only the lowest frequencies, which a small copy has.
const blurhashSampleSide = 32

// base83Digits are the digits of the base-83 encoding blurhashes use.
const base83Digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz#$%*+,-.:;=?@[]^_{|}~"

// Blurhash returns the blurhash of img with xComponents × yComponents
// cosine components (each 1 to 9; out-of-range values are clamped),
// computed on a copy scaled to at most 32 pixels a side. Its length is
// 4 + 2×xComponents×yComponents characters.
func Blurhash(img image.Image, xComponents, yComponents int) string {
	xComponents, yComponents = clampComponents(xComponents), clampComponents(yComponents)
	sample := blurhashSample(img)
	factors := make([][3]float64, 0, xComponents*yComponents)
	for j := 0; j < yComponents; j++ {
		for i := 0; i < xComponents; i++ {
			factors = append(factors, cosineFactor(sample, i, j))
		}
	}
	return encodeFactors(factors, xComponents, yComponents)
}

// clampComponents returns n limited to the 1 to 9 components a hash holds.
func clampComponents(n int) int {
	return min(max(n, 1), 9)
}

// blurhashSample returns img scaled down (never up) to fit in a
// blurhashSampleSide square, as RGBA.
func blurhashSample(img image.Image) *image.RGBA {
	b := img.Bounds()
	w, h := ThumbnailSize(b.Dx(), b.Dy(), blurhashSampleSide)
	sample := image.NewRGBA(image.Rect(0, 0, max(w, 1), max(h, 1)))
	small := shrink(img, blurhashSampleSide)
	draw.BiLinear.Scale(sample, sample.Rect, small, small.Bounds(), draw.Src, nil)
	return sample
}

// cosineFactor returns the weight of the (i, j) cosine basis function in
// the linear-light colours of img, for each of red, green and blue.
func cosineFactor(img *image.RGBA, i, j int) [3]float64 {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	var sum [3]float64
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			basis := math.Cos(math.Pi*float64(i*x)/float64(w)) *
				math.Cos(math.Pi*float64(j*y)/float64(h))
			p := img.Pix[img.PixOffset(x, y):]
			for c := 0; c < 3; c++ {
				sum[c] += basis * srgbToLinear(p[c])
			}
		}
	}
	normalisation := 2.0
	if i == 0 && j == 0 {
		normalisation = 1
	}
	scale := normalisation / float64(w*h)
	return [3]float64{sum[0] * scale, sum[1] * scale, sum[2] * scale}
}

// encodeFactors writes the hash: the components' count, the quantised
// largest AC value, the DC colour and the AC values.
func encodeFactors(factors [][3]float64, xComponents, yComponents int) string {
	var b strings.Builder
	writeBase83(&b, (xComponents-1)+(yComponents-1)*9, 1)
	ac := factors[1:]
	maximum := 1.0
	if len(ac) > 0 {
		quantised := quantiseMaximum(largestMagnitude(ac))
		maximum = float64(quantised+1) / 166
		writeBase83(&b, quantised, 1)
	} else {
		writeBase83(&b, 0, 1)
	}
	writeBase83(&b, encodeDC(factors[0]), 4)
	for _, f := range ac {
		writeBase83(&b, encodeAC(f, maximum), 2)
	}
	return b.String()
}

// largestMagnitude returns the largest absolute value among the AC factors.
func largestMagnitude(ac [][3]float64) float64 {
	largest := 0.0
	for _, f := range ac {
		for _, v := range f {
			largest = max(largest, math.Abs(v))
		}
	}
	return largest
}

// quantiseMaximum maps the largest AC magnitude to 0..82.
func quantiseMaximum(largest float64) int {
	return int(max(0, min(82, math.Floor(largest*166-0.5))))
}

// encodeDC packs the average colour as 24-bit sRGB.
func encodeDC(f [3]float64) int {
	return linearToSRGB(f[0])<<16 | linearToSRGB(f[1])<<8 | linearToSRGB(f[2])
}

// encodeAC packs one AC factor, relative to maximum, as three base-19
// digits.
func encodeAC(f [3]float64, maximum float64) int {
	quantise := func(v float64) int {
		return int(max(0, min(18, math.Floor(signedPow(v/maximum, 0.5)*9+9.5))))
	}
	return quantise(f[0])*19*19 + quantise(f[1])*19 + quantise(f[2])
}

// signedPow returns |v|^exp with the sign of v.
func signedPow(v, exp float64) float64 {
	return math.Copysign(math.Pow(math.Abs(v), exp), v)
}

// writeBase83 writes value as length base-83 digits, most significant
// first.
func writeBase83(b *strings.Builder, value, length int) {
	divisor := 1
	for i := 1; i < length; i++ {
		divisor *= 83
	}
	for ; divisor > 0; divisor /= 83 {
		b.WriteByte(base83Digits[(value/divisor)%83])
	}
}

// srgbToLinear converts an 8-bit sRGB component to linear light in 0..1.
func srgbToLinear(c uint8) float64 {
	v := float64(c) / 255
	if v <= 0.04045 {
		return v / 12.92
	}
	return math.Pow((v+0.055)/1.055, 2.4)
}

// linearToSRGB converts linear light (clamped to 0..1) to an 8-bit sRGB
// component.
func linearToSRGB(v float64) int {
	v = max(0, min(1, v))
	if v <= 0.0031308 {
		return int(v*12.92*255 + 0.5)
	}
	return int((1.055*math.Pow(v, 1/2.4)-0.055)*255 + 0.5)
}
