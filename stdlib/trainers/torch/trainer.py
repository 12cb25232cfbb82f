"""gatepipe's stdlib PyTorch trainer (protocol gatepipe-trainer/1).

gatepipe runs it as `python3 -c <this file>` with $GATEPIPE_EXPERIMENT
naming experiment.json: the config (a gatepipe example store, the model,
the recipe), the output directory and the assigned devices. It trains a
torchvision (or, when installed, timm) model with AdamW on the store's
train split, validates every validate_every steps, keeps the best
checkpoint by the validation score, tests it, appends progress to
log.jsonl, writes metrics.json with GATE's metric names and the kept
model as model.safetensors (the model's own tensor names). One GPU when
gatepipe assigned one (CUDA_VISIBLE_DEVICES), else the CPU share it gave.

Tasks: classification (Acc@1, Acc@5 with more than 5 classes, Loss) and segmentation (mIoU, Mean
Acc@, Overall Acc@, Dice Score, CE Loss: a 1x1 convolution on the
encoder's last feature map, upsampled bilinearly, as gatepipe's built-in
head). With resume_dir in experiment.json it checkpoints every
checkpoint_every iterations (unset: at validations, at most once a
minute; 0: never) and goes on from the last checkpoint of the same
action after a kill. Standard library + torch (+ torchvision / timm for their models).
"""
import json
import math
import os
import shutil
import struct
import sys
import time

try:
    import torch
    import torch.nn.functional as F
except ImportError as e:
    raise SystemExit("%s cannot import torch (%s): install PyTorch for it (Debian: apt-get install python3-torch "
                     "python3-torchvision; else pip install torch torchvision), or set the module's python to an "
                     "interpreter that has it" % (sys.executable, e))

SAFETENSORS_DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
                      "F64": torch.float64, "I64": torch.int64, "U8": torch.uint8, "I32": torch.int32}


def read_safetensors(path):
    """Every tensor of a safetensors file, as torch tensors (CPU)."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = bytearray(f.read())
    out = {}
    for name, h in header.items():
        if name == "__metadata__":
            continue
        b, e = h["data_offsets"]
        dtype = SAFETENSORS_DTYPES.get(h["dtype"])
        if dtype is None:
            raise SystemExit("%s: tensor %s has dtype %s, which this trainer does not read" % (path, name, h["dtype"]))
        t = torch.frombuffer(data[b:e], dtype=dtype) if e > b else torch.empty(0, dtype=dtype)
        out[name] = t.reshape(h["shape"])
    return out


def write_safetensors(path, tensors, metadata):
    """Writes tensors (name -> tensor) as a safetensors file, through a
    temporary file and a rename."""
    names = {v: k for k, v in SAFETENSORS_DTYPES.items()}
    header, blobs, off = {"__metadata__": {k: str(v) for k, v in metadata.items()}}, [], 0
    for name in sorted(tensors):
        t = tensors[name].detach().to("cpu").contiguous()
        if t.dtype not in names:
            raise SystemExit("tensor %s: dtype %s cannot be saved" % (name, t.dtype))
        b = t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
        header[name] = {"dtype": names[t.dtype], "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for b in blobs:
            f.write(b)
    os.replace(path + ".tmp", path)


def load_split(store, split, meta, task):
    """x as float [N, C, H, W] normalised as meta.json says; y as int64."""
    t = read_safetensors(os.path.join(store, split + ".safetensors"))
    x = t["x"].float()
    norm = meta["normalize"]
    mean = torch.tensor(norm["mean"], dtype=torch.float32)
    std = torch.tensor(norm["std"], dtype=torch.float32)
    if x.dim() != 4:
        raise SystemExit("split %s: examples of shape %s; this trainer needs images [C, H, W]" % (split, list(x.shape[1:])))
    x = (x * norm["scale"] - mean.view(1, -1, 1, 1)) / std.view(1, -1, 1, 1)
    y = t["y"].long()
    if task == "segmentation" and y.dim() != 3:
        raise SystemExit("split %s: segmentation needs masks [N, H, W], not %s" % (split, list(y.shape)))
    return x, y


class ConvNet(torch.nn.Module):
    """A small CNN: conv3x3-ReLU-maxpool per width; features before the pool of the last."""

    def __init__(self, in_ch, classes, widths=(32, 64)):
        super().__init__()
        layers, c = [], in_ch
        for w in widths:
            layers += [torch.nn.Conv2d(c, w, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2)]
            c = w
        self.features = torch.nn.Sequential(*layers)
        self.fc = torch.nn.Linear(c, classes)
        self.width = c

    def forward_features(self, x):
        return self.features(x)

    def forward(self, x):
        return self.fc(self.forward_features(x).mean(dim=(2, 3)))


class FeatureMap(torch.nn.Module):
    """A model's forward_features as a module, so that a head built on it
    holds the model as a submodule: moved to the GPU, optimised and saved
    with the head (a bound method would leave the encoder out)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model.forward_features(x)


