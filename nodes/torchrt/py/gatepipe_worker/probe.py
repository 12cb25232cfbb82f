import json
import math
import os

import numpy as np
import torch

from .storage import SafeTensors, Store

# ---- ELEVATER's linear probe ------------------------------------------------

def argmax_first(scores):
    return scores.argmax(dim=1)


def metric_accuracy(scores, y, classes):
    if y.numel() == 0:
        return 0.0
    return 100.0 * (argmax_first(scores) == y).double().mean().item()


def metric_mean_per_class(scores, y, classes):
    pred = argmax_first(scores)
    total = torch.bincount(y, minlength=classes).double()
    right = torch.bincount(y[pred == y], minlength=classes).double()
    present = total > 0
    if not present.any():
        return 0.0
    return 100.0 * (right[present] / total[present]).mean().item()


def metric_map11(scores, y, classes):
    s, t = scores.double().cpu().numpy(), y.cpu().numpy()
    n, total, counted = len(t), 0.0, 0
    for c in range(classes):
        pos = int((t == c).sum())
        if pos == 0:
            continue
        order = np.argsort(-s[:, c], kind="stable")
        tp = np.cumsum(t[order] == c)
        prec = tp / np.arange(1, n + 1)
        rec = tp / pos
        ap = 0.0
        for k in range(11):
            ok = rec >= k / 10 - 1e-12
            ap += (prec[ok].max() if ok.any() else 0.0) / 11
        total += ap
        counted += 1
    return 100.0 * total / counted if counted else 0.0


def metric_roc_auc(scores, y, classes):
    s, t = scores.double().cpu().numpy(), y.cpu().numpy()

    def auc(c):
        pos = float((t == c).sum())
        neg = len(t) - pos
        if pos == 0 or neg == 0:
            return None
        v = s[:, c]
        order = np.argsort(v, kind="stable")
        sv = v[order]
        ranks = np.empty(len(v))
        i = 0
        while i < len(sv):
            j = i
            while j < len(sv) and sv[j] == sv[i]:
                j += 1
            ranks[i:j] = (i + j + 1) / 2.0
            i = j
        rank_sum = ranks[t[order] == c].sum()
        return (rank_sum - pos * (pos + 1) / 2) / (pos * neg)

    if classes == 2:
        return 100.0 * (auc(1) or 0.0)
    got = [a for a in (auc(c) for c in range(classes)) if a is not None]
    return 100.0 * sum(got) / len(got) if got else 0.0


METRICS = {"accuracy": metric_accuracy, "mean_per_class": metric_mean_per_class, "map11": metric_map11, "roc_auc": metric_roc_auc}


class Heads:
    """K linear probe heads trained at once on the same examples in the same
    order (ELEVATER's head: BatchNorm1d without affine on the features,
    batch statistics in training and running ones, momentum 0.1, eps 1e-5,
    in evaluation; a linear layer; SGD momentum 0.9 Nesterov with weight
    decay added to the gradient; a last batch of one example skipped), each
    with its own learning rate and weight decay. The batch statistics do
    not depend on the heads, so they are computed once for all K."""

    def __init__(self, w0, b0, lrs, wds, dtype, device):
        k = len(lrs)
        self.w = w0.to(device, dtype).unsqueeze(0).repeat(k, 1, 1)
        self.b = b0.to(device, dtype).unsqueeze(0).repeat(k, 1)
        self.lr = torch.tensor(lrs, dtype=dtype, device=device)
        self.wd = torch.tensor(wds, dtype=dtype, device=device)
        d = w0.shape[1]
        self.run_mean = torch.zeros(d, dtype=dtype, device=device)
        self.run_var = torch.ones(d, dtype=dtype, device=device)
        self.buf_w, self.buf_b, self.first = None, None, True

    def _sgd(self, p, g, buf):
        lr, wd = self.lr.view(-1, *[1] * (p.dim() - 1)), self.wd.view(-1, *[1] * (p.dim() - 1))
        d = g + wd * p
        buf = d.clone() if buf is None else 0.9 * buf + d
        p -= lr * (d + 0.9 * buf)
        return buf

    def epoch(self, x, y, order, batch):
        n = len(order)
        for start in range(0, n, batch):
            idx = order[start:start + batch]
            b = len(idx)
            if b < 2:
                continue
            xb = x[idx]
            mean = xb.mean(dim=0)
            var = ((xb - mean) ** 2).mean(dim=0)
            self.run_mean = 0.9 * self.run_mean + 0.1 * mean
            self.run_var = 0.9 * self.run_var + 0.1 * var * b / (b - 1)
            xn = (xb - mean) / torch.sqrt(var + 1e-5)
            p = torch.softmax(torch.einsum("bd,kcd->kbc", xn, self.w) + self.b[:, None, :], dim=-1)
            p[:, torch.arange(b, device=x.device), y[idx]] -= 1
            p /= b
            gw = torch.einsum("kbc,bd->kcd", p, xn)
            gb = p.sum(dim=1)
            self.buf_w = self._sgd(self.w, gw, self.buf_w)
            self.buf_b = self._sgd(self.b, gb, self.buf_b)

    def finite(self):
        return torch.isfinite(self.w).flatten(1).all(dim=1).tolist()

    def scores(self, k, x):
        xn = (x - self.run_mean) / torch.sqrt(self.run_var + 1e-5)
        return xn @ self.w[k].T + self.b[k]


