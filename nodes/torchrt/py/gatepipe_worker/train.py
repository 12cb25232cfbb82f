import json
import math
import os
import shutil
import time

import torch

from . import gateepisodes
from .defects import d1_steps, no_decay
from .models import TaskModel, convolutional, gatepipe_names, head_sizes, init_weights
from .loader import Batches, ranges, readers
from .metrics import REGRESSION, predictions, selection_score, standardizer, task_loss, val_metrics  # noqa: F401 (tests import them here)
from .storage import Inputs, SafeTensors, Store, write_safetensors

# ---- training: the train block on the torch runtime -------------------------
#
# gatepipe draws, the worker computes: the initial weights (the recipe's
# seed's initialisation, or the encoder's weights), every iteration's
# examples (or few-shot episode) and the evaluation episodes come from Go in
# config.draws, so both runtimes train the same model on the same batches.
# The worker keeps the top-k parameter sets by the validation score, lowers
# the learning rate on a plateau of the validation loss, and writes the
# kept sets and the top-k ensemble's test predictions; gatepipe computes the
# test metrics from them with the Go runtime's code.

LOG_EVERY = 20


class Targets:
    """A split's targets on the device: class indices, float targets
    (multi-label, regression), masks, and question / caption tokens.

    Masks stay in the type they are stored in (uint8 for up to 256
    classes), on the GPU only when they fit a quarter of its free memory
    (as Examples' inputs), else memory-mapped; labels() makes a batch's
    int64 masks, through the encoder transform's geometry (inputs.masks)."""

    def __init__(self, f, task, device, inputs=None):
        self.task, self.device, self.inputs = task, device, inputs
        self.q = f.tensor("q").to(device).long() if "q" in f.header else None
        if task == "segmentation":
            y = f.tensor("y")
            if device.type == "cuda":
                free, _ = torch.cuda.mem_get_info()
                if y.numel() * y.element_size() < free // 4:
                    y = y.to(device)
            self.y = y
            self.n = y.shape[0]
            return
        self.y = f.tensor("y").to(device)
        self.n = self.y.shape[0]
        if task in ("multilabel", "regression", "video_regression"):
            self.y = self.y.float()
            if self.y.dim() == 1:
                self.y = self.y.unsqueeze(1)
        elif task != "retrieval":
            self.y = self.y.long()

    def labels(self, idx):
        """The targets of rows idx (a LongTensor), on the device: a
        segmentation batch's masks as int64, transformed."""
        if self.task != "segmentation":
            return self.y[idx]
        y = self.y[idx.to(self.y.device)].to(self.device).long()
        return self.inputs.masks(y) if self.inputs is not None else y


class Examples:
    """A split's examples: the stored tensor (on the GPU when it fits in
    the share device_cache of its free memory, a quarter by default, else
    memory-mapped and read ahead by the loader), turned into the encoder's
    input per batch."""

    def __init__(self, f, inputs, device, device_cache=0.25):
        self.inputs = inputs
        x = f.tensor("x")
        self.n = x.shape[0]
        if device.type == "cuda" and isinstance(x, torch.Tensor):  # a JPEG store is decoded by the loader
            free, _ = torch.cuda.mem_get_info()
            if x.numel() * x.element_size() < free * device_cache:
                x = x.to(device)
        self.x = x

    def batch(self, idx):
        if self.x.device.type == "cpu" and self.inputs.device.type == "cuda":
            return self.inputs(self.x[idx.cpu()].pin_memory())
        return self.inputs(self.x[idx.to(self.x.device)])

    def stream(self, batches, threads):
        """The inputs of batches (LongTensors of rows, or (start, end)
        ranges) in order: read ahead by the loader's threads unless the
        examples are on the device already."""
        if resident(self.x.device, self.inputs.device):
            for b in batches:
                idx = torch.arange(b[0], b[1]) if isinstance(b, tuple) else b
                yield self.batch(idx)
            return
        cpu = [b if isinstance(b, tuple) else b.cpu() for b in batches]
        for _, x in Batches(self.x, cpu, self.inputs, threads=threads):
            yield x


