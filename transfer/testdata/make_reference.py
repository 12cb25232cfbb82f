"""Reference values for transfer's LogME and GBC tests (reference.json).

Run from the repository root with Debian's python3-numpy:

    /usr/bin/python3 transfer/testdata/make_reference.py > transfer/testdata/reference.json

LogME is transcribed from thuml/LogME (LogME.py: truncated_svd and
LogME._fit_fixed_point, the 2021 fixed-point fit), numpy only. "exact" is
the log evidence of the same Bayesian linear regression at the fitted alpha
and beta computed directly with D x D matrices: D/2 ln a + N/2 ln b
- b/2 |y - F m|^2 - a/2 |m|^2 - 1/2 ln det(a I + b F^T F) - N/2 ln 2pi, with
m = b (a I + b F^T F)^-1 F^T y, averaged over classes and divided by N.
GBC is transcribed from google-research's stable_transfer/transferability
gbc.py (spherical Gaussians; per-dimension variance floored at 1e-4 before
the mean), after a PCA to min(64, N, D) components (sklearn's PCA
transform, written with numpy's SVD: GBC does not depend on the signs).
"""
import json
import sys

import numpy as np


def truncated_svd(x):
    u, s, vh = np.linalg.svd(x.transpose() @ x)
    s = np.sqrt(s)
    u_times_sigma = x @ vh.transpose()
    k = np.sum((s > 1e-10) * 1)  # rank of f
    s = s.reshape(-1, 1)
    s = s[:k]
    vh = vh[:k]
    u = u_times_sigma[:, :k] / s.reshape(1, -1)
    return u, s, vh


def logme_thuml(f, y):
    f = f.astype(np.float64)
    N, D = f.shape
    if N > D:
        u, s, vh = truncated_svd(f)
    else:
        u, s, vh = np.linalg.svd(f, full_matrices=False)
    s = s.reshape(-1) ** 2
    evidences, fitted = [], []
    for i in range(int(y.max() + 1)):
        y_ = (y == i).astype(np.float64).reshape(-1, 1)
        x = u.T @ y_
        x2 = (x ** 2).reshape(-1)
        res_x2 = (y_ ** 2).sum() - x2.sum()
        alpha, beta = 1.0, 1.0
        for _ in range(11):
            t = alpha / beta
            gamma = (s / (s + t)).sum()
            m2 = (s * x2 / ((t + s) ** 2)).sum()
            res2 = (x2 / ((1 + s / t) ** 2)).sum() + res_x2
            alpha = gamma / (m2 + 1e-5)
            beta = (N - gamma) / (res2 + 1e-5)
            t_ = alpha / beta
            if abs(t_ - t) / t <= 1e-3:
                break
        evidence = D / 2.0 * np.log(alpha) + N / 2.0 * np.log(beta) - 0.5 * np.sum(np.log(alpha + beta * s)) \
            - beta / 2.0 * res2 - alpha / 2.0 * m2 - N / 2.0 * np.log(2 * np.pi)
        evidences.append(evidence / N)
        fitted.append((alpha, beta))
    return float(np.mean(evidences)), fitted


def logme_exact(f, y, fitted):
    N, D = f.shape
    ftf = f.T @ f
    out = []
    for i, (a, b) in enumerate(fitted):
        yc = (y == i).astype(np.float64)
        A = a * np.eye(D) + b * ftf
        m = b * np.linalg.solve(A, f.T @ yc)
        r = yc - f @ m
        ev = D / 2 * np.log(a) + N / 2 * np.log(b) - b / 2 * (r @ r) - a / 2 * (m @ m) \
            - 0.5 * np.linalg.slogdet(A)[1] - N / 2 * np.log(2 * np.pi)
        out.append(ev / N)
    return float(np.mean(out))


def gbc(f, y, dims=64):
    k = min(dims, f.shape[0], f.shape[1])
    if f.shape[1] > dims:
        z = f - f.mean(0)
        _, _, vt = np.linalg.svd(z, full_matrices=False)
        f = z @ vt[:k].T
    labels = sorted(set(y.tolist()))
    stats = {}
    for c in labels:
        fc = f[y == c]
        stats[c] = (fc.mean(0), np.maximum(fc.var(0), 1e-4).mean())
    total = 0.0
    for c1 in labels:
        for c2 in labels:
            if c1 == c2:
                continue
            (mu1, s1), (mu2, s2) = stats[c1], stats[c2]
            avg = (s1 + s2) / 2
            first = np.sum((mu1 - mu2) ** 2 / avg) / 8
            second = np.log(avg) - 0.5 * np.log(s1) - 0.5 * np.log(s2)
            total += np.exp(-(first + 0.5 * second))
    return float(-total)


def relu_features(rng, n, d, c, dead=0, dependent=False):
    y = np.arange(n) % c
    centres = rng.normal(size=(c, d))
    f = np.maximum(rng.normal(size=(n, d)) + 1.5 * centres[y], 0)
    f[:, :dead] = 0  # dead units: ReLU outputs that are 0 for every input
    if dependent:
        f[:, -1] = f[:, -2] + 0.5 * f[:, -3]
    return f, y


rng = np.random.default_rng(31)
cases = []
for name, n, d, c, dead, dep in [
    ("N > D, rank-deficient (a dependent column)", 70, 10, 3, 0, True),
    ("N > D, rank-deficient (dead units, a dependent column)", 80, 12, 3, 2, True),
    ("N > D, full rank", 60, 8, 4, 0, False),
    ("N < D", 10, 30, 2, 0, False),
    ("N < D, rank-deficient", 12, 40, 3, 5, True),
    ("N < 64 < D", 40, 100, 4, 0, False),
    ("64 < N, 64 < D", 150, 80, 3, 0, False),
]:
    f, y = relu_features(rng, n, d, c, dead, dep)
    thuml, fitted = logme_thuml(f, y)
    cases.append({
        "name": name, "N": n, "D": d, "C": c,
        "X": [float(v) for v in f.reshape(-1)], "Y": [int(v) for v in y],
        "rank": int(np.linalg.matrix_rank(f)),
        "logme_thuml": thuml, "logme_exact": logme_exact(f, y, fitted), "gbc": gbc(f, y),
    })
json.dump({"generator": "transfer/testdata/make_reference.py", "numpy": np.__version__, "cases": cases}, sys.stdout)
sys.stdout.write("\n")
