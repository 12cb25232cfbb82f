package transfer

import (
	"fmt"
	"gonum.org/v1/gonum/floats"
	"math"

	"gonum.org/v1/gonum/mat"
)

// SFDA is Shao et al.'s (2022) self-challenging Fisher discriminant
// analysis score, as TencentARC/SFDA's metrics.py computes it:
//
//  1. A regularised Fisher discriminant: the within-class scatter S_w is
//     the prior-weighted sum of the classes' biased covariances, shrunk
//     towards tr(S_w)/D times I by lambda = max(exp(-5 lambda_max), 1e-10),
//     lambda_max from 3 power-iteration steps; the total covariance is
//     shrunk by the same lambda and S_b = S_t - S_w'. The generalised
//     eigenvectors V of (S_b, S_w') give coef = M V V^T (M the class means)
//     and p(y | x) = softmax(x coef^T - diag(M coef^T)/2 + ln prior).
//  2. ConfMix: p is softened by a second softmax; each example x of class
//     c moves to p_c(x) x + (1 - p_c(x)) m_c, m_c the mean of the other
//     classes' means.
//  3. The discriminant is refitted on the mixed features with the same
//     lambda; the score is the mean of p(y_i | x_i) (no log, as there).
//
// Every class must have at least one example.
func SFDA(f Features) (float64, error) {
	if err := f.check(); err != nil {
		return 0, err
	}
	if f.C < 2 {
		return 0, fmt.Errorf("SFDA: needs at least 2 classes, got %d", f.C)
	}
	means, counts := classMeansCounts(f)
	for c, n := range counts {
		if n == 0 {
			return 0, fmt.Errorf("SFDA: class %d has no examples", c)
		}
	}
	first, lambda, err := fisherProba(f, -1)
	if err != nil {
		return 0, err
	}
	// ConfMix on a copy, with the first fit's softened probabilities.
	outer := make([][]float64, f.C)
	for c := range outer {
		outer[c] = make([]float64, f.D)
		for o := range f.C {
			if o == c {
				continue
			}
			for j := range f.D {
				outer[c][j] += means[o][j] / float64(f.C-1)
			}
		}
	}
	mixed := make([]float64, len(f.X))
	row := make([]float64, f.C)
	for i, c := range f.Y {
		copy(row, first[i*f.C:(i+1)*f.C])
		softmaxInPlace(row)
		p := row[c]
		for j := range f.D {
			mixed[i*f.D+j] = p*f.X[i*f.D+j] + (1-p)*outer[c][j]
		}
	}
	second, _, err := fisherProba(Features{X: mixed, N: f.N, D: f.D, C: f.C, Y: f.Y}, lambda)
	if err != nil {
		return 0, err
	}
	var sum float64
	for i, c := range f.Y {
		sum += second[i*f.C+c]
	}
	return sum / float64(f.N), nil
}

// fisherProba fits the shrunk Fisher discriminant (lambda < 0: chosen
// from the within-class scatter) and returns p(y | x) for every example
// [N x C] and the shrinkage used.
func fisherProba(f Features, lambda float64) ([]float64, float64, error) {
	means, counts := classMeansCounts(f)
	d := f.D
	sw := mat.NewDense(d, d, nil)
	for c := range f.C {
		rows := make([]float64, 0, int(counts[c])*d)
		for i, y := range f.Y {
			if y == c {
				rows = append(rows, f.X[i*d:(i+1)*d]...)
			}
		}
		cov := covariance(rows, int(counts[c]), d)
		cov.Scale(counts[c]/float64(f.N), cov)
		sw.Add(sw, cov)
	}
	if lambda < 0 {
		lambda = max(math.Exp(-5*largestEigenvalue(sw, 3)), 1e-10)
	}
	shrunkW := shrink(sw, lambda)
	shrunkT := shrink(covariance(f.X, f.N, d), lambda)
	var sb mat.Dense
	sb.Sub(shrunkT, shrunkW)
	v, err := generalisedEigenvectors(&sb, shrunkW)
	if err != nil {
		return nil, 0, err
	}
	m := mat.NewDense(f.C, d, nil)
	for c := range f.C {
		m.SetRow(c, means[c])
	}
	var mv, coef mat.Dense
	mv.Mul(m, v)
	coef.Mul(&mv, v.T()) // C x D
	intercept := make([]float64, f.C)
	for c := range f.C {
		intercept[c] = -0.5*mat.Dot(m.RowView(c), coef.RowView(c)) + math.Log(counts[c]/float64(f.N))
	}
	var scores mat.Dense
	scores.Mul(f.matrix(), coef.T())
	out := make([]float64, f.N*f.C)
	for i := range f.N {
		row := out[i*f.C : (i+1)*f.C]
		for c := range f.C {
			row[c] = scores.At(i, c) + intercept[c]
		}
		softmaxInPlace(row)
	}
	return out, lambda, nil
}

