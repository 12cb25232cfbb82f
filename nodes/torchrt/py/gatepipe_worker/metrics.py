"""The task families' losses, predictions and validation metrics: what
the checkpoints are ranked by and the plateau scheduler watches, as
gatepipe's Go code computes them (the test metrics are Go's, from the
worker's predictions)."""
import numpy as np
import torch
import torch.nn.functional as F

from . import gateepisodes
from .loader import ranges

# The tasks that predict values: standardised targets, MSE, MAE.
REGRESSION = ("regression", "video_regression")


def standardizer(t):
    """The training targets' mean and std per output (float64; population
    std, 1 where it is below 1e-8), as gatepipe's regression head."""
    t = t.double()
    mean = t.mean(dim=0)
    std = torch.sqrt(torch.clamp((t * t).mean(dim=0) - mean * mean, min=0))
    std[std < 1e-8] = 1
    return mean, std


def task_loss(task, out, target, extra, loss=None):
    """The training loss: gatepipe's per family, or loss (a protocol's,
    adapters.Loss) where given."""
    if loss is not None:
        return loss(out, target)
    if task == "multilabel":
        return F.binary_cross_entropy_with_logits(out.float(), target)
    if task in REGRESSION:
        mean, std = extra
        return F.mse_loss(out.float(), ((target.double() - mean) / std).float())
    if task == "retrieval":
        z = out[0].float()
        ids = torch.arange(z.shape[0], device=z.device)
        return (F.cross_entropy(z, ids) + F.cross_entropy(z.T, ids)) / 2
    return F.cross_entropy(out.float(), target)


def predictions(task, out, extra):
    """What the task's metrics take: probabilities, sigmoid outputs,
    values in target units, per-pixel probabilities (pixel-major) or
    embeddings."""
    if task == "multilabel":
        return torch.sigmoid(out.float())
    if task in REGRESSION:
        mean, std = extra
        return (out.double() * std + mean).float()
    if task == "segmentation":
        return torch.softmax(out.float(), dim=1).permute(0, 2, 3, 1).flatten(1)
    if task == "retrieval":
        return out[1].float()
    return torch.softmax(out.float(), dim=-1)


# Validation metrics: the score checkpoints are ranked by and the loss the
# plateau scheduler watches, as gatepipe's Go code computes them.

def _ap(scores, truth):
    order = np.argsort(-scores, kind="stable")
    s, t = scores[order], truth[order]
    pos = int(t.sum())
    if pos == 0 or pos == len(t):
        return None
    ap, tp, fp, prev, i = 0.0, 0, 0, 0.0, 0
    while i < len(s):
        j = i
        while j < len(s) and s[j] == s[i]:
            tp += int(t[j])
            fp += 1 - int(t[j])
            j += 1
        recall = tp / pos
        ap += (recall - prev) * tp / (tp + fp)
        prev, i = recall, j
    return ap


