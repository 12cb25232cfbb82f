#!/usr/bin/env python3
"""A straightforward PyTorch implementation of EEVEE's scoring (Algorithm 1),
used as the speed (and sanity) reference for gatepipe's Go scorer.

It scores random k-benchmark combinations of the GATE paper matrix with the
same choices as gatepipe's defaults (or --literal): z-scored inputs and
targets, ShuffleSplit over models, an MLP meta-model per split trained
full-batch with AdamW, grouped squared error as loss and score. It prints
candidates per second. By default the 20 splits' meta-models are one
batched model (bmm), as an expert would write it; --sequential trains them
one by one. Run with Debian's python3-torch, best configured:

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MALLOC_MMAP_THRESHOLD_=1000000000 \
    MALLOC_TRIM_THRESHOLD_=1000000000 \
    /usr/bin/python3 eevee/reference/score_torch.py --k 8 --candidates 20 --threads 1
"""
import argparse
import csv
import math
import random
import time

import torch


def load(path):
    rows = list(csv.DictReader(open(path)))
    cols, models = [], []
    for r in rows:
        key = (r["category"], r["benchmark"], r["metric"])
        if key not in cols:
            cols.append(key)
        if r["model"] not in models:
            models.append(r["model"])
    ci = {c: i for i, c in enumerate(cols)}
    mi = {m: i for i, m in enumerate(models)}
    m = torch.zeros(len(models), len(cols), dtype=torch.float64)
    for r in rows:
        m[mi[r["model"]], ci[(r["category"], r["benchmark"], r["metric"])]] = float(r["value"])
    return cols, models, m


def weights(cols, weighting, merge):
    bench_cols, group_benches = {}, {}
    for c, (cat, b, _) in enumerate(cols):
        g = merge.get(cat, cat)
        bench_cols.setdefault(b, []).append(c)
        group_benches.setdefault(g, set()).add(b)
    w = torch.zeros(len(cols), dtype=torch.float64)
    for c, (cat, b, _) in enumerate(cols):
        g = merge.get(cat, cat)
        if weighting == "column":
            w[c] = 1 / len(cols)
        elif weighting == "benchmark":
            w[c] = 1 / (len(bench_cols) * len(bench_cols[b]))
        else:
            w[c] = 1 / (len(group_benches) * len(group_benches[g]) * len(bench_cols[b]))
    return w, bench_cols


def score(x, y, w, splits, hidden, act, layer_norm, epochs=20, lr=0.01, wd=0.01):
    scores = []
    for train, val in splits:
        layers = [torch.nn.Linear(x.shape[1], hidden), torch.nn.GELU() if act == "gelu" else torch.nn.ReLU()]
        if layer_norm:
            layers.append(torch.nn.LayerNorm(hidden))
        layers.append(torch.nn.Linear(hidden, y.shape[1]))
        model = torch.nn.Sequential(*layers).to(x.dtype)
        opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=wd)
        for _ in range(epochs):
            opt.zero_grad()
            loss = (((model(x[train]) - y[train]) ** 2).mean(dim=0) * w).sum()
            loss.backward()
            opt.step()
        with torch.no_grad():
            scores.append(float((((model(x[val]) - y[val]) ** 2).mean(dim=0) * w).sum()))
    return sum(scores) / len(scores)


def score_batched(x, y, w, splits, hidden, act, layer_norm, epochs=20, lr=0.01, wd=0.01):
    """The same maths as score(), with the S splits' meta-models as one
    batched model: weights [S, in, hidden] and [S, hidden, out], batched
    matrix products, the splits' losses summed (each split's parameters get
    exactly its own gradient, and AdamW is elementwise), so one optimizer
    step updates every split as S separate AdamW steps would."""
    tr = torch.stack([t for t, _ in splits])  # [S, n_train]
    va = torch.stack([v for _, v in splits])  # [S, n_val]
    xs, ys = x[tr], y[tr]  # [S, n_train, in], [S, n_train, out]
    xv, yv = x[va], y[va]
    s, n_in, n_out = len(splits), x.shape[1], y.shape[1]

    def linear(fan_in, fan_out):
        bound = 1 / math.sqrt(fan_in)  # nn.Linear's default initialisation
        wt = torch.empty(s, fan_in, fan_out, dtype=x.dtype).uniform_(-bound, bound).requires_grad_()
        b = torch.empty(s, 1, fan_out, dtype=x.dtype).uniform_(-bound, bound).requires_grad_()
        return wt, b

    w1, b1 = linear(n_in, hidden)
    w2, b2 = linear(hidden, n_out)
    params = [w1, b1, w2, b2]
    if layer_norm:
        g = torch.ones(s, 1, hidden, dtype=x.dtype, requires_grad=True)
        beta = torch.zeros(s, 1, hidden, dtype=x.dtype, requires_grad=True)
        params += [g, beta]
    actf = torch.nn.functional.gelu if act == "gelu" else torch.relu

    def forward(inp):
        h = actf(torch.baddbmm(b1, inp, w1))
        if layer_norm:
            h = torch.nn.functional.layer_norm(h, (hidden,)) * g + beta
        return torch.baddbmm(b2, h, w2)

    opt = torch.optim.AdamW(params, lr=lr, weight_decay=wd)
    for _ in range(epochs):
        opt.zero_grad()
        loss = ((((forward(xs) - ys) ** 2).mean(dim=1)) * w).sum()  # sum over splits of each split's loss
        loss.backward()
        opt.step()
    with torch.no_grad():
        per_split = (((forward(xv) - yv) ** 2).mean(dim=1) * w).sum(dim=1)
    return float(per_split.mean())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--matrix", default="stdlib/data/gate_table3.csv")
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--candidates", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--literal", action="store_true", help="column MSE, 5 splits, 100-unit ReLU, no LayerNorm")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sequential", action="store_true",
                    help="train the splits' meta-models one after another (slower; the batched model is the same maths)")
    ap.add_argument("--dtype", choices=["float32", "float64"], default="float32",
                    help="float32 is PyTorch's default, as a straightforward implementation uses")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    cols, models, m = load(a.matrix)
    z = ((m - m.mean(0)) / m.std(0, unbiased=False).clamp_min(1e-12)).to(getattr(torch, a.dtype))
    if a.literal:
        n_splits, hidden, act, ln, weighting, merge = 5, 100, "relu", False, "column", {}
    else:
        n_splits, hidden, act, ln, weighting, merge = 20, 64, "gelu", True, "group", {"Few-Shot Img Class": "Img Class"}
    w, bench_cols = weights(cols, weighting, merge)
    w = w.to(z.dtype)
    rng = random.Random(a.seed)
    n = len(models)
    n_test = math.ceil(0.3 * n)
    splits = []
    for _ in range(n_splits):
        perm = list(range(n))
        rng.shuffle(perm)
        splits.append((torch.tensor(perm[n_test:]), torch.tensor(perm[:n_test])))
    benches = sorted(bench_cols)
    start = time.perf_counter()
    for _ in range(a.candidates):
        combo = rng.sample(benches, a.k)
        in_cols = [c for b in combo for c in bench_cols[b]]
        (score if a.sequential else score_batched)(z[:, in_cols], z, w, splits, hidden, act, ln)
    took = time.perf_counter() - start
    print("torch %s %s %s threads=%d k=%d: %d candidates in %.2fs = %.2f candidates/s"
          % (torch.__version__, a.dtype, "sequential" if a.sequential else "batched", a.threads, a.k, a.candidates,
             took, a.candidates / took))


if __name__ == "__main__":
    main()