def resident(stored, inputs):
    """Whether a split stored on device stored is on the device the inputs
    are made on, to be indexed there rather than read by the loader. The
    inputs' device is "cuda", the tensor's "cuda:0": not equal, the same
    GPU (the node sees only its own, through CUDA_VISIBLE_DEVICES)."""
    return stored.type == "cuda" and inputs.type == "cuda"


class Trainer:
    def __init__(self, run):
        self.run, cfg = run, run.cfg
        self.cfg, self.task, self.rec = cfg, cfg["task"], cfg["recipe"]
        store = Store(cfg["store"])
        self.conv = convolutional(cfg["encoder"])
        self.protocol = cfg.get("protocol") or None
        self.defects = set((self.protocol or {}).get("defects") or [])
        # D7: GATE's video frames reached the encoder unnormalised.
        normalize = not ("D7" in self.defects and self.task in REGRESSION + ("video",))
        self.inputs = Inputs(store, cfg.get("preprocess"), run.device, channels_last=self.conv, normalize=normalize)
        self.outputs = int(cfg["outputs"])
        seed = int(self.rec.get("seed") or 0)
        self.augment = None
        if self.protocol:  # the card's training augmentation (GATE's)
            from .augment import for_card
            self.augment, why = for_card(self.task, self.protocol, self.inputs, seed)
            if why:
                run.warn(why)
        torch.manual_seed(seed)  # a library encoder's and GATE's adapters' initialisation (gatepipe draws the rest)
        adapters = None
        if self.protocol:
            # GATE's adapters (a subpackage: imported only for a protocol).
            from . import adapters
        self.model = TaskModel(self.task, cfg["encoder"], self.inputs.out_shape(), self.outputs,
                               int(cfg.get("qlen") or 0), int(cfg.get("vocab") or 0),
                               protocol=self.protocol, text=cfg.get("text"))
        self.loss = adapters.Loss(self.task, self.protocol) if adapters is not None else None
        init_weights(self.model, cfg, lambda msg: run.log({"weights": msg}))
        self.model.to(run.device)
        if self.conv:  # oneDNN's and cuDNN's fastest layout for convolutions
            self.model = self.model.to(memory_format=torch.channels_last)
        self.probe = bool(self.rec.get("linear_probe"))
        # A probe freezes the encoder (and the text tower of GATE's adapters, part of GATE's encoder).
        frozen = ("encoder.", "head.text.") if self.protocol else ("encoder.",)
        self.learn = [p for name, p in self.model.named_parameters() if not (self.probe and name.startswith(frozen))]
        if self.probe:
            for name, p in self.model.named_parameters():
                p.requires_grad_(not name.startswith(frozen))
        if not self.learn:
            raise SystemExit("nothing to train: the %s head has no parameters and the encoder is frozen" % self.task)
        self.opt = optimizer(self.model, self.learn, self.task, self.rec, (self.protocol or {}).get("recipe"))
        self.scaler = fp16_scaler(run, (self.protocol or {}).get("recipe"))
        self.splits = {}
        for name in ("train", "val", "test"):
            f = store.split(name)
            tg = Targets(f, self.task, run.device, self.inputs)
            share = cfg.get("device_cache")
            self.splits[name] = (Examples(f, self.inputs, run.device, 0.25 if share is None else float(share)), tg)
        self.extra = None
        if self.task in REGRESSION:
            self.extra = standardizer(self.splits["train"][1].y.cpu())
            if self.loss is not None:  # GATE's L1 on the raw targets: no standardising
                self.extra = (torch.zeros_like(self.extra[0]), torch.ones_like(self.extra[1]))
            self.extra = (self.extra[0].to(run.device), self.extra[1].to(run.device))
        self.draws = SafeTensors(cfg["draws"])
        self.episodes = gateepisodes.load(  # GATE's variable episodes ({split: Episodes}), or None
            cfg, self.draws, run.device, {s: ex.n for s, (ex, _) in self.splits.items()})
        if adapters is not None and self.protocol.get("text_encoder") and self.task in adapters.TEXT_FAMILIES:
            # The text tower's token ids (CLIP's BPE, [N, 77]) in place of
            # the store's word ids.
            for name, (_, tg) in self.splits.items():
                key = "text_ids_%s" % name
                if key not in self.draws.header:
                    raise SystemExit("%s: no %s (the %s split's CLIP token ids, which GATE's %s adapter reads)"
                                     % (cfg["draws"], key, name, adapters.HEADS[self.task]))
                ids = self.draws.tensor(key).long()
                if ids.shape[0] != tg.n:
                    raise SystemExit("%s: %s holds %d rows for %d examples" % (cfg["draws"], key, ids.shape[0], tg.n))
                tg.q = ids.to(run.device)
        self.sizes = head_sizes(cfg["encoder"])
        self.eval_batch = int(cfg.get("eval_batch") or 256)

    def input(self, x):
        if self.conv and x.dim() == 4:  # (on the CPU the loader made it so)
            return x.contiguous(memory_format=torch.channels_last)
        return x

    def forward(self, split, idx, shots=None, x=None, episode=None, it=None):
        """The model's output for split's rows idx (their input x when the
        loader made it already) and their targets; a few-shot episode is
        GATE's (a gateepisodes.Episode), else the head's shape with shots.
        A training iteration it runs the card's augmentation on the batch."""
        ex, tg = self.splits[split]
        x = ex.batch(idx) if x is None else x
        y = tg.labels(idx) if self.task not in ("fewshot", "retrieval") else None
        if it is not None and self.augment is not None:
            x, y = self.augment(x, y, it)
        x = self.input(x)
        q = tg.q[idx] if tg.q is not None and self.task in ("relational", "retrieval") else None
        with self.run.autocast():
            if self.task == "fewshot":
                s = self.sizes
                return self.model(x, episode=episode if episode is not None else (s["ways"], shots or s["shots"], s["queries"])), None
            if self.protocol and self.task == "segmentation":  # GATE's adapter: logits at the masks' size
                return self.model(x, q, size=tuple(y.shape[-2:])), y
            return self.model(x, q), y

    def evaluate(self, split, states):
        """The ensemble's predictions on split (mean over states), and, for
        few-shot, per evaluation setting; for segmentation, dense()."""
        if self.task == "segmentation":
            return self.dense(split, states)
        self.model.eval()
        ex, tg = self.splits[split]
        keep = {k: v.clone() for k, v in self.model.state_dict().items()}
        total = None
        with torch.inference_mode():
            for st in states:
                self.model.load_state_dict(st)
                if self.task == "fewshot" and self.episodes is not None:
                    out = [predictions(self.task, self.forward(split, e.index, episode=e)[0], None) for e in self.episodes[split]]
                elif self.task == "fewshot":
                    out = []
                    for k in self.cfg["eval_shots"]:
                        eps = self.draws.tensor("%s_episodes_%d" % (split, k)).long().to(self.run.device)
                        out.append(torch.stack([predictions(self.task, self.forward(split, e, k)[0], None) for e in eps]))
                else:
                    parts = []
                    batches = ranges(ex.n, self.eval_batch)
                    for (a, b), x in zip(batches, ex.stream(batches, readers(self.run))):
                        idx = torch.arange(a, b, device=self.run.device)
                        parts.append(predictions(self.task, self.forward(split, idx, x=x)[0], self.extra))
                    out = torch.cat(parts)
                if total is None:
                    total = out
                elif self.task == "fewshot":
                    total = [a + b for a, b in zip(total, out)]
                else:
                    total = total + out
        self.model.load_state_dict(keep)
        if self.task == "fewshot":
            return [t / len(states) for t in total]
        return total / len(states)

    def dense(self, split, states):
        """Segmentation: the ensemble's predicted class of every pixel and
        its probability of the true class ([N, H*W] each, on the CPU), and
        each image's class probabilities summed over its pixels ([N, K], for
        the soft Dice score), which is what the metrics take, instead of
        N*H*W*K probabilities."""
        self.model.eval()
        ex, tg = self.splits[split]
        keep = {k: v.clone() for k, v in self.model.state_dict().items()}
        best, ptrue, psum = [], [], []
        with torch.inference_mode():
            batches = ranges(ex.n, self.eval_batch)
            for (i, e), x in zip(batches, ex.stream(batches, readers(self.run))):
                idx = torch.arange(i, e, device=self.run.device)
                total = None
                for st in states:
                    if len(states) > 1 or i == 0:
                        self.model.load_state_dict(st)
                    p = torch.softmax(self.forward(split, idx, x=x)[0].float(), dim=1)
                    total = p if total is None else total + p
                total /= len(states)
                y = tg.labels(idx)
                best.append(total.argmax(dim=1).flatten(1).to(torch.int32).cpu())
                ptrue.append(total.gather(1, y.unsqueeze(1)).flatten(1).cpu())
                psum.append(total.flatten(2).sum(dim=2).cpu())
        self.model.load_state_dict(keep)
        return torch.cat(best), torch.cat(ptrue), torch.cat(psum)

    def train_mode(self):
        # A linear probe keeps the frozen encoder's batch norms on their running statistics.
        self.model.train(not self.probe)