def build_model(arch, in_ch, classes):
    """The model and a module giving its last feature map [N, C, h, w]."""
    if arch == "convnet":
        m = ConvNet(in_ch, classes)
        return m, m.features, m.width
    if arch.startswith("timm:"):
        try:
            import timm
        except ImportError:
            raise SystemExit("model %r: %s cannot import timm: pip install timm, or use a torchvision name" % (arch, sys.executable))
        name = arch[5:]
        if name not in timm.list_models():
            close = timm.list_models("*%s*" % name.split("_")[0])[:8]
            raise SystemExit("model %r: timm %s has no model %r%s" % (
                arch, timm.__version__, name, "; close ones: " + ", ".join(close) if close else ""))
        m = timm.create_model(name, pretrained=False, num_classes=classes, in_chans=in_ch)
        return m, FeatureMap(m), m.num_features
    import torchvision
    if not hasattr(torchvision.models, arch):
        raise SystemExit("model %r: not a torchvision model (torchvision %s); use convnet, a torchvision name "
                         "such as resnet18, or timm:NAME with timm installed" % (arch, torchvision.__version__))
    m = getattr(torchvision.models, arch)(num_classes=classes)
    if arch.startswith(("resnet", "resnext", "wide_resnet")):
        if in_ch != 3:
            m.conv1 = torch.nn.Conv2d(in_ch, m.conv1.out_channels, 7, 2, 3, bias=False)
        body = torch.nn.Sequential(*list(m.children())[:-2])
        return m, body, m.fc.in_features
    if in_ch != 3:
        raise SystemExit("model %r: %d input channels; only ResNets and convnet adapt their stem here" % (arch, in_ch))
    if hasattr(m, "features"):
        return m, m.features, None
    raise SystemExit("model %r: no feature map for segmentation; use a ResNet or convnet" % arch)


def load_weights(model, path, log):
    """Loads a safetensors state dict, or a torch.save checkpoint (weights only: no code runs);
    tensors whose name or shape does not fit (a head) stay fresh."""
    with open(path, "rb") as f:
        zipped = f.read(4) == b"PK\x03\x04"
    if zipped:
        state = torch.load(path, map_location="cpu", weights_only=True)
        if isinstance(state, dict) and isinstance(state.get("state_dict", state.get("model")), dict):
            state = state.get("state_dict", state.get("model"))
    else:
        state = read_safetensors(path)
    # gatepipe's own checkpoints name the encoder's tensors encoder.*
    state = {k[len("encoder."):] if k.startswith("encoder.") else k: v for k, v in state.items()}
    own = model.state_dict()
    fit = {k: v for k, v in state.items() if k in own and own[k].shape == v.shape}
    bad = []
    for k, v in sorted(fit.items()):
        if v.is_floating_point():
            nan, inf = int(torch.isnan(v).sum()), int(torch.isinf(v).sum())
            if nan or inf:
                bad.append("%s holds %d NaN and %d infinite of %d values" % (k, nan, inf, v.numel()))
    if bad:
        raise SystemExit("weights %s hold non-finite values in %d tensor(s): %s%s; a model cannot start from them "
                         "(was the checkpoint saved after training diverged?)" % (
                             path, len(bad), "; ".join(bad[:8]), "; and %d more" % (len(bad) - 8) if len(bad) > 8 else ""))
    missing = [k for k in own if k not in fit]
    model.load_state_dict(fit, strict=False)
    log("weights %s: %d tensors loaded, %d left as initialised (%s)" % (
        os.path.basename(path), len(fit), len(missing), ", ".join(missing[:4]) + ("..." if len(missing) > 4 else "")))
    if not fit:
        raise SystemExit("weights %s: no tensor fits the model (names or shapes differ)" % path)