# Scores closer than this (relative) are ties, which keep the earlier
# choice: gatepipe's probe.ScoreTolerance, so that both runtimes choose
# alike on scores equal but for rounding.
SCORE_TOLERANCE = 1e-9


def beats(s, best):
    return s > best + SCORE_TOLERANCE * max(1.0, abs(best))


def search_rounds(coarse, nwd):
    """ELEVATER's weight-decay search for one learning rate as rounds:
    yields the indices to score next, given the scores so far (a generator
    receiving them); returns the peak. Same order and ties as gatepipe's
    searchWD: a score must beat the peak (beats) to move it."""
    seen = {}
    got = yield list(coarse)
    seen.update(got)
    peak, best = coarse[0], -1.0
    for i in coarse:
        if beats(seen[i], best):
            peak, best = i, seen[i]
    span = 8
    while span > 0:
        left, right = max(peak - span, 0), min(peak + span, nwd - 1)
        centre = peak
        todo = [i for i in dict.fromkeys([left, right]) if i != centre and i not in seen]
        if todo:
            seen.update((yield todo))
        for i in (left, right):
            if i != centre and beats(seen[i], best):
                peak, best = i, seen[i]
        span //= 2
    return peak, best


def job_probe(run):
    """ELEVATER's automatic search for every subset and seed in config.runs:
    per round of the search every learning rate's next weight decays train
    together as one batch of heads; then the final run on train + val."""
    cfg = run.cfg
    tune = cfg["tune"]
    dtype = torch.float64 if (cfg.get("precision") or "fp64") == "fp64" else torch.float32
    store = Store(cfg["store"])
    classes = int(cfg["classes"])
    metric = METRICS[tune["metric"]]
    splits = {}
    for name in (cfg["train_split"], cfg["test_split"]):
        f = store.split(name)
        splits[name] = (f.tensor("x").to(run.device, dtype), f.tensor("y").to(run.device, torch.int64))
    (x, y), (xt, yt) = splits[cfg["train_split"]], splits[cfg["test_split"]]
    draws = SafeTensors(cfg["draws"])
    lrs, wds = tune["lrs"], tune["wds"]
    results = []
    for r, meta in enumerate(cfg["runs"]):
        t = lambda name: draws.tensor("%d.%s" % (r, name)).to(run.device)
        tr, va = t("train"), t("val")
        xtr, ytr, xva, yva = x[tr], y[tr], x[va], y[va]
        w0, b0, order = t("trial_w"), t("trial_b"), t("trial_order").long().view(tune["epochs"], -1)
        searches = [search_rounds(tune["coarse"], len(wds)) for _ in lrs]
        asks = [s.send(None) for s in searches]
        trials = [[] for _ in lrs]
        peaks = [None] * len(lrs)
        while any(a is not None for a in asks):
            pairs = [(k, i) for k, a in enumerate(asks) if a is not None for i in a]
            heads = Heads(w0, b0, [lrs[k] for k, _ in pairs], [wds[i] for _, i in pairs], dtype, run.device)
            best = [0.0] * len(pairs)
            for e in range(tune["epochs"]):
                heads.epoch(xtr, ytr, order[e], tune["batch"])
                for j, ok in enumerate(heads.finite()):
                    if ok:
                        s = metric(heads.scores(j, xva), yva, classes)
                        if beats(s, best[j]) and not math.isnan(s):
                            best[j] = s
                run.progress(r, len(cfg["runs"]), round=len(trials[0]))
            for k in range(len(lrs)):
                if asks[k] is None:
                    continue
                got = {}
                for j, (kk, i) in enumerate(pairs):
                    if kk == k:
                        got[i] = best[j]
                        trials[k].append({"lr": lrs[k], "weight_decay": wds[i], "val_score": best[j]})
                try:
                    asks[k] = searches[k].send(got)
                except StopIteration as stop:
                    peaks[k], asks[k] = stop.value, None
        out = {"lr": 0.0, "weight_decay": 0.0, "val_score": -1.0, "test_score": 0.0, "trials": []}
        for k in range(len(lrs)):
            out["trials"] += trials[k]
            peak, best_k = peaks[k]
            if beats(best_k, out["val_score"]):
                out["lr"], out["weight_decay"], out["val_score"] = lrs[k], wds[peak], best_k
        xall, yall = torch.cat([xtr, xva]), torch.cat([ytr, yva])
        final = Heads(t("final_w"), t("final_b"), [out["lr"]], [out["weight_decay"]], dtype, run.device)
        forder = t("final_order").long().view(tune["final_epochs"], -1)
        for e in range(tune["final_epochs"]):
            final.epoch(xall, yall, forder[e], tune["batch"])
        out["trainable_parameters"] = final.w[0].numel() + final.b[0].numel()
        if final.finite()[0]:
            out["test_score"] = metric(final.scores(0, xt), yt, classes)
        results.append(out)
        run.progress(r + 1, len(cfg["runs"]), force=True)
    with open(os.path.join(cfg["work"], "probe.json.tmp"), "w") as f:
        json.dump(results, f)
    os.replace(os.path.join(cfg["work"], "probe.json.tmp"), os.path.join(cfg["work"], "probe.json"))


