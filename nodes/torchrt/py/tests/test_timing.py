"""timing: plan's timing job builds GATE's adapter for the image families
under a protocol card (the segmentation decoder's cost), the
classification head otherwise."""
import contextlib
import json
import os
import tempfile
import unittest

import torch

from gatepipe_worker import timing

SPEC = {"arch": "convnet", "channels": [4, 8], "hidden": []}
SEG = {"name": "table3", "adapter": "segmentation", "stem": "instance_norm", "loss": "focal_ce_ignore0",
       "head": {"name": "transformer_decoder", "blocks": 1, "width": 8, "heads": 2, "projection": 8, "blocks_applied": False}}


class FakeRun:
    cuda = False
    device = torch.device("cpu")
    precision = "fp32"

    def __init__(self, cfg):
        self.cfg = cfg

    def autocast(self):
        return contextlib.nullcontext()


class TimingTest(unittest.TestCase):
    def run_job(self, **extra):
        with tempfile.TemporaryDirectory() as d:
            cfg = dict({"encoder": SPEC, "shape": [3, 16, 16], "batch": 2, "work": d}, **extra)
            built = []
            real = timing.TaskModel

            def spy(task, *a, **kw):
                built.append((task, kw.get("protocol") is not None))
                return real(task, *a, **kw)
            timing.TaskModel = spy
            try:
                timing.job_timing(FakeRun(cfg))
            finally:
                timing.TaskModel = real
            with open(os.path.join(d, "timing.json")) as f:
                out = json.load(f)
        self.assertGreater(out["train"], 0)
        return built

    def test_gate_segmentation_decoder_is_timed(self):
        self.assertEqual(self.run_job(task="segmentation", protocol=SEG), [("segmentation", True)])

    def test_other_families_time_the_classification_head(self):
        self.assertEqual(self.run_job(task="fewshot", protocol=dict(SEG, adapter="fewshot")), [("classification", False)])
        self.assertEqual(self.run_job(), [("classification", False)])


if __name__ == "__main__":
    unittest.main()