def optimizer(model, learn, task, rec, gate):
    """AdamW over learn: PyTorch's defaults, or, under GATE's recipe (the
    card's), its betas and eps and the segmentation decoder's learning-rate
    multiple (a parameter group with "mult"; set_lr applies it)."""
    betas, eps, groups = (0.9, 0.999), 1e-8, [{"params": learn, "mult": 1.0}]
    wd = rec["weight_decay"]
    if gate:
        betas, eps = tuple(gate["optimizer"]["betas"]), float(gate["optimizer"]["eps"])
        mult = float(gate.get("decoder_lr_multiplier") or 0)
        if task == "segmentation" and mult > 0:
            ids = {id(p) for name, p in model.named_parameters() if name.startswith("head.decoder.")}
            groups = [{"params": [p for p in learn if id(p) not in ids], "mult": 1.0},
                      {"params": [p for p in learn if id(p) in ids], "mult": mult}]
            groups = [g for g in groups if g["params"]]
        if gate["optimizer"].get("no_decay"):  # GATE's intended decay (D2 mended): not on biases and norms
            skip = {id(p) for name, p in model.named_parameters() if no_decay(name, p)}
            groups = [dict(g, params=ps, weight_decay=0.0 if off else wd)
                      for g in groups for off, ps in ((False, [p for p in g["params"] if id(p) not in skip]),
                                                      (True, [p for p in g["params"] if id(p) in skip])) if ps]
    return torch.optim.AdamW(groups, lr=rec["lr"], betas=betas, eps=eps, weight_decay=wd)


