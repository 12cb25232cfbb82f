"""A researcher's own PyTorch module as an encoder: arch "python:PATH:CALLABLE"
(gatepipe makes PATH absolute), args the callable's keyword arguments.

The contract follows GATE's encoder interface. The callable returns a
torch.nn.Module whose forward(images) takes a float batch [B, C, H, W]
(normalised as the encoder block's preprocess says) and returns either the
pooled features [B, F], or a dict with

  features                [B, F]  the pooled features (required)
  raw_features            [B, T, D] tokens or [B, C, h, w] maps (dense heads)
  per_layer_raw_features  a list of such tensors, one per layer (optional)

Grey images (C = 1) are repeated to three channels unless the module has
in_channels = 1; a video's frames reach it one by one, as images. Tokens
[B, T, D] are laid on their square grid for dense heads (a leading class
token, T = 1 + n*n, is dropped). GATE's adapters (a train job with a
protocol) read all three as GATE's encoders give them (gate_outputs):
the features, the raw features as a token sequence, and the per-layer
features (the segmentation decoder's input; the raw features alone where
there are none).

Run as a script (python -c SOURCE JSON), it checks one such encoder on a
fake batch and prints what it found as JSON: gatepipe's plan does this.
This file imports nothing of the worker package, so that it runs alone.
"""
import importlib.util
import json
import math
import os
import sys
import traceback

import torch
from torch import nn

PREFIX = "python:"


def is_user(arch):
    return isinstance(arch, str) and arch.startswith(PREFIX)


def split(arch):
    """("/abs/path/mymodel.py", "MyNet") of "python:/abs/path/mymodel.py:MyNet"."""
    path, _, name = arch[len(PREFIX):].rpartition(":")
    return path, name


