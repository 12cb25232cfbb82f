package transfer

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// Features are N examples' feature vectors (row-major, N x D) with their
// class labels in [0, C).
type Features struct {
	X       []float64
	N, D, C int
	Y       []int
}

func (f Features) check() error {
	if f.N <= 0 || f.D <= 0 || len(f.X) != f.N*f.D || len(f.Y) != f.N {
		return fmt.Errorf("transferability: %d values and %d labels for %d examples of %d features", len(f.X), len(f.Y), f.N, f.D)
	}
	for _, y := range f.Y {
		if y < 0 || y >= f.C {
			return fmt.Errorf("transferability: label %d outside %d classes", y, f.C)
		}
	}
	return nil
}

func (f Features) matrix() *mat.Dense { return mat.NewDense(f.N, f.D, f.X) }

// LogME is You et al.'s (2021) log maximum evidence, as thuml/LogME's
// fixed-point fit (LogME.py, _fit_fixed_point): per class, the evidence of
// a Bayesian linear regression of the one-hot target on the features, its
// prior and noise precisions (alpha, beta) maximised by at most 11
// fixed-point steps (stopping when alpha/beta moves by under 0.1%),
// divided by N; the mean over classes.
//
// The log-determinant ln det(alpha I + beta F^T F) covers the min(N, D)
// singular directions of F, zeros included. With N > D that is the exact
// evidence: a direction F does not span adds ln alpha, which cancels its
// share of D/2 ln alpha, so a feature that is 0 for every example (a dead
// ReLU unit) leaves LogME unchanged. thuml's code computes the same,
// except that its truncated SVD drops singular values of exactly 0 (those
// of all-zero features), raising the score by ln(alpha)/2N for each such
// feature. With N < D the D - N directions outside the examples' span are
// left out, as thuml's code leaves them out (its published scores are
// computed so). transfer/testdata/make_reference.py computes both.
func LogME(f Features) (float64, error) {
	if err := f.check(); err != nil {
		return 0, err
	}
	var svd mat.SVD
	if !svd.Factorize(f.matrix(), mat.SVDThin) {
		return 0, fmt.Errorf("LogME: the SVD of the features did not converge")
	}
	s := svd.Values(nil)
	var u mat.Dense
	svd.UTo(&u)
	k := len(s)
	sigma := make([]float64, k)
	for i := range sigma {
		sigma[i] = s[i] * s[i]
	}
	n := float64(f.N)
	var total float64
	for c := range f.C {
		yc := make([]float64, f.N)
		var yy float64
		for i, y := range f.Y {
			if y == c {
				yc[i] = 1
				yy++
			}
		}
		x := make([]float64, k)
		var xx float64
		for j := range k {
			for i := range f.N {
				x[j] += u.At(i, j) * yc[i]
			}
			xx += x[j] * x[j]
		}
		resX2 := yy - xx
		alpha, beta := 1.0, 1.0
		var gamma, m2, res2 float64
		for range 11 {
			t := alpha / beta
			gamma, m2, res2 = 0, 0, resX2
			for j, sg := range sigma {
				gamma += sg / (sg + t)
				m2 += sg * x[j] * x[j] / ((t + sg) * (t + sg))
				res2 += x[j] * x[j] / ((1 + sg/t) * (1 + sg/t))
			}
			alpha, beta = gamma/(m2+1e-5), (n-gamma)/(res2+1e-5)
			if math.Abs(alpha/beta-t)/t <= 1e-3 {
				break
			}
		}
		// The evidence at the final alpha, beta, with the m2 and res2 of
		// the last step (as the reference).
		ev := float64(f.D)/2*math.Log(alpha) + n/2*math.Log(beta) - beta/2*res2 - alpha/2*m2 - n/2*math.Log(2*math.Pi)
		for _, sg := range sigma {
			ev -= 0.5 * math.Log(alpha+beta*sg)
		}
		total += ev / n
	}
	return total / float64(f.C), nil
}