def fp16_scaler(run, gate):
    """GATE's fp16 where its recipe says so (ACDC, trained by accelerate's
    fp16 mixed precision: autocast to float16 with a dynamic loss scale):
    on a GPU whose precision gatepipe chose (precision = "auto"), the run's
    autocast becomes float16 and the gradient scaler is returned; else
    None (CPU autocast has no float16, and a precision the user set wins)."""
    if not gate or gate.get("precision") != "fp16" or not run.cuda or (run.cfg.get("precision") or "auto") != "auto":
        return None
    run.precision = "fp16"
    return torch.cuda.amp.GradScaler()


def set_lr(opt, lr):
    for g in opt.param_groups:
        g["lr"] = lr * g.get("mult", 1.0)


class Plateau:
    """ReduceLROnPlateau (mode min, relative threshold) on the validation
    loss at each validation, or, under GATE's recipe, on the training loss
    at every step (gate/config/config.py, its trainers' scheduler.step(loss))."""

    def __init__(self, rec, gate):
        sched = (gate or {}).get("schedule") or {}
        self.per_step = sched.get("on") == "train_loss"
        src = sched if self.per_step else rec
        self.factor = float(src["factor"] if self.per_step else rec["plateau_factor"])
        self.patience = int(src["patience"] if self.per_step else rec["plateau_patience"])
        self.threshold = float(src["threshold"] if self.per_step else rec["plateau_threshold"])

    def step(self, value, lr, best, bad):
        """The new (lr, best, bad) after a loss value."""
        if value < best * (1 - self.threshold):
            return lr, value, 0
        bad += 1
        if bad > self.patience:
            return lr * self.factor, best, 0
        return lr, best, bad


