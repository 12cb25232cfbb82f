import json
import os
import sys
import time

import torch

# ---- the run ----------------------------------------------------------------


class Run:
    """What every job shares: the experiment, the device, the log."""

    def __init__(self, exp_path):
        with open(exp_path) as f:
            self.exp = json.load(f)
        if self.exp.get("protocol") != "gatepipe-trainer/1":
            raise SystemExit("%s: protocol %r, not gatepipe-trainer/1" % (exp_path, self.exp.get("protocol")))
        self.cfg = self.exp["config"]
        self.log_path = os.path.join(os.path.dirname(exp_path), "log.jsonl")
        dev = self.exp["devices"]
        self.cpus = max(int(dev.get("cpus") or 1), 1)
        torch.set_num_threads(self.cpus)
        self.cuda = dev.get("device") == "cuda"
        if self.cuda and not torch.cuda.is_available():
            raise SystemExit("gatepipe assigned GPUs %s, but torch %s in %s sees no CUDA device" % (dev.get("gpus"), torch.__version__, sys.executable))
        self.device = torch.device("cuda" if self.cuda else "cpu")
        self.precision = self.cfg.get("precision") or "auto"
        if self.precision == "auto":
            self.precision = "bf16" if self.cuda and torch.cuda.is_bf16_supported() else "fp32"
        self.deterministic = bool(self.cfg.get("deterministic"))
        if self.deterministic:
            # The same bits on every run (resume included) on a GPU too:
            # cuBLAS's fixed workspace (read when its handle is made, after
            # this), deterministic kernels (a warning where an op has none),
            # no autotuning.
            os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
            torch.use_deterministic_algorithms(True, warn_only=True)
        if self.cuda:
            torch.backends.cuda.matmul.allow_tf32 = self.precision == "tf32"
            torch.backends.cudnn.allow_tf32 = self.precision == "tf32"
            torch.backends.cudnn.benchmark = not self.deterministic
            torch.backends.cudnn.deterministic = self.deterministic
        self.last = 0.0

    def autocast(self):
        if self.precision in ("bf16", "fp16"):
            dtype = torch.bfloat16 if self.precision == "bf16" else torch.float16
            return torch.autocast(device_type=self.device.type, dtype=dtype)
        return torch.autocast(device_type=self.device.type, enabled=False)

    def log(self, entry):
        """Appends a line to log.jsonl (gatepipe streams step/total as progress)."""
        self.last = time.time()
        with open(self.log_path, "a") as f:
            f.write(json.dumps(entry) + "\n")

    def warn(self, msg):
        """A warning gatepipe logs for the node."""
        self.log({"warning": msg})

    def progress(self, step, total, force=False, **fields):
        now = time.time()
        if not force and now - self.last < 0.5:
            return
        self.last = now
        fields.update(step=step, total=total)
        with open(self.log_path, "a") as f:
            f.write(json.dumps(fields) + "\n")