// LEEP is Nguyen et al.'s (2020) log expected empirical prediction: with
// theta the source model's softmax outputs (N x Z), the empirical joint
// P(y, z) = sum of theta_z over examples of class y, / N, and
// P(y | z) = P(y, z) / P(z): the mean of ln sum_z P(y_i | z) theta_z(x_i).
func LEEP(theta []float64, z int, y []int, classes int) (float64, error) {
	n := len(y)
	if n == 0 || len(theta) != n*z {
		return 0, fmt.Errorf("LEEP: %d source outputs for %d examples of %d source classes", len(theta), n, z)
	}
	joint := make([]float64, classes*z)
	for i, c := range y {
		for k := range z {
			joint[c*z+k] += theta[i*z+k] / float64(n)
		}
	}
	marg := make([]float64, z)
	for c := range classes {
		for k := range z {
			marg[k] += joint[c*z+k]
		}
	}
	var sum float64
	for i, c := range y {
		var p float64
		for k := range z {
			if marg[k] > 0 {
				p += joint[c*z+k] / marg[k] * theta[i*z+k]
			}
		}
		sum += math.Log(p)
	}
	return sum / float64(n), nil
}

// NCE is Tran et al.'s (2019) negative conditional entropy -H(Y | Z),
// with z_i the source model's predicted class (argmax of theta).
func NCE(theta []float64, z int, y []int, classes int) (float64, error) {
	n := len(y)
	if n == 0 || len(theta) != n*z {
		return 0, fmt.Errorf("NCE: %d source outputs for %d examples of %d source classes", len(theta), n, z)
	}
	count := make([]float64, classes*z)
	pz := make([]float64, z)
	for i, c := range y {
		best := 0
		for k := 1; k < z; k++ {
			if theta[i*z+k] > theta[i*z+best] {
				best = k
			}
		}
		count[c*z+best]++
		pz[best]++
	}
	var h float64
	for k := range z {
		if pz[k] == 0 {
			continue
		}
		for c := range classes {
			p := count[c*z+k] / pz[k]
			h -= pz[k] / float64(n) * p * math.Log(p+1e-20)
		}
	}
	return -h, nil
}

// HScore is Bao et al.'s (2019) H-score: tr(pinv(Cov(F)) Cov(G)), G the
// features replaced by their class means (covariances biased; the
// pseudo-inverse drops singular values under 1e-15 of the largest).
func HScore(f Features) (float64, error) {
	if err := f.check(); err != nil {
		return 0, err
	}
	means := classMeans(f)
	g := make([]float64, len(f.X))
	for i, c := range f.Y {
		copy(g[i*f.D:(i+1)*f.D], means[c])
	}
	covF := covariance(f.X, f.N, f.D)
	covG := covariance(g, f.N, f.D)
	pinv, err := pseudoInverse(covF, 1e-15)
	if err != nil {
		return 0, err
	}
	var prod mat.Dense
	prod.Mul(pinv, covG)
	return mat.Trace(&prod), nil
}

// TransRate is Huang et al.'s (2022) coding-rate difference R(Z) - mean
// over classes of R(Z_k), R(Z) = 1/2 ln det(I + Z^T Z / (n eps)) of the
// centred features, eps = 1e-4.
func TransRate(f Features) (float64, error) {
	if err := f.check(); err != nil {
		return 0, err
	}
	z := centred(f.X, f.N, f.D)
	rate := func(rows []int) float64 {
		m := mat.NewDense(len(rows), f.D, nil)
		for r, i := range rows {
			m.SetRow(r, z[i*f.D:(i+1)*f.D])
		}
		var g mat.SymDense
		g.SymOuterK(1/(float64(len(rows))*1e-4), m.T())
		for j := range f.D {
			g.SetSym(j, j, g.At(j, j)+1)
		}
		var ch mat.Cholesky
		if !ch.Factorize(&g) {
			return math.NaN()
		}
		return 0.5 * ch.LogDet()
	}
	all := make([]int, f.N)
	byClass := make([][]int, f.C)
	for i, c := range f.Y {
		all[i] = i
		byClass[c] = append(byClass[c], i)
	}
	r := rate(all)
	var within float64
	for _, rows := range byClass {
		if len(rows) > 0 {
			within += rate(rows)
		}
	}
	return r - within/float64(f.C), nil
}

func classMeans(f Features) [][]float64 {
	means := make([][]float64, f.C)
	counts := make([]float64, f.C)
	for c := range means {
		means[c] = make([]float64, f.D)
	}
	for i, c := range f.Y {
		counts[c]++
		for j := range f.D {
			means[c][j] += f.X[i*f.D+j]
		}
	}
	for c := range means {
		for j := range means[c] {
			if counts[c] > 0 {
				means[c][j] /= counts[c]
			}
		}
	}
	return means
}

