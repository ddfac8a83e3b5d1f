package images

import (
	"image"
	"image/color"
)

// shrink returns img reduced by the largest whole factor that keeps its
// longest side at least maxSide (so below twice maxSide), averaging each
// factor×factor block of pixels (partial blocks at the edges average what
// they hold). An image less than twice maxSide is returned as it is.
//
// Scaling a large photo straight to a thumbnail filters every source pixel
// through the scaler's kernel, which is slow, and the kernel scaler holds
// 32 bytes for each source row times thumbnail column. Averaging blocks
// first does most of the reduction cheaply and without aliasing, and leaves
// the scaler less than twice the thumbnail's size to reduce: its buffer is
// then at most 64×maxSide² bytes (26 MB for a 640-pixel preview).
func shrink(img image.Image, maxSide int) image.Image {
	b := img.Bounds()
	factor := max(b.Dx(), b.Dy()) / max(maxSide, 1)
	if factor < 2 {
		return img
	}
	if ycc, ok := img.(*image.YCbCr); ok {
		return shrinkYCbCr(ycc, factor)
	}
	return shrinkRGBA(toRGBA(img), factor)
}

// blockSums accumulates the channel sums of one row of blocks.
type blockSums struct {
	factor int
	sums   []uint32 // four channels a block
	counts []uint32
}

// newBlockSums returns the sums of a row of blocks covering width pixels.
func newBlockSums(width, factor int) *blockSums {
	blocks := (width + factor - 1) / factor
	return &blockSums{factor: factor, sums: make([]uint32, 4*blocks), counts: make([]uint32, blocks)}
}

// add adds channel sums to block i, which covers n more pixels.
func (s *blockSums) add(i int, c0, c1, c2, c3, n uint32) {
	s.sums[4*i] += c0
	s.sums[4*i+1] += c1
	s.sums[4*i+2] += c2
	s.sums[4*i+3] += c3
	s.counts[i] += n
}

// average returns block i's average of channel c and resets it.
func (s *blockSums) average(i, c int) uint8 {
	n := s.counts[i]
	v := (s.sums[4*i+c] + n/2) / n
	s.sums[4*i+c] = 0
	return uint8(v)
}

// reset forgets the pixels counted, once all channels are averaged.
func (s *blockSums) reset() {
	clear(s.counts)
}

// shrinkYCbCr averages blocks of a YCbCr image in YCbCr, which is a linear
// function of RGB, and converts only the averages.
func shrinkYCbCr(img *image.YCbCr, factor int) *image.RGBA {
	r := img.Rect
	dst := image.NewRGBA(image.Rect(0, 0, (r.Dx()+factor-1)/factor, (r.Dy()+factor-1)/factor))
	sums := newBlockSums(r.Dx(), factor)
	for dy := 0; dy < dst.Rect.Dy(); dy++ {
		for y := r.Min.Y + dy*factor; y < min(r.Min.Y+(dy+1)*factor, r.Max.Y); y++ {
			addYCbCrRow(sums, img, y)
		}
		row := dst.Pix[dy*dst.Stride:]
		for i := range sums.counts {
			cr, cg, cb := color.YCbCrToRGB(sums.average(i, 0), sums.average(i, 1), sums.average(i, 2))
			row[4*i], row[4*i+1], row[4*i+2], row[4*i+3] = cr, cg, cb, 255
		}
		sums.reset()
	}
	return dst
}

// shrinkRGBA averages blocks of an RGBA image whose bounds start at (0, 0);
// premultiplied colours average correctly with their alpha.
func shrinkRGBA(img *image.RGBA, factor int) *image.RGBA {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	dst := image.NewRGBA(image.Rect(0, 0, (w+factor-1)/factor, (h+factor-1)/factor))
	sums := newBlockSums(w, factor)
	for dy := 0; dy < dst.Rect.Dy(); dy++ {
		for y := dy * factor; y < min((dy+1)*factor, h); y++ {
			addRGBARow(sums, img.Pix[y*img.Stride:y*img.Stride+4*w])
		}
		row := dst.Pix[dy*dst.Stride:]
		for i := range sums.counts {
			for c := 0; c < 4; c++ {
				row[4*i+c] = sums.average(i, c)
			}
		}
		sums.reset()
	}
	return dst
}

// addYCbCrRow adds row y of a YCbCr image to the sums of its blocks.
func addYCbCrRow(sums *blockSums, img *image.YCbCr, y int) {
	r := img.Rect
	for i := range sums.counts {
		x0 := r.Min.X + i*sums.factor
		x1 := min(x0+sums.factor, r.Max.X)
		var sy, scb, scr uint32
		for x := x0; x < x1; x++ {
			ci := img.COffset(x, y)
			sy += uint32(img.Y[img.YOffset(x, y)])
			scb += uint32(img.Cb[ci])
			scr += uint32(img.Cr[ci])
		}
		sums.add(i, sy, scb, scr, 0, uint32(x1-x0))
	}
}

// addRGBARow adds a row of RGBA pixels to the sums of its blocks.
func addRGBARow(sums *blockSums, row []uint8) {
	w := len(row) / 4
	for i := range sums.counts {
		x0 := i * sums.factor
		x1 := min(x0+sums.factor, w)
		var r, g, b, a uint32
		for x := x0; x < x1; x++ {
			p := row[4*x : 4*x+4]
			r += uint32(p[0])
			g += uint32(p[1])
			b += uint32(p[2])
			a += uint32(p[3])
		}
		sums.add(i, r, g, b, a, uint32(x1-x0))
	}
}