def job_train(run):
    t = Trainer(run)
    cfg, rec = t.cfg, t.rec
    iterations, validate_every = int(rec["iterations"]), max(int(rec["validate_every"]), 1)
    top_k = max(int(rec.get("top_k") or 1), 1)
    gate = t.episodes["train"] if t.episodes is not None else None  # GATE's: one episode a step
    order = t.draws.tensor("batches").long().to(run.device) if gate is None else [e.index for e in gate]
    lr = float(rec["lr"])
    best_loss, bad, kept = math.inf, 0, []
    state = TrainState(run.exp, cfg.get("checkpoint_every"), validate_every, run)
    first = 1
    saved = state.load(t)
    if saved is not None:
        lr, best_loss, bad, kept, first = saved
        run.progress(first - 1, iterations, force=True, resumed=True)
    set_lr(t.opt, lr)
    plateau = Plateau(rec, (t.protocol or {}).get("recipe"))
    d1 = None
    if "D1" in t.defects:
        # GATE's "top-k" ensemble: the steps d1_steps names, whatever their
        # scores, step 0 (the untrained model) included where it does.
        sel = (t.protocol or {}).get("selection") or {}
        higher = (sel.get("gate_direction") or sel.get("direction") or "max") == "max"
        validations = [0] + [i for i in range(1, iterations + 1) if i % validate_every == 0 or i == iterations]
        d1 = d1_steps(validations, higher, top_k)
        if 0 in d1 and first == 1:
            current = {k: v.detach().to("cpu", copy=True) for k, v in t.model.state_dict().items()}
            m = val_metrics(t.task, t.evaluate("val", [current]), t.splits["val"][1], t.outputs, t.episodes["val"] if t.episodes is not None else None)
            kept.append({"iteration": 0, "score": selection_score(t.task, m, t.protocol), "state": current})
    t.train_mode()
    seen, tick, timed, step_time = 0, time.time(), 0, 0.0
    # Every iteration's batch is known: the loader reads them ahead.
    feed = t.splits["train"][0].stream([order[it - 1] for it in range(first, iterations + 1)], readers(run))
    for it in range(first, iterations + 1):
        started = time.time()
        idx = order[it - 1]
        ep = gate[it - 1] if gate is not None else None
        out, y = t.forward("train", idx, x=next(feed), episode=ep, it=it)
        if t.task == "fewshot":
            y = ep.targets() if ep is not None else torch.arange(t.sizes["ways"], device=run.device).repeat_interleave(t.sizes["queries"])
        loss = task_loss(t.task, out, y, t.extra, t.loss)
        t.opt.zero_grad(set_to_none=True)
        if t.scaler is not None:  # fp16: the loss scaled, the step skipped on an overflow
            t.scaler.scale(loss).backward()
            t.scaler.step(t.opt)
            t.scaler.update()
        else:
            loss.backward()
            t.opt.step()
        seen += idx.numel()
        validate = it % validate_every == 0 or it == iterations
        entry = None
        value = None
        if plateau.per_step:  # GATE steps its scheduler on every step's loss
            value = loss.item()
            new_lr, best_loss, bad = plateau.step(value, lr, best_loss, bad)
            if new_lr != lr:
                lr = new_lr
                set_lr(t.opt, lr)
        if validate or it % LOG_EVERY == 0 or it == 1:
            value = loss.item() if value is None else value
            if not math.isfinite(value):
                raise SystemExit("training diverged: the loss is %s at iteration %d (lower the learning rate, now %g)" % (value, it, lr))
            entry = {"iteration": it, "step": it, "total": iterations, "loss": value, "lr": lr}
        if it > 1 or iterations == 1:
            if run.cuda and entry is not None:
                torch.cuda.synchronize()
            step_time += time.time() - started
            timed += idx.numel()  # images
        if validate:
            entry["images_per_sec"] = seen / max(time.time() - tick, 1e-9)
            tick, seen = time.time(), 0
            current = {k: v.detach().to("cpu", copy=True) for k, v in t.model.state_dict().items()}
            vp = t.evaluate("val", [current])
            m = val_metrics(t.task, vp, t.splits["val"][1], t.outputs, t.episodes["val"] if t.episodes is not None else None)
            entry["val"] = m
            if d1 is None:
                kept.append({"iteration": it, "score": selection_score(t.task, m, t.cfg.get("protocol")), "state": current})
                kept.sort(key=lambda c: -c["score"])  # stable: earlier first among ties
                kept = kept[:top_k]
            elif it in d1:
                kept.append({"iteration": it, "score": selection_score(t.task, m, t.protocol), "state": current})
                kept.sort(key=lambda c: d1.index(c["iteration"]))
            if not plateau.per_step:
                new_lr, best_loss, bad = plateau.step(m["loss"], lr, best_loss, bad)
                if new_lr != lr:
                    lr = new_lr
                    set_lr(t.opt, lr)
            t.train_mode()
        if entry is not None:  # progress comes with the log lines: the log stays the same run after run
            run.log(entry)
        if state.due(it, iterations):
            state.save(t, it, lr, best_loss, bad, kept)
    run.progress(iterations, iterations, force=True, phase="testing")
    states = [c["state"] for c in kept]
    pred = t.evaluate("test", states)
    work = cfg["work"]
    if t.task == "fewshot" and t.episodes is not None:  # gateepisodes' gate_pred
        write_safetensors(os.path.join(work, "pred.safetensors"), {"gate_pred": torch.cat([p.flatten() for p in pred]).float().cpu()})
    elif t.task == "fewshot":
        write_safetensors(os.path.join(work, "pred.safetensors"), {"pred_%d" % k: p.cpu() for k, p in zip(cfg["eval_shots"], pred)})
    elif t.task == "segmentation":
        write_safetensors(os.path.join(work, "pred.safetensors"), {"best": pred[0], "ptrue": pred[1], "psum": pred[2].float()})
    else:
        write_safetensors(os.path.join(work, "pred.safetensors"), {"pred": pred.cpu()})
    names = {local: g for g, local in gatepipe_names(t.model).items()}
    for i, c in enumerate(kept):
        tensors = {names[k]: v.float() for k, v in c["state"].items() if k in names}
        write_safetensors(os.path.join(work, "kept_%d.safetensors" % i), tensors, {"iteration": c["iteration"], "val_score": repr(c["score"])})
    with open(os.path.join(work, "result.json"), "w") as f:
        json.dump({"images_per_sec": timed / step_time if step_time > 0 else 0,
                   "kept": [{"iteration": c["iteration"], "val_score": c["score"]} for c in kept]}, f)


