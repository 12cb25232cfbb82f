#!/usr/bin/env python3
"""A straightforward PyTorch implementation of EEVEE's scoring (Algorithm 1),
used as the speed (and sanity) reference for gatepipe's Go scorer.

It scores random k-benchmark combinations of the GATE paper matrix with the
same choices as gatepipe's defaults (or --literal): z-scored inputs and
targets, ShuffleSplit over models, an MLP meta-model per split trained
full-batch with AdamW, grouped squared error as loss and score. It prints
candidates per second. Run with Debian's python3-torch:

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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--matrix", default="stdlib/data/gate_table3.csv")
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--candidates", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--literal", action="store_true", help="column MSE, 5 splits, 100-unit ReLU, no LayerNorm")
    ap.add_argument("--seed", type=int, default=0)
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
        score(z[:, in_cols], z, w, splits, hidden, act, ln)
    took = time.perf_counter() - start
    print("torch %s %s threads=%d k=%d: %d candidates in %.2fs = %.2f candidates/s"
          % (torch.__version__, a.dtype, a.threads, a.k, a.candidates, took, a.candidates / took))


if __name__ == "__main__":
    main()