class SegHead(torch.nn.Module):
    def __init__(self, features, width, classes):
        super().__init__()
        self.features = features
        self.head = torch.nn.Conv2d(width, classes, 1)

    def forward(self, x):
        z = self.head(self.features(x))
        return F.interpolate(z, size=x.shape[-2:], mode="bilinear", align_corners=False)


def evaluate(model, x, y, task, classes, batch, dev):
    model.eval()
    losses, n = 0.0, 0
    correct1 = correct5 = 0
    inter = torch.zeros(classes, dtype=torch.float64)
    union = torch.zeros(classes, dtype=torch.float64)
    truth = torch.zeros(classes, dtype=torch.float64)
    pred_n = torch.zeros(classes, dtype=torch.float64)
    with torch.no_grad():
        for i in range(0, x.shape[0], batch):
            xb, yb = x[i:i + batch].to(dev), y[i:i + batch].to(dev)
            out = model(xb)
            losses += float(F.cross_entropy(out, yb, reduction="sum"))
            n += yb.numel()
            if task == "classification":
                top = out.topk(min(5, classes), dim=1).indices
                correct1 += int((top[:, 0] == yb).sum())
                correct5 += int((top == yb[:, None]).any(dim=1).sum())
            else:
                p = out.argmax(dim=1).flatten().cpu()
                t = yb.flatten().cpu()
                truth += torch.bincount(t, minlength=classes).double()
                pred_n += torch.bincount(p, minlength=classes).double()
                inter += torch.bincount(t[p == t], minlength=classes).double()
    model.train()
    if task == "classification":
        cnt = x.shape[0]
        out = {"Acc@1": (100.0 * correct1 / cnt, True), "Loss": (losses / n, False)}
        if classes > 5:  # top-5 accuracy is 100 with 5 classes or fewer
            out["Acc@5"] = (100.0 * correct5 / cnt, True)
        return out
    union = truth + pred_n - inter
    present = union > 0
    iou = inter[present] / union[present]
    dice = 2 * inter[present] / (truth + pred_n)[present]
    acc = inter[truth > 0] / truth[truth > 0]
    return {"mIoU": (100.0 * float(iou.mean()), True), "Mean Acc@": (100.0 * float(acc.mean()), True),
            "Overall Acc@": (100.0 * float(inter.sum() / truth.sum()), True),
            "Dice Score": (100.0 * float(dice.mean()), True), "CE Loss": (losses / n, False)}


STATE_FILE = "torch_state.pt"
AUTO_CHECKPOINT_GAP = 60.0  # seconds between checkpoints when checkpoint_every is unset


def pack_state(state):
    """A training state as a flat dict of tensors, which torch.load reads
    back with weights_only=True on every torch version: the scalars and
    the optimiser's settings go as JSON bytes in a uint8 tensor."""
    flat, meta = {}, {}
    for key, value in state.items():
        if isinstance(value, torch.Tensor):
            flat[key] = value
        elif key in ("model", "best_state"):
            for k, v in value.items():
                flat["%s/%s" % (key, k)] = v
        elif key == "opt":
            meta["opt_groups"] = value["param_groups"]
            scalars = {}
            for idx, slots in value["state"].items():
                for name, v in slots.items():
                    if isinstance(v, torch.Tensor):
                        flat["opt/%d/%s" % (idx, name)] = v
                    else:
                        scalars["%d/%s" % (idx, name)] = v
            meta["opt_scalars"] = scalars
        else:
            meta[key] = value
    flat["meta"] = torch.tensor(list(json.dumps(meta).encode()), dtype=torch.uint8)
    return flat


def unpack_state(flat):
    """The training state pack_state packed."""
    state = json.loads(bytes(flat["meta"].tolist()).decode())
    state["model"], state["best_state"] = {}, {}
    opt = {"state": {}, "param_groups": state.pop("opt_groups")}
    for key, v in flat.items():
        if key == "meta":
            continue
        head, _, rest = key.partition("/")
        if head in ("model", "best_state") and rest:
            state[head][rest] = v
        elif head == "opt" and rest:
            idx, _, name = rest.partition("/")
            opt["state"].setdefault(int(idx), {})[name] = v
        else:
            state[key] = v
    for key, v in state.pop("opt_scalars").items():
        idx, _, name = key.partition("/")
        opt["state"].setdefault(int(idx), {})[name] = v
    state["opt"] = opt
    return state


