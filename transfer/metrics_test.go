package transfer

import (
	"math"
	"math/rand/v2"
	"testing"
)

// numpyReference computes the metrics independently with numpy, from the
// formulas of the original papers and their reference code, written here
// (not taken from those repositories).
const numpyReference = `
import json, sys
import numpy as np

def logme(f, y, C):
    N, D = f.shape
    # all min(N, D) singular directions, zeros included (the exact
    # evidence when N > D; see testdata/make_reference.py for thuml's)
    u, s, _ = np.linalg.svd(f, full_matrices=False)
    sigma = s ** 2
    evs = []
    for c in range(C):
        yc = (y == c).astype(float)
        x = u.T @ yc
        res_x2 = yc @ yc - x @ x
        a = b = 1.0
        for _ in range(11):
            t = a / b
            g = (sigma / (sigma + t)).sum()
            m2 = (sigma * x**2 / (t + sigma)**2).sum()
            r2 = (x**2 / (1 + sigma / t)**2).sum() + res_x2
            a, b = g / (m2 + 1e-5), (N - g) / (r2 + 1e-5)
            if abs(a / b - t) / t <= 1e-3:
                break
        ev = D/2*np.log(a) + N/2*np.log(b) - 0.5*np.log(a + b*sigma).sum() - b/2*r2 - a/2*m2 - N/2*np.log(2*np.pi)
        evs.append(ev / N)
    return float(np.mean(evs))

def hscore(f, y, C):
    g = np.zeros_like(f)
    for c in range(C):
        if (y == c).any():
            g[y == c] = f[y == c].mean(0)
    cf = np.cov(f, rowvar=False, bias=True)
    cg = np.cov(g, rowvar=False, bias=True)
    return float(np.trace(np.linalg.pinv(cf, rcond=1e-15) @ cg))

def transrate(f, y, C, eps=1e-4):
    z = f - f.mean(0)
    def rate(m):
        n, d = m.shape
        return 0.5 * np.linalg.slogdet(np.eye(d) + m.T @ m / (n * eps))[1]
    return float(rate(z) - np.mean([rate(z[y == c]) for c in range(C)]))

def leep(th, y, C):
    n, z = th.shape
    joint = np.zeros((C, z))
    for i in range(n):
        joint[y[i]] += th[i] / n
    cond = joint / joint.sum(0, keepdims=True)
    return float(np.mean(np.log((th @ cond.T)[np.arange(n), y])))

def nce(th, y, C):
    n, z = th.shape
    zz = th.argmax(1)
    h = 0.0
    for k in range(z):
        m = zz == k
        if not m.any():
            continue
        pz = m.mean()
        py = np.array([(y[m] == c).mean() for c in range(C)])
        h -= pz * (py * np.log(py + 1e-20)).sum()
    return float(-h)

def gbc(f, y, C, dims=64):
    if f.shape[1] > dims:
        z = f - f.mean(0)
        _, _, vt = np.linalg.svd(z, full_matrices=False)
        f = z @ vt[:dims].T
    mu = [f[y == c].mean(0) for c in range(C)]
    var = [np.maximum(f[y == c].var(0), 1e-4).mean() for c in range(C)]
    total = 0.0
    for a in range(C):
        for b in range(C):
            if a == b:
                continue
            v = (var[a] + var[b]) / 2
            db = ((mu[a] - mu[b])**2).sum() / (8 * v) + 0.5 * (np.log(v) - 0.5*np.log(var[a]) - 0.5*np.log(var[b]))
            total += np.exp(-db)
    return float(-total)

out = []
for c in json.load(sys.stdin):
    f = np.array(c["X"]).reshape(c["N"], c["D"])
    y = np.array(c["Y"])
    th = np.array(c["Theta"]).reshape(c["N"], c["Z"])
    out.append([logme(f, y, c["C"]), hscore(f, y, c["C"]), transrate(f, y, c["C"]), leep(th, y, c["C"]), nce(th, y, c["C"]), gbc(f, y, c["C"])])
print(json.dumps(out))
`

type metricCase struct {
	Name       string
	X          []float64
	N, D, C, Z int
	Y          []int
	Theta      []float64
}

func makeCase(r *rand.Rand, name string, n, d, c, z int, rankDeficient bool) metricCase {
	mc := metricCase{Name: name, N: n, D: d, C: c, Z: z, X: make([]float64, n*d), Y: make([]int, n), Theta: make([]float64, n*z)}
	for i := range n {
		mc.Y[i] = i % c // every class present
		for j := range d {
			mc.X[i*d+j] = r.NormFloat64() + float64(mc.Y[i]*(j%3))*0.7
		}
		if rankDeficient { // the last column is the sum of the first two
			mc.X[i*d+d-1] = mc.X[i*d] + mc.X[i*d+1]
		}
		var sum float64
		for k := range z {
			e := math.Exp(2 * r.NormFloat64())
			mc.Theta[i*z+k] = e
			sum += e
		}
		for k := range z {
			mc.Theta[i*z+k] /= sum
		}
	}
	return mc
}

// TestMetricsMatchNumpy checks LogME, H-score, TransRate, LEEP, NCE and
// GBC against independent numpy code, with N > D, N < D, rank-deficient
// features and features GBC reduces by PCA.
func TestMetricsMatchNumpy(t *testing.T) {
	needNumpy(t)
	r := rand.New(rand.NewPCG(8, 8))
	cases := []metricCase{
		makeCase(r, "N > D", 60, 6, 3, 5, false),
		makeCase(r, "N < D", 8, 20, 2, 4, false),
		makeCase(r, "rank-deficient", 50, 7, 4, 6, true),
		makeCase(r, "PCA to 64", 120, 80, 3, 4, false),
	}
	var want [][6]float64
	runPython(t, numpyReference, cases, &want)
	for i, c := range cases {
		f := Features{X: c.X, N: c.N, D: c.D, C: c.C, Y: c.Y}
		logme, err := LogME(f)
		if err != nil {
			t.Fatal(err)
		}
		h, err := HScore(f)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := TransRate(f)
		if err != nil {
			t.Fatal(err)
		}
		leep, err := LEEP(c.Theta, c.Z, c.Y, c.C)
		if err != nil {
			t.Fatal(err)
		}
		nce, err := NCE(c.Theta, c.Z, c.Y, c.C)
		if err != nil {
			t.Fatal(err)
		}
		gbc, err := GBC(f)
		if err != nil {
			t.Fatal(err)
		}
		got := [6]float64{logme, h, tr, leep, nce, gbc}
		for k, name := range []string{"LogME", "H-score", "TransRate", "LEEP", "NCE", "GBC"} {
			tol := 1e-6 * math.Max(1, math.Abs(want[i][k]))
			if name == "H-score" && c.Name != "N > D" {
				// A singular covariance: the pseudo-inverse's cut-off
				// decides which directions count, on both sides.
				tol = 1e-3 * math.Max(1, math.Abs(want[i][k]))
			}
			if math.Abs(got[k]-want[i][k]) > tol {
				t.Errorf("%s %s: %.9g, numpy %.9g", c.Name, name, got[k], want[i][k])
			} else {
				t.Logf("%s %s: %.6g (numpy %.6g)", c.Name, name, got[k], want[i][k])
			}
		}
	}
}
