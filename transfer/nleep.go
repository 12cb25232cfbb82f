package transfer

import (
	"fmt"
	"gonum.org/v1/gonum/floats"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// NLEEP is Li et al.'s (2021) N-LEEP, configured as google-research's
// stable_transfer runs it: the features are reduced by PCA to the fewest
// components that keep 80% of the variance, a Gaussian mixture with 5
// components per class (full covariances, as scikit-learn's defaults:
// k-means initialisation, covariance regularisation 1e-6, EM to a change
// in the mean log-likelihood under 1e-3 or 100 steps) is fitted, and its
// posteriors stand in for the source model's outputs in LEEP. The score is
// the paper's mean log-likelihood (TencentARC/SFDA's variant drops the
// log). seed fixes the k-means initialisation.
func NLEEP(f Features, seed uint64) (float64, error) {
	x, d, resp, k, err := nleepStart(f, seed)
	if err != nil {
		return 0, err
	}
	post, err := fitGMM(x, f.N, d, k, resp)
	if err != nil {
		return 0, fmt.Errorf("NLEEP: %w", err)
	}
	return LEEP(post, k, f.Y, f.C)
}

// nleepStart reduces the features and returns the k-means
// responsibilities that start EM.
func nleepStart(f Features, seed uint64) (x []float64, d int, resp []float64, k int, err error) {
	if err := f.check(); err != nil {
		return nil, 0, nil, 0, err
	}
	d = varianceComponents(f.X, f.N, f.D, 0.8)
	if x, err = pca(f.X, f.N, f.D, d); err != nil {
		return nil, 0, nil, 0, err
	}
	k = min(5*f.C, f.N)
	labels := kmeans(x, f.N, d, k, rand.New(rand.NewPCG(seed, 123)))
	resp = make([]float64, f.N*k)
	for i, l := range labels {
		resp[i*k+l] = 1
	}
	return x, d, resp, k, nil
}

// varianceComponents is scikit-learn's PCA(n_components=ratio) choice:
// the fewest leading components whose explained variance reaches ratio.
func varianceComponents(x []float64, n, d int, ratio float64) int {
	var svd mat.SVD
	if !svd.Factorize(mat.NewDense(n, d, centred(x, n, d)), mat.SVDNone) {
		return min(n, d)
	}
	s := svd.Values(nil)
	var total float64
	for _, v := range s {
		total += v * v
	}
	var cum float64
	for i, v := range s {
		cum += v * v / total
		if cum > ratio {
			return i + 1
		}
	}
	return len(s)
}

// kmeans clusters the rows of x into k groups: k-means++ seeding, then
// Lloyd's steps until no label changes (at most 300).
func kmeans(x []float64, n, d, k int, r *rand.Rand) []int {
	centres := make([]float64, 0, k*d)
	dist := make([]float64, n)
	for i := range dist {
		dist[i] = math.Inf(1)
	}
	first := r.IntN(n)
	centres = append(centres, x[first*d:(first+1)*d]...)
	for c := 1; c < k; c++ {
		last := centres[(c-1)*d:]
		var total float64
		for i := range n {
			dist[i] = min(dist[i], sqDist(x[i*d:(i+1)*d], last))
			total += dist[i]
		}
		pick := n - 1
		if total > 0 {
			u := r.Float64() * total
			for i, v := range dist {
				if u -= v; u < 0 {
					pick = i
					break
				}
			}
		} else {
			pick = r.IntN(n)
		}
		centres = append(centres, x[pick*d:(pick+1)*d]...)
	}
	labels := make([]int, n)
	for i := range labels {
		labels[i] = -1
	}
	counts := make([]float64, k)
	for range 300 {
		changed := false
		for i := range n {
			best, bestD := 0, math.Inf(1)
			for c := range k {
				if v := sqDist(x[i*d:(i+1)*d], centres[c*d:(c+1)*d]); v < bestD {
					best, bestD = c, v
				}
			}
			if labels[i] != best {
				labels[i], changed = best, true
			}
		}
		if !changed {
			break
		}
		clear(counts)
		sums := make([]float64, k*d)
		for i, l := range labels {
			counts[l]++
			for j := range d {
				sums[l*d+j] += x[i*d+j]
			}
		}
		for c := range k {
			if counts[c] == 0 {
				continue // an empty cluster keeps its centre
			}
			for j := range d {
				centres[c*d+j] = sums[c*d+j] / counts[c]
			}
		}
	}
	return labels
}

func sqDist(a, b []float64) float64 {
	d := floats.Distance(a, b, 2)
	return d * d
}

// fitGMM runs EM for a full-covariance Gaussian mixture from the given
// responsibilities [n x k] and returns the fitted posteriors [n x k].
func fitGMM(x []float64, n, d, k int, resp []float64) ([]float64, error) {
	g, err := mStep(x, n, d, k, resp)
	if err != nil {
		return nil, err
	}
	lower := math.Inf(-1)
	for range 100 {
		prev := lower
		lower = g.eStep(x, n, d, resp)
		if g, err = mStep(x, n, d, k, resp); err != nil {
			return nil, err
		}
		if math.Abs(lower-prev) < 1e-3 {
			break
		}
	}
	g.eStep(x, n, d, resp)
	return resp, nil
}

type gmm struct {
	logWeight []float64
	means     []float64
	chol      []*mat.Cholesky
}

// mStep estimates weights, means and covariances (plus 1e-6 on the
// diagonal) from responsibilities.
func mStep(x []float64, n, d, k int, resp []float64) (*gmm, error) {
	g := &gmm{logWeight: make([]float64, k), means: make([]float64, k*d), chol: make([]*mat.Cholesky, k)}
	for c := range k {
		var nk float64
		mean := g.means[c*d : (c+1)*d]
		for i := range n {
			r := resp[i*k+c]
			nk += r
			for j := range d {
				mean[j] += r * x[i*d+j]
			}
		}
		nk += 10 * 2.220446049250313e-16 // as scikit-learn, so an empty component divides
		for j := range mean {
			mean[j] /= nk
		}
		g.logWeight[c] = math.Log(nk / float64(n))
		cov := mat.NewSymDense(d, nil)
		diff := make([]float64, d)
		for i := range n {
			r := resp[i*k+c]
			if r == 0 {
				continue
			}
			for j := range d {
				diff[j] = x[i*d+j] - mean[j]
			}
			cov.SymRankOne(cov, r, mat.NewVecDense(d, diff))
		}
		cov.ScaleSym(1/nk, cov)
		for j := range d {
			cov.SetSym(j, j, cov.At(j, j)+1e-6)
		}
		g.chol[c] = &mat.Cholesky{}
		if !g.chol[c].Factorize(cov) {
			return nil, fmt.Errorf("component %d's covariance is not positive definite; too few examples for %d components", c, k)
		}
	}
	return g, nil
}

// eStep writes the posteriors into resp and returns the mean
// log-likelihood.
func (g *gmm) eStep(x []float64, n, d int, resp []float64) float64 {
	k := len(g.logWeight)
	logDet := make([]float64, k)
	for c := range k {
		logDet[c] = g.chol[c].LogDet()
	}
	diff := mat.NewVecDense(d, nil)
	var sol mat.VecDense
	var total float64
	for i := range n {
		row := resp[i*k : (i+1)*k]
		for c := range k {
			for j := range d {
				diff.SetVec(j, x[i*d+j]-g.means[c*d+j])
			}
			if err := g.chol[c].SolveVecTo(&sol, diff); err != nil {
				row[c] = math.Inf(-1)
				continue
			}
			maha := mat.Dot(diff, &sol)
			row[c] = g.logWeight[c] - 0.5*(float64(d)*math.Log(2*math.Pi)+logDet[c]+maha)
		}
		top := math.Inf(-1)
		for _, v := range row {
			top = max(top, v)
		}
		var sum float64
		for _, v := range row {
			sum += math.Exp(v - top)
		}
		norm := top + math.Log(sum)
		total += norm
		for c := range row {
			row[c] = math.Exp(row[c] - norm)
		}
	}
	return total / float64(n)
}