// shrink returns (1 - lambda) a + lambda tr(a)/D I.
func shrink(a *mat.Dense, lambda float64) *mat.Dense {
	d, _ := a.Dims()
	mu := mat.Trace(a) / float64(d)
	var s mat.Dense
	s.Scale(1-lambda, a)
	for i := range d {
		s.Set(i, i, s.At(i, i)+lambda*mu)
	}
	return &s
}

// largestEigenvalue is the reference's power iteration (utils.iterative_A):
// start from the row sums, iterate twice per step, return x^T A y.
func largestEigenvalue(a *mat.Dense, steps int) float64 {
	d, _ := a.Dims()
	x := mat.NewVecDense(d, nil)
	for i := range d {
		x.SetVec(i, mat.Sum(a.RowView(i)))
	}
	y := mat.NewVecDense(d, nil)
	for range steps {
		y.MulVec(a, x)
		y.ScaleVec(1/mat.Norm(y, 2), y)
		x.MulVec(a, y)
		x.ScaleVec(1/mat.Norm(x, 2), x)
	}
	var ay mat.VecDense
	ay.MulVec(a, y)
	return mat.Dot(x, &ay)
}

// generalisedEigenvectors solves a v = e b v for symmetric a and
// symmetric positive definite b (scipy.linalg.eigh(a, b)): through the
// Cholesky factor b = L L^T, the eigenvectors u of L^-1 a L^-T give
// v = L^-T u, normalised so v^T b v = 1; columns by descending e.
func generalisedEigenvectors(a, b *mat.Dense) (*mat.Dense, error) {
	d, _ := a.Dims()
	var chol mat.Cholesky
	if !chol.Factorize(symmetric(b)) {
		return nil, fmt.Errorf("SFDA: the shrunk within-class scatter is not positive definite")
	}
	var l mat.TriDense
	chol.LTo(&l)
	var linvA, c mat.Dense
	if err := linvA.Solve(&l, a); err != nil { // L^-1 a
		return nil, fmt.Errorf("SFDA: %w", err)
	}
	var t mat.Dense
	if err := t.Solve(&l, linvA.T()); err != nil { // L^-1 (L^-1 a)^T = L^-1 a L^-T
		return nil, fmt.Errorf("SFDA: %w", err)
	}
	c.CloneFrom(&t)
	var eig mat.EigenSym
	if !eig.Factorize(symmetric(&c), true) {
		return nil, fmt.Errorf("SFDA: the eigen-decomposition did not converge")
	}
	var u mat.Dense
	eig.VectorsTo(&u) // ascending eigenvalues
	var v mat.Dense
	if err := v.Solve(l.T(), &u); err != nil {
		return nil, fmt.Errorf("SFDA: %w", err)
	}
	out := mat.NewDense(d, d, nil)
	for k := range d {
		out.SetCol(k, mat.Col(nil, d-1-k, &v))
	}
	return out, nil
}

// symmetric averages a with its transpose into a SymDense.
func symmetric(a mat.Matrix) *mat.SymDense {
	d, _ := a.Dims()
	s := mat.NewSymDense(d, nil)
	for i := range d {
		for j := i; j < d; j++ {
			s.SetSym(i, j, (a.At(i, j)+a.At(j, i))/2)
		}
	}
	return s
}

// softmaxInPlace replaces row by its softmax.
func softmaxInPlace(row []float64) {
	lse := floats.LogSumExp(row)
	for i, v := range row {
		row[i] = math.Exp(v - lse)
	}
}

// classMeansCounts is classMeans with the class sizes.
func classMeansCounts(f Features) ([][]float64, []float64) {
	counts := make([]float64, f.C)
	for _, c := range f.Y {
		counts[c]++
	}
	return classMeans(f), counts
}
