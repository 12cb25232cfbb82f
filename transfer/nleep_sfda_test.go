package transfer

import (
	"math"
	"math/rand/v2"
	"testing"
)

// sfdaNLEEPReference computes SFDA and N-LEEP independently with numpy and
// scipy, from the papers' definitions (SFDA as its authors' code runs it;
// N-LEEP's EM starting from the same k-means responsibilities as the Go
// code, so the comparison is of EM and the score, not of a random start).
const sfdaNLEEPReference = `
import json, sys
import numpy as np
from scipy import linalg

def fisher(X, y, C, lam):
    N, D = X.shape
    pri = np.bincount(y, minlength=C) / N
    M = np.stack([X[y == c].mean(0) for c in range(C)])
    Sw = sum(pri[c] * np.cov(X[y == c].T, bias=True).reshape(D, D) for c in range(C))
    if lam is None:
        v = Sw.sum(1)
        for _ in range(3):
            w = Sw @ v; w /= np.linalg.norm(w)
            v = Sw @ w; v /= np.linalg.norm(v)
        lam = max(np.exp(-5 * (v @ Sw @ w)), 1e-10)
    def shrunk(S):
        return (1 - lam) * S + lam * np.trace(S) / D * np.eye(D)
    Swl = shrunk(Sw)
    St = shrunk(np.cov(X.T, bias=True).reshape(D, D))
    e, V = linalg.eigh(St - Swl, Swl)
    V = V[:, np.argsort(e)[::-1]]
    coef = M @ V @ V.T
    b = -0.5 * np.diag(M @ coef.T) + np.log(pri)
    s = X @ coef.T + b
    s = np.exp(s - s.max(1, keepdims=True))
    return s / s.sum(1, keepdims=True), lam

def sfda(X, y, C):
    p, lam = fisher(X, y, C, None)
    p = np.exp(p) / np.exp(p).sum(1, keepdims=True)
    M = np.stack([X[y == c].mean(0) for c in range(C)])
    X = X.copy()
    for c in range(C):
        other = (M.sum(0) - M[c]) / (C - 1)
        pc = p[y == c, c][:, None]
        X[y == c] = pc * X[y == c] + (1 - pc) * other
    p, _ = fisher(X, y, C, lam)
    return float(p[np.arange(len(y)), y].mean())

def nleep(X, y, C, resp):
    N = len(y)
    Z = X - X.mean(0)
    u, s, vt = np.linalg.svd(Z, full_matrices=False)
    ratio = np.cumsum(s**2) / (s**2).sum()
    d = int(np.searchsorted(ratio, 0.8, side="right") + 1)
    Z = Z @ vt[:d].T
    K = resp.shape[1]
    def mstep(r):
        nk = r.sum(0) + 10 * np.finfo(float).eps
        mu = (r.T @ Z) / nk[:, None]
        cov = []
        for k in range(K):
            dz = Z - mu[k]
            cov.append((r[:, k, None] * dz).T @ dz / nk[k] + 1e-6 * np.eye(d))
        return np.log(nk / N), mu, cov
    def estep(w, mu, cov):
        lp = np.zeros((N, K))
        for k in range(K):
            sign, ld = np.linalg.slogdet(cov[k])
            dz = Z - mu[k]
            maha = np.einsum("ij,ij->i", dz @ np.linalg.inv(cov[k]), dz)
            lp[:, k] = w[k] - 0.5 * (d * np.log(2 * np.pi) + ld + maha)
        top = lp.max(1, keepdims=True)
        norm = top[:, 0] + np.log(np.exp(lp - top).sum(1))
        return np.exp(lp - norm[:, None]), norm.mean()
    params = mstep(resp)
    lb = -np.inf
    for _ in range(100):
        prev = lb
        resp, lb = estep(*params)
        params = mstep(resp)
        if abs(lb - prev) < 1e-3:
            break
    th, _ = estep(*params)
    joint = np.zeros((C, K))
    for i in range(N):
        joint[y[i]] += th[i] / N
    cond = joint / joint.sum(0, keepdims=True)
    return float(np.mean(np.log((th @ cond.T)[np.arange(N), y]))), d

out = []
for c in json.load(sys.stdin):
    X = np.array(c["X"]).reshape(c["N"], c["D"])
    y = np.array(c["Y"])
    resp = np.array(c["Resp"]).reshape(c["N"], -1)
    nl, d = nleep(X, y, c["C"], resp)
    out.append([sfda(X, y, c["C"]), nl, d])
print(json.dumps(out))
`

// TestSFDAAndNLEEPMatchNumpy checks SFDA and N-LEEP against independent
// numpy/scipy code with N > D, N < D and rank-deficient features.
func TestSFDAAndNLEEPMatchNumpy(t *testing.T) {
	needNumpy(t)
	r := rand.New(rand.NewPCG(9, 9))
	type sfdaCase struct {
		metricCase
		Resp []float64
	}
	var cases []sfdaCase
	dims := []int{}
	for _, mc := range []metricCase{
		makeCase(r, "N > D", 90, 6, 3, 1, false),
		makeCase(r, "N < D", 40, 60, 3, 1, false),
		makeCase(r, "rank-deficient", 80, 7, 4, 1, true),
	} {
		_, d, resp, _, err := nleepStart(Features{X: mc.X, N: mc.N, D: mc.D, C: mc.C, Y: mc.Y}, 1)
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, sfdaCase{mc, resp})
		dims = append(dims, d)
	}
	var want [][3]float64
	runPython(t, sfdaNLEEPReference, cases, &want)
	for i, c := range cases {
		f := Features{X: c.X, N: c.N, D: c.D, C: c.C, Y: c.Y}
		sfda, err := SFDA(f)
		if err != nil {
			t.Fatal(err)
		}
		nleep, err := NLEEP(f, 1)
		if err != nil {
			t.Fatal(err)
		}
		if dims[i] != int(want[i][2]) {
			t.Errorf("%s: PCA keeps %d components, numpy %d", c.Name, dims[i], int(want[i][2]))
		}
		for k, got := range []float64{sfda, nleep} {
			name := []string{"SFDA", "NLEEP"}[k]
			if math.Abs(got-want[i][k]) > 1e-6*math.Max(1, math.Abs(want[i][k])) {
				t.Errorf("%s %s: %.9g, numpy %.9g", c.Name, name, got, want[i][k])
			} else {
				t.Logf("%s %s: %.6g (numpy %.6g)", c.Name, name, got, want[i][k])
			}
		}
	}
}

// TestSFDARejectsAnEmptyClass: a class with no example has no mean.
func TestSFDARejectsAnEmptyClass(t *testing.T) {
	f := Features{X: []float64{1, 2, 3, 4}, N: 2, D: 2, C: 3, Y: []int{0, 1}}
	if _, err := SFDA(f); err == nil {
		t.Fatal("SFDA accepted a class with no examples")
	}
}