class Checkpoints:
    """The run's checkpoints in the resume directory gatepipe gives
    (experiment.json resume_dir): the whole training state and the log up
    to it, written through a temporary file and a rename. A checkpoint
    that is damaged or written for another action is reported and
    removed, and training starts over."""

    def __init__(self, exp, every, validate_every, log_path, warn):
        self.dir = exp.get("resume_dir") or ""
        self.action = exp.get("action", "")
        self.every, self.validate_every = every, validate_every
        self.log_path, self.warn = log_path, warn
        self.last = time.time()

    def path(self, name):
        return os.path.join(self.dir, name)

    def load(self):
        """The saved state for this action, or None; restores the log up to it."""
        p = self.path(STATE_FILE)
        if not self.dir or not os.path.exists(p):
            return None
        try:
            st = unpack_state(torch.load(p, map_location="cpu", weights_only=True))
            step = int(st["step"])
        except Exception as e:  # a truncated or foreign file
            self.warn("the checkpoint %s is damaged (%s): not used, training starts over" % (p, str(e).splitlines()[0][:200]))
            os.remove(p)
            return None
        if st.get("action") != self.action:
            self.warn("the checkpoint at iteration %d was written by another configuration of this block "
                      "(action %s, now %s): not used, training starts over" % (step, str(st.get("action"))[:12], self.action[:12]))
            os.remove(p)
            return None
        try:
            with open(self.path("log.jsonl")) as src, open(self.log_path, "a") as dst:
                for line in src:
                    try:
                        if int(json.loads(line).get("step", 0)) <= step:
                            dst.write(line)
                    except ValueError:
                        pass
        except OSError:
            pass
        return st

    def due(self, step, total):
        if not self.dir or step >= total or self.every == 0:
            return False
        if self.every is not None:
            return step % self.every == 0
        if step % self.validate_every != 0 or time.time() - self.last < AUTO_CHECKPOINT_GAP:
            return False
        return True

    def save(self, state):
        self.last = time.time()
        state["action"] = self.action
        # The log first: a kill between the two leaves a log ahead of the
        # state, which load() trims.
        shutil.copyfile(self.log_path, self.path("log.jsonl.tmp"))
        os.replace(self.path("log.jsonl.tmp"), self.path("log.jsonl"))
        tmp = self.path(STATE_FILE + ".tmp")
        torch.save(pack_state(state), tmp)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, self.path(STATE_FILE))


