"""Helpers for the gatepipe external-trainer protocol (gatepipe-trainer/1),
standard library only.

gatepipe writes experiment.json into the node's output directory and passes
its path in $GATEPIPE_EXPERIMENT; the trainer appends progress lines to
log.jsonl and writes metrics.json before exiting 0. See SPEC.md.
"""
import json
import os
import struct


def experiment():
    """Returns the experiment: config, out_dir and the assigned devices."""
    with open(os.environ["GATEPIPE_EXPERIMENT"]) as f:
        return json.load(f)


def log(exp, step, total, **fields):
    """Appends one progress line (gatepipe shows step/total live)."""
    with open(os.path.join(exp["out_dir"], "log.jsonl"), "a") as f:
        f.write(json.dumps(dict(step=step, total=total, **fields)) + "\n")


def write_metrics(exp, model, benchmark, category, metrics):
    """metrics: {name: (value, higher_is_better)}."""
    out = {"model": model, "benchmark": benchmark, "category": category,
           "metrics": {k: {"value": float(v), "higher_is_better": bool(h)} for k, (v, h) in metrics.items()}}
    with open(os.path.join(exp["out_dir"], "metrics.json"), "w") as f:
        json.dump(out, f, indent=2)


def read_split(store, split):
    """Reads a gatepipe example store split: (x bytes or floats, shape, labels)."""
    with open(os.path.join(store, split + ".safetensors"), "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    def tensor(name):
        h = header[name]
        b, e = h["data_offsets"]
        return h["dtype"], h["shape"], data[b:e]
    xd, xs, xb = tensor("x")
    yd, ys, yb = tensor("y")
    labels = list(struct.unpack("<%dq" % ys[0], yb))
    if xd == "U8":
        x = xb
    else:
        x = struct.unpack("<%df" % (len(xb) // 4), xb)
    return x, xs, labels


def meta(store):
    with open(os.path.join(store, "meta.json")) as f:
        return json.load(f)