def load(arch, args):
    """Imports the file and calls the callable with args: the module."""
    path, name = split(arch)
    folder = os.path.dirname(path)
    if folder not in sys.path:
        sys.path.insert(0, folder)  # the file's own imports of its neighbours
    modname = "gatepipe_user_" + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(modname, path)
    if spec is None or spec.loader is None:
        raise ImportError("%s is not a Python file" % path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[modname] = mod
    spec.loader.exec_module(mod)
    fn = getattr(mod, name, None)
    if fn is None or not callable(fn):
        have = sorted(n for n in dir(mod) if not n.startswith("_") and callable(getattr(mod, n)))
        raise LookupError("%s has no callable %r (it has %s)" % (path, name, ", ".join(have[:12]) or "none"))
    m = fn(**(args or {}))
    if not isinstance(m, nn.Module):
        raise TypeError("%s:%s(...) returned %s, not a torch.nn.Module" % (path, name, type(m).__name__))
    return m


def outputs(out, batch):
    """(features [B, F], raw features or None) of what forward returned."""
    if isinstance(out, torch.Tensor):
        feats, raw = out, None
    elif isinstance(out, dict):
        if "features" not in out:
            raise TypeError("forward returned a dict without 'features' (keys: %s)" % ", ".join(map(str, out)))
        feats, raw = out["features"], out.get("raw_features")
    else:
        raise TypeError("forward returned %s; want a tensor [B, F] or a dict with 'features'" % type(out).__name__)
    if not isinstance(feats, torch.Tensor) or feats.dim() != 2 or feats.shape[0] != batch:
        raise ValueError("features are %s; want [B, F] = [%d, F]" % (describe(feats), batch))
    if raw is not None and (not isinstance(raw, torch.Tensor) or raw.dim() not in (3, 4) or raw.shape[0] != batch):
        raise ValueError("raw_features are %s; want tokens [%d, T, D] or maps [%d, C, h, w]" % (describe(raw), batch, batch))
    return feats, raw


def describe(t):
    return "of shape %s" % list(t.shape) if isinstance(t, torch.Tensor) else "a %s" % type(t).__name__


def as_map(raw):
    """Raw features as a map [B, C, h, w]: tokens laid on their grid."""
    if raw.dim() == 4:
        return raw
    b, t, d = raw.shape
    for drop in (0, 1):
        side = math.isqrt(t - drop)
        if side * side == t - drop:
            return raw[:, drop:].transpose(1, 2).reshape(b, d, side, side)
    raise ValueError("raw_features hold %d tokens, which lie on no square grid (with or without a class token)" % t)


class UserEncoder(nn.Module):
    """The user's module (user_module) with .width and .trunk(x), as
    library models have, for gatepipe's heads."""

    def __init__(self, spec, shape):
        super().__init__()
        if len(shape) != 3:
            raise SystemExit("%s takes images [C, H, W]; this dataset's examples are %s" % (spec["arch"], list(shape)))
        try:
            self.user_module = load(spec["arch"], spec.get("args"))
        except Exception as e:
            raise SystemExit("encoder %s: %s" % (spec["arch"], error_line(e, split(spec["arch"])[0])))
        self.arch = spec["arch"]
        self.grey_to_rgb = shape[0] == 1 and getattr(self.user_module, "in_channels", 3) != 1
        self.input_shape = list(shape)
        was = self.training
        self.eval()
        with torch.no_grad():
            feats, raw = outputs(self.user_module(self.prep(torch.zeros(2, *shape))), 2)
        self.train(was)
        self.width = int(feats.shape[1])
        self.raw_width = None if raw is None else int(as_map(raw).shape[1])

    def prep(self, x):
        return x.expand(-1, 3, -1, -1) if self.grey_to_rgb else x

    def forward(self, x):
        return outputs(self.user_module(self.prep(x)), x.shape[0])[0]

    def gate(self, x):
        """GATE's encoder outputs (gate_outputs) for GATE's adapters."""
        try:
            return gate_outputs(self.user_module(self.prep(x)), x.shape[0])
        except ValueError as e:
            raise SystemExit("encoder %s: %s" % (self.arch, e))

    def trunk(self, x):
        _, raw = outputs(self.user_module(self.prep(x)), x.shape[0])
        if raw is None:
            raise SystemExit("this encoder's forward gives no raw_features; dense heads (segmentation) need them: return a dict with features and raw_features")
        return as_map(raw)


def drop_class_token(t):
    """Tokens [B, T, D] less a leading class token (T = 1 + n*n), as
    as_map lays them out; others as they are."""
    if t.dim() == 3:
        n = t.shape[1]
        if math.isqrt(n) ** 2 != n and math.isqrt(n - 1) ** 2 == n - 1:
            return t[:, 1:]
    return t


def gate_outputs(out, batch):
    """GATE's encoder outputs of what the module's forward returned:
    features as given; raw_features as tokens [B, T, D] (a map laid out
    row-major as a sequence, a leading class token dropped); per-layer
    raw features as given (tokens less a class token, or maps), else the
    raw features alone (as the map where they are one)."""
    feats, raw = outputs(out, batch)
    per = out.get("per_layer_raw_features") if isinstance(out, dict) else None
    if per is not None:
        if isinstance(per, torch.Tensor) or not all(isinstance(t, torch.Tensor) and t.dim() in (3, 4) and t.shape[0] == batch for t in per) or not per:
            raise ValueError("per_layer_raw_features must be a list of tokens [%d, T, D] or maps [%d, C, h, w]" % (batch, batch))
        per = [drop_class_token(t) for t in per]
    elif raw is not None:
        per = [drop_class_token(raw)]
    if raw is not None:
        raw = raw.flatten(2).transpose(1, 2) if raw.dim() == 4 else drop_class_token(raw)
    return {"features": feats, "raw_features": raw, "per_layer_raw_features": per}


def error_line(e, path):
    """The error's type and message, and the line of the user's file it came from."""
    where = ""
    for frame in reversed(traceback.extract_tb(e.__traceback__)):
        if os.path.abspath(frame.filename) == os.path.abspath(path):
            where = " (%s:%d)" % (frame.filename, frame.lineno)
            break
    return "%s: %s%s" % (type(e).__name__, e, where)


def check(req):
    """Builds the encoder and runs a fake batch of req["shape"]; returns
    what gatepipe's plan reports."""
    path, _ = split(req["arch"])
    try:
        m = load(req["arch"], req.get("args"))
        shape = list(req["shape"])
        if shape[0] == 1 and getattr(m, "in_channels", 3) != 1:
            shape[0] = 3
        m.eval()
        with torch.no_grad():
            feats, raw = outputs(m(torch.zeros(2, *shape)), 2)
        out = {"width": int(feats.shape[1])}
        if raw is not None:
            out["raw"] = list(as_map(raw).shape[1:])
        return out
    except BaseException as e:  # SystemExit from the user's code too
        return {"error": error_line(e, path)}


if __name__ == "__main__":
    print(json.dumps(check(json.loads(sys.argv[1]))))
