package vec

// WeightedSqErr returns sum_c w[c]*(p[c]-y[c])^2 and, when dp is not nil,
// sets dp[c] = scale*w[c]*(p[c]-y[c]) (the gradient for scale = 2/rows).
func WeightedSqErr(p, y, w, dp []float32, scale float32) float32 {
	return wseImpl(p, y, w, dp, scale)
}

var wseImpl = wseGeneric

func wseGeneric(p, y, w, dp []float32, scale float32) float32 {
	y, w = y[:len(p)], w[:len(p)]
	var s float32
	for c := range p {
		d := p[c] - y[c]
		s += w[c] * d * d
		if dp != nil {
			dp[c] = scale * w[c] * d
		}
	}
	return s
}
