package train

// outBuf keeps an op's output buffer from one pass of the tape to the
// next: every pass overwrites all of it, and the op's value is read only
// until the next pass (by later ops, by Read nodes the caller copies from,
// and, for a parameter's gradient, by the optimiser's step), so reusing
// it saves an allocation and the page faults of touching fresh memory —
// for a ResNet-50 batch, gigabytes per pass.
// A copied op (a backward op made from a forward one) must start with
// its own, empty outBuf.
type outBuf struct{ buf []float32 }

// get returns a buffer of n values, not cleared.
func (o *outBuf) get(n int) []float32 {
	if cap(o.buf) < n {
		o.buf = make([]float32, n)
	}
	return o.buf[:n]
}