def main():
    with open(os.environ["GATEPIPE_EXPERIMENT"]) as f:
        exp = json.load(f)
    cfg, out_dir = exp["config"], exp["out_dir"]
    log_path = os.path.join(out_dir, "log.jsonl")

    def say(msg):
        print(msg, file=sys.stderr, flush=True)

    def warn(msg):
        say("warning: " + msg)
        with open(log_path, "a") as f:
            f.write(json.dumps({"step": 0, "total": 0, "warning": msg}) + "\n")

    every = cfg.get("checkpoint_every")
    ckpts = Checkpoints(exp, None if every is None else int(every), int(cfg.get("validate_every", 200)), log_path, warn)
    resume = ckpts.load()
    logf = open(log_path, "a")

    def progress(step, total, **fields):
        logf.write(json.dumps(dict(step=step, total=total, **fields)) + "\n")
        logf.flush()

    cuda = exp["devices"].get("device") == "cuda"
    if cuda and not torch.cuda.is_available():
        raise SystemExit("gatepipe assigned a GPU but torch.cuda.is_available() is false (torch %s)" % torch.__version__)
    dev = torch.device("cuda:0" if cuda else "cpu")
    torch.set_num_threads(max(int(exp["devices"].get("cpus", 1)), 1))
    seed = int(cfg.get("seed", 0))
    torch.manual_seed(seed)

    store = cfg["dataset"]
    with open(os.path.join(store, "meta.json")) as f:
        meta = json.load(f)
    task = meta["task"]
    if task not in ("classification", "segmentation"):
        raise SystemExit("the benchmark dataset is a %s task; this trainer runs classification and segmentation" % task)
    classes = int(meta["num_classes"])
    x, y = load_split(store, "train", meta, task)
    xv, yv = load_split(store, "val", meta, task)
    xt, yt = load_split(store, "test", meta, task)

    model, features, width = build_model(cfg.get("arch", "resnet18"), x.shape[1], classes)
    if cfg.get("weights"):
        load_weights(model, cfg["weights"], say)
    if task == "segmentation":
        if width is None:
            raise SystemExit("model %r: unknown feature width for the segmentation head" % cfg.get("arch"))
        model = SegHead(features, width, classes)
    model.to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=float(cfg.get("lr", 1e-3)),
                            weight_decay=float(cfg.get("weight_decay", 0.01)))
    iters = int(cfg.get("iterations", 1000))
    every = int(cfg.get("validate_every", 200))
    batch = int(cfg.get("batch_size", 128))
    primary = "Acc@1" if task == "classification" else "mIoU"
    gen = torch.Generator().manual_seed(seed)
    best, best_state = -math.inf, None
    first = 1
    if resume is not None:
        model.load_state_dict(resume["model"])
        opt.load_state_dict(resume["opt"])
        gen.set_state(resume["gen"])
        torch.set_rng_state(resume["cpu_rng"])
        if cuda and "cuda_rng" in resume:
            torch.cuda.set_rng_state(resume["cuda_rng"])
        best, best_state = resume["best"], resume["best_state"] or None
        first = int(resume["step"]) + 1
        progress(first - 1, iters, resumed=True)
        say("resumed at iteration %d of %d" % (first - 1, iters))
    start = time.time()
    for step in range(first, iters + 1):
        idx = torch.randint(0, x.shape[0], (min(batch, x.shape[0]),), generator=gen)
        loss = F.cross_entropy(model(x[idx].to(dev)), y[idx].to(dev))
        if not torch.isfinite(loss):
            raise SystemExit("iteration %d: the loss is %s" % (step, loss.item()))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % every == 0 or step == iters:
            val = evaluate(model, xv, yv, task, classes, batch, dev)
            score = val[primary][0]
            progress(step, iters, loss=loss.item(), **{"val_" + k: v for k, (v, _) in val.items()},
                     images_per_sec=step * batch / max(time.time() - start, 1e-9))
            if score > best:
                best = score
                best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        elif step % 10 == 0:
            progress(step, iters, loss=loss.item())
        if ckpts.due(step, iters):
            state = {"step": step, "model": model.state_dict(), "opt": opt.state_dict(), "gen": gen.get_state(),
                     "cpu_rng": torch.get_rng_state(), "best": best, "best_state": best_state or {}}
            if cuda:
                state["cuda_rng"] = torch.cuda.get_rng_state()
            ckpts.save(state)
    model.load_state_dict(best_state)
    # The kept model, encoder included, in its own (torch) tensor names.
    write_safetensors(os.path.join(out_dir, "model.safetensors"), best_state,
                      {"arch": cfg.get("arch", "resnet18"), "task": task, "val_score": best})
    test = evaluate(model, xt, yt, task, classes, batch, dev)
    with open(os.path.join(out_dir, "metrics.json"), "w") as f:
        json.dump({"model": cfg["model"], "benchmark": cfg["benchmark"], "category": cfg.get("category", "Img Class"),
                   "metrics": {k: {"value": float(v), "higher_is_better": h} for k, (v, h) in test.items()},
                   "primary": primary}, f, indent=2)
    say("%s on %s (%s, %d steps): %s %.2f" % (cfg["model"], cfg["benchmark"], dev, iters, primary, test[primary][0]))


def out_of_memory(e):
    """Whether e is PyTorch's out-of-memory error (any version)."""
    oom = getattr(torch.cuda, "OutOfMemoryError", None)
    return (oom is not None and isinstance(e, oom)) or "out of memory" in str(e)


try:
    main()
except RuntimeError as e:
    if out_of_memory(e):
        raise SystemExit("out of memory (%s): lower batch_size, or use a smaller image_size or model" % str(e).splitlines()[0][:200])
    raise