func centred(x []float64, n, d int) []float64 {
	mean := make([]float64, d)
	for i := range n {
		for j := range d {
			mean[j] += x[i*d+j] / float64(n)
		}
	}
	out := make([]float64, len(x))
	for i := range n {
		for j := range d {
			out[i*d+j] = x[i*d+j] - mean[j]
		}
	}
	return out
}

// covariance is the biased (1/N) covariance of rows of x.
func covariance(x []float64, n, d int) *mat.Dense {
	z := mat.NewDense(n, d, centred(x, n, d))
	var c mat.Dense
	c.Mul(z.T(), z)
	c.Scale(1/float64(n), &c)
	return &c
}

// pseudoInverse is numpy's pinv(a, rcond): singular values under rcond
// times the largest are dropped.
func pseudoInverse(a *mat.Dense, rcond float64) (*mat.Dense, error) {
	var svd mat.SVD
	if !svd.Factorize(a, mat.SVDThin) {
		return nil, fmt.Errorf("pseudo-inverse: the SVD did not converge")
	}
	s := svd.Values(nil)
	var u, v mat.Dense
	svd.UTo(&u)
	svd.VTo(&v)
	r, _ := a.Dims()
	inv := mat.NewDense(r, r, nil)
	for k, sv := range s {
		if sv <= rcond*s[0] {
			continue
		}
		for i := range r {
			for j := range r {
				inv.Set(i, j, inv.At(i, j)+v.At(i, k)*u.At(j, k)/sv)
			}
		}
	}
	return inv, nil
}

// GBC is Pándy et al.'s (2022) Gaussian Bhattacharyya coefficient, in the
// configuration of google-research's stable_transfer (spherical
// Gaussians, features reduced by PCA to min(64, N) dimensions when wider
// than 64; the reference's PCA refuses fewer than 64 examples): per
// class the mean and the mean of the per-dimension variances (floored at
// 1e-4); D_B = 1/8 |mu1 - mu2|^2 / v + 1/2 (ln v - (ln v1 + ln v2) / 2)
// with v = (v1 + v2) / 2 (the log term, as there, not times the
// dimension); GBC = -sum over ordered class pairs of exp(-D_B). Higher
// (closer to 0) means better separated classes.
func GBC(f Features) (float64, error) {
	if err := f.check(); err != nil {
		return 0, err
	}
	const dims = 64
	x, d := f.X, f.D
	if d > dims {
		var err error
		if x, err = pca(f.X, f.N, f.D, dims); err != nil {
			return 0, err
		}
		d = len(x) / f.N // min(64, N): fewer examples than 64 span fewer directions
	}
	reduced := Features{X: x, N: f.N, D: d, C: f.C, Y: f.Y}
	means := classMeans(reduced)
	variance := make([]float64, f.C)
	counts := make([]float64, f.C)
	perDim := make([][]float64, f.C)
	for c := range perDim {
		perDim[c] = make([]float64, d)
	}
	for i, c := range f.Y {
		counts[c]++
		for j := range d {
			diff := x[i*d+j] - means[c][j]
			perDim[c][j] += diff * diff
		}
	}
	for c := range variance {
		for j := range d {
			variance[c] += max(perDim[c][j]/max(counts[c], 1), 1e-4) / float64(d)
		}
	}
	var sum float64
	for a := range f.C {
		for b := range f.C {
			if a == b || counts[a] == 0 || counts[b] == 0 {
				continue
			}
			v := (variance[a] + variance[b]) / 2
			var dist float64
			for j := range d {
				dm := means[a][j] - means[b][j]
				dist += dm * dm
			}
			db := dist/(8*v) + 0.5*(math.Log(v)-0.5*math.Log(variance[a])-0.5*math.Log(variance[b]))
			sum += math.Exp(-db)
		}
	}
	return -sum, nil
}

// pca projects the centred rows of x [n, d] onto their k leading
// principal directions.
func pca(x []float64, n, d, k int) ([]float64, error) {
	z := mat.NewDense(n, d, centred(x, n, d))
	var svd mat.SVD
	if !svd.Factorize(z, mat.SVDThin) {
		return nil, fmt.Errorf("PCA: the SVD did not converge")
	}
	var v mat.Dense
	svd.VTo(&v)
	k = min(k, len(svd.Values(nil)))
	var proj mat.Dense
	proj.Mul(z, v.Slice(0, d, 0, k))
	return proj.RawMatrix().Data, nil
}
