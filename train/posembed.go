package train

import (
	"fmt"
	"math"

	"github.com/gatepipe/gatepipe/internal/imageops"
)

// resamplePosEmbed resizes a ViT position embedding of rows tokens (its
// prefix rows, the class token's, kept as they are) to the patch grid of
// an image of the given shape, as timm's resample_abs_pos_embed does:
// the square grid is resampled bicubic, antialiased, without aligned
// corners.
func (e EncoderSpec) resamplePosEmbed(v []float32, rows int, shape []int) ([]float32, error) {
	prefix := 0
	if !e.NoEmbedClass {
		prefix = e.prefixTokens()
	}
	d := e.Dim
	n := rows - prefix
	side := int(math.Round(math.Sqrt(float64(n))))
	if n <= 0 || side*side != n {
		return nil, fmt.Errorf("a position embedding of %d tokens (%d after the class token), not a square grid to resample", rows, n)
	}
	gh, gw := shape[1]/e.Patch, shape[2]/e.Patch
	// [side*side, D] -> [D, side, side] planes, resized, and back.
	planes := make([]float32, d*n)
	for t := range n {
		for c := range d {
			planes[c*n+t] = v[(prefix+t)*d+c]
		}
	}
	resized := imageops.Resize(planes, d, side, side, gh, gw, imageops.Bicubic)
	out := make([]float32, (prefix+gh*gw)*d)
	copy(out, v[:prefix*d])
	for t := range gh * gw {
		for c := range d {
			out[(prefix+t)*d+c] = resized[c*gh*gw+t]
		}
	}
	return out, nil
}