class TrainState:
    """Resumable checkpoints in the resume directory gatepipe gives
    (experiment.json resume_dir): the model, the optimiser's moments, the
    schedule and the kept sets as one safetensors file (state and
    bookkeeping in its metadata), with the log up to it, written through a
    temporary file and a rename. A damaged checkpoint or one of another
    action is reported and ignored: training starts over."""

    FILE = "torch-state.safetensors"

    def __init__(self, exp, every, validate_every, run):
        self.dir, self.action = exp.get("resume_dir") or "", exp.get("action", "")
        self.every, self.validate_every, self.run = every, validate_every, run
        self.last = time.time()

    def due(self, it, total):
        if not self.dir or it >= total or self.every == 0:
            return False
        if self.every is not None:
            return it % int(self.every) == 0
        return it % self.validate_every == 0 and time.time() - self.last >= 60

    def save(self, t, it, lr, best_loss, bad, kept):
        self.last = time.time()
        tensors = {"model/" + k: v for k, v in t.model.state_dict().items()}
        slots = []
        for i, p in enumerate(t.learn):
            st = t.opt.state.get(p, {})
            for name, v in st.items():
                if isinstance(v, torch.Tensor):
                    tensors["opt/%d/%s" % (i, name)] = v.reshape(-1) if v.dim() == 0 else v
                    slots.append([i, name, v.dim() == 0])
        for j, c in enumerate(kept):
            for k, v in c["state"].items():
                tensors["kept/%d/%s" % (j, k)] = v
        # torch's generators (a dropout's draws) and fp16's loss scale: a
        # resumed run goes on as the uninterrupted one would.
        tensors["rng/cpu"] = torch.get_rng_state()
        if self.run.cuda:
            tensors["rng/cuda"] = torch.cuda.get_rng_state()
        meta = {"action": self.action, "iteration": it, "lr": lr, "best_loss": best_loss if math.isfinite(best_loss) else None,
                "bad": bad, "kept": [[c["iteration"], c["score"]] for c in kept], "slots": slots,
                "scaler": t.scaler.state_dict() if t.scaler is not None else None}
        log = self.run.log_path
        if os.path.exists(log):
            shutil.copyfile(log, os.path.join(self.dir, "torch-log.jsonl.tmp"))
            os.replace(os.path.join(self.dir, "torch-log.jsonl.tmp"), os.path.join(self.dir, "torch-log.jsonl"))
        write_safetensors(os.path.join(self.dir, self.FILE), {k: v.detach() for k, v in tensors.items()}, {"state": json.dumps(meta)})

    def load(self, t):
        p = os.path.join(self.dir, self.FILE) if self.dir else ""
        if not p or not os.path.exists(p):
            return None
        try:
            f = SafeTensors(p)
            meta = json.loads(f.header["__metadata__"]["state"])
        except (Exception, SystemExit) as e:
            self.run.warn("the checkpoint %s is damaged (%s): not used, training starts over" % (p, str(e).splitlines()[0][:200]))
            os.remove(p)
            return None
        if meta.get("action") != self.action:
            self.run.warn("the checkpoint at iteration %d was written by another configuration of this block "
                          "(action %s, now %s): not used, training starts over" % (meta["iteration"], str(meta.get("action"))[:12], self.action[:12]))
            os.remove(p)
            return None
        dev = self.run.device
        t.model.load_state_dict({k: f.tensor("model/" + k).clone() for k in t.model.state_dict()})
        for i, name, scalar in meta["slots"]:
            v = f.tensor("opt/%d/%s" % (i, name)).clone()
            t.opt.state[t.learn[i]][name] = v.reshape(()) if scalar else v.to(dev)
        kept = [{"iteration": ki, "score": ks, "state": {k: f.tensor("kept/%d/%s" % (j, k)).clone() for k in t.model.state_dict()}}
                for j, (ki, ks) in enumerate(meta["kept"])]
        if "rng/cpu" in f.header:
            torch.set_rng_state(f.tensor("rng/cpu").clone())
        if self.run.cuda and "rng/cuda" in f.header:
            torch.cuda.set_rng_state(f.tensor("rng/cuda").clone())
        if t.scaler is not None and meta.get("scaler"):
            t.scaler.load_state_dict(meta["scaler"])
        it = int(meta["iteration"])
        src = os.path.join(self.dir, "torch-log.jsonl")
        if os.path.exists(src):
            with open(src) as a, open(self.run.log_path, "a") as b:
                for line in a:
                    try:
                        if int(json.loads(line).get("step", 0)) <= it:
                            b.write(line)
                    except ValueError:
                        pass
        best = meta["best_loss"] if meta["best_loss"] is not None else math.inf
        return meta["lr"], best, meta["bad"], kept, it + 1


