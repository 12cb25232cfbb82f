#!/usr/bin/env python3
"""A standard-library-only trainer following gatepipe's external-trainer
protocol: a nearest-class-centroid classifier on a gatepipe example store.
It runs anywhere python3 does; trainer_torch.py is the PyTorch variant.
"""
import math

import gatepipe_trainer as gp


def main():
    exp = gp.experiment()
    cfg = exp["config"]
    store = cfg["dataset"]
    m = gp.meta(store)
    x, shape, y = gp.read_split(store, "train")
    size = 1
    for d in shape[1:]:
        size *= d
    classes = m["num_classes"]
    n = min(len(y), int(cfg.get("max_train", len(y))))
    sums = [[0.0] * size for _ in range(classes)]
    counts = [0] * classes
    for i in range(n):
        row = x[i * size:(i + 1) * size]
        acc = sums[y[i]]
        for j in range(size):
            acc[j] += row[j]
        counts[y[i]] += 1
        if i % 500 == 0:
            gp.log(exp, i, n, phase="fit")
    cents = [[v / max(counts[c], 1) for v in sums[c]] for c in range(classes)]
    xt, _, yt = gp.read_split(store, "test")
    nt = min(len(yt), int(cfg.get("max_test", len(yt))))
    top1 = top5 = 0
    loss = 0.0
    scale = m["normalize"]["scale"]
    for i in range(nt):
        row = xt[i * size:(i + 1) * size]
        d = [sum((row[j] - c[j]) ** 2 for j in range(size)) * scale * scale for c in cents]
        order = sorted(range(classes), key=lambda c: d[c])
        top1 += order[0] == yt[i]
        top5 += yt[i] in order[:5]
        # Softmax over negative distances as class probabilities.
        lo = min(d)
        z = sum(math.exp(-(v - lo)) for v in d)
        loss += (d[yt[i]] - lo) + math.log(z)
        if i % 200 == 0:
            gp.log(exp, n + i, n + nt, phase="test")
    gp.log(exp, n + nt, n + nt, phase="done")
    gp.write_metrics(exp, cfg["model"], cfg["benchmark"], cfg.get("category", "Img Class"), {
        "Acc@1": (100.0 * top1 / nt, True),
        "Acc@5": (100.0 * top5 / nt, True),
        "Loss": (loss / nt, False),
    })
    print("%s on %s: Acc@1 %.2f%% over %d test images" % (cfg["model"], cfg["benchmark"], 100.0 * top1 / nt, nt))


if __name__ == "__main__":
    main()