def val_metrics(task, pred, tg, classes, episodes=None):
    if task == "fewshot":
        return episode_metrics(pred, episodes)
    if task in REGRESSION:
        e = pred.double() - tg.y.double()
        return {"mae": e.abs().mean().item(), "mse": (e * e).mean().item(), "loss": (e * e).mean().item()}
    if task == "multilabel":
        p, y = pred.double().cpu().numpy(), tg.y.cpu().numpy() > 0.5
        aps = [a for a in (_ap(p[:, j], y[:, j]) for j in range(p.shape[1])) if a is not None]
        pc = np.clip(p, 1e-7, 1 - 1e-7)
        yf = y.astype(np.float64)
        out = {"loss": float(-(yf * np.log(pc) + (1 - yf) * np.log(1 - pc)).mean())}
        if aps:
            out["aps"] = 100 * float(np.mean(aps))
        return out
    if task == "segmentation":
        best, ptrue, psum = pred if len(pred) == 3 else (pred[0], pred[1], None)  # from Trainer.dense
        loss = -torch.log(ptrue.double() + 1e-7).mean().item()
        # GATE's soft Dice score (1 - its DiceLoss with ignore_index 0), a
        # fraction: per image and class (2 sum p t + 1) / (sum p + sum t + 1),
        # label-0 pixels zeroed in the truth, averaged over classes and images.
        dice_sum = 0.0
        for a, b in ranges(best.shape[0] if psum is not None else 0, 64):
            y = tg.labels(torch.arange(a, b)).flatten(1).cpu()
            keep = (y != 0).double()
            pt = ptrue[a:b].double() * keep
            inter = torch.zeros(b - a, classes, dtype=torch.float64).scatter_add_(1, y, pt)
            truth = torch.zeros(b - a, classes, dtype=torch.float64).scatter_add_(1, y, keep)
            dice_sum += ((2 * inter + 1) / (psum[a:b].double() + truth + 1)).mean(dim=1).sum().item()
        # The confusion a block of masks at a time: the split's are not held.
        conf = torch.zeros(classes * classes, dtype=torch.float64)
        for a, b in ranges(best.shape[0], 64):
            y = tg.labels(torch.arange(a, b)).flatten(1).cpu()
            conf += torch.bincount((y * classes + best[a:b].long()).flatten(), minlength=classes * classes).double()
        conf = conf.view(classes, classes)
        tp, truth, predicted = conf.diag(), conf.sum(dim=1), conf.sum(dim=0)
        present = (truth + predicted) > 0
        out = {"loss": loss, "overall_acc": 100 * tp.sum().item() / max(best.numel(), 1),
               }
        if psum is not None:
            out["soft_dice"] = dice_sum / max(best.shape[0], 1)
        if present.any():
            out["miou"] = 100 * (tp / (truth + predicted - tp))[present].mean().item()
            out["dice"] = 100 * (2 * tp / (truth + predicted))[present].mean().item()
        # Mean Acc averages over the classes in the truth (as the Go runtime
        # and HF evaluate's mean_iou do).
        if (truth > 0).any():
            out["mean_acc"] = 100 * (tp / truth)[truth > 0].mean().item()
        return out
    if task == "retrieval":
        return retrieval_metrics(pred, tg)
    p = pred.double()
    y = tg.y
    py = p.gather(1, y.unsqueeze(1))
    rank = (p > py).sum(dim=1)
    return {"acc1": 100 * (rank == 0).double().mean().item(), "loss": -torch.log(py + 1e-7).mean().item()}


def retrieval_metrics(emb, tg):
    d = emb.shape[1] // 2
    e = emb.double()
    img = e[:, :d] / (e[:, :d].norm(dim=1, keepdim=True) + 1e-12)
    txt = e[:, d:] / (e[:, d:].norm(dim=1, keepdim=True) + 1e-12)
    sim = img @ txt.T
    # Which captions are the same text (equal token rows): through each
    # row's index among the distinct rows, not an [N, N, L] comparison.
    _, inv = torch.unique(tg.q, dim=0, return_inverse=True)
    same = inv.unsqueeze(1) == inv.unsqueeze(0)
    out = {}
    for name, s in (("i2t", sim), ("t2i", sim.T)):
        order = torch.from_numpy(np.argsort(-s.cpu().numpy(), axis=1, kind="stable")).to(s.device)
        top = same.gather(1, order[:, :1])
        out[name + "_acc1"] = 100 * top.any(dim=1).double().mean().item()
        z = s * 10.0
        out[name + "_loss"] = (torch.logsumexp(z, dim=1) - z.diag()).mean().item()
    out["loss"] = (out["i2t_loss"] + out["t2i_loss"]) / 2
    return out


def episode_metrics(probs, episodes=None):
    """probs: per setting (shots), [episodes, ways*queries, ways]; with
    GATE's episodes, each episode's query probabilities."""
    if episodes is not None:
        return gateepisodes.metrics(probs, episodes)
    accs, losses = [], []
    for p in probs:
        ways = p.shape[2]
        truth = torch.arange(ways, device=p.device).repeat_interleave(p.shape[1] // ways)
        best = p.argmax(dim=2)
        accs.append(100 * (best == truth).double().mean().item())
        losses.append(-torch.log(p.gather(2, truth.view(1, -1, 1).expand(p.shape[0], -1, 1)).double() + 1e-7).mean().item())
    return {"acc1": sum(accs) / len(accs), "loss": sum(losses) / len(losses)}


def selection_score(task, m, protocol=None):
    if protocol and protocol.get("selection", {}).get("metric") == "Dice Score":
        return m.get("soft_dice", 0.0)
    if task == "multilabel":
        return m.get("aps", 0.0)
    if task in REGRESSION:
        return -m["mae"]
    if task == "segmentation":
        return m.get("miou", 0.0)
    if task == "retrieval":
        return (m["i2t_acc1"] + m["t2i_acc1"]) / 2
    return m["acc1"]
