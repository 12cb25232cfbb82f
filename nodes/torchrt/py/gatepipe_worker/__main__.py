"""Runs the job experiment.json names: python -m gatepipe_worker, with
$GATEPIPE_EXPERIMENT naming experiment.json (gatepipe starts it)."""
import importlib
import os
import sys

try:
    for _name in ("numpy", "torch"):
        importlib.import_module(_name)
except ImportError as e:
    raise SystemExit("%s cannot import torch (%s): install PyTorch for it (Debian: apt-get install python3-torch; "
                     "else pip install torch), or point python (the block's, the gatepipe block's) or GATEPIPE_PYTHON at an interpreter that has it"
                     % (sys.executable, e))

from . import episodes, features, probe, timing, train
from .run import Run

# JOBS maps config.job to the function that runs it.
JOBS = {"features": features.job_features, "probe": probe.job_probe, "episodes": episodes.job_episodes, "train": train.job_train,
        "timing": timing.job_timing}


def main():
    path = os.environ.get("GATEPIPE_EXPERIMENT")
    if not path:
        raise SystemExit("GATEPIPE_EXPERIMENT is not set: gatepipe starts this worker")
    run = Run(path)
    job = JOBS.get(run.cfg.get("job"))
    if job is None:
        raise SystemExit("job %r is not one of %s" % (run.cfg.get("job"), ", ".join(sorted(JOBS))))
    try:
        job(run)
    except RuntimeError as e:
        if "out of memory" in str(e):
            raise SystemExit("%s out of memory in job %s (%s): lower batch_size"
                             % ("CUDA" if run.cuda else "CPU", run.cfg.get("job"), str(e).split("\n")[0][:200]))
        raise


if __name__ == "__main__":
    main()
