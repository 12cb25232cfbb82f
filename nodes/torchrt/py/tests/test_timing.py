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
    def test_a_jpeg_stores_decoding_is_timed(self):
        with tempfile.TemporaryDirectory() as d:
            timing.job_timing(FakeRun({"encoder": SPEC, "shape": [3, 16, 16], "batch": 2, "work": d, "jpeg": {"quality": 90, "shape": [3, 64, 48]}}))
            with open(os.path.join(d, "timing.json")) as f:
                out = json.load(f)
        self.assertGreater(out["decode"], 0)
        self.assertLess(out["decode"], 0.05)  # a 64 x 48 JPEG
        with tempfile.TemporaryDirectory() as d:
            timing.job_timing(FakeRun({"encoder": SPEC, "shape": [3, 16, 16], "batch": 2, "work": d}))
            with open(os.path.join(d, "timing.json")) as f:
                self.assertEqual(json.load(f)["decode"], 0)

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

    def test_the_cards_augmentation_is_timed(self):
        calls = []
        real = timing.augmentation

        def spy(card, task, shape):
            aug = real(card, task, shape)
            if aug is None:
                return None

            def counted(x, y, it):
                calls.append((task, x.dtype))
                return aug(x, y, it)
            return counted
        timing.augmentation = spy
        try:
            cls = {"name": "table3", "adapter": "classification", "stem": "instance_norm", "loss": "cross_entropy",
                   "augmentation": "rand-m9-n3-mstd0.5-inc1", "head": {"name": "linear", "projection": 8}}
            self.run_job(task="classification", protocol=cls)
            self.run_job(task="segmentation", protocol=dict(SEG, augmentation="random crop, horizontal flip, photometric distortion"))
            self.run_job(task="segmentation", protocol=SEG)  # no augmentation on its card
        finally:
            timing.augmentation = real
        self.assertEqual({c for c in calls}, {("classification", torch.uint8), ("segmentation", torch.uint8)})
        self.assertGreaterEqual(len(calls), 6)  # every timed step of both

    def test_text_families_time_the_text_tower(self):
        text = {"width": 8, "layers": 1, "heads": 2, "pretrained": False}
        for task, adapter in (("relational", "relational"), ("retrieval", "retrieval")):
            card = {"name": "table3", "adapter": adapter, "stem": "instance_norm", "text_encoder": "openai/clip-vit-base-patch16",
                    "text": text, "loss": "cross_entropy" if task == "relational" else "contrastive",
                    "head": {"name": "relational_transformer" if task == "relational" else "duo_modal", "blocks": 1, "width": 8, "heads": 2, "projection": 8}}
            built = []
            real = timing.TaskModel

            def spy(t, *a, **kw):
                built.append((t, kw.get("text") is not None, kw.get("qlen")))
                return real(t, *a, **kw)
            timing.TaskModel = spy
            try:
                with tempfile.TemporaryDirectory() as d:
                    timing.job_timing(FakeRun({"encoder": SPEC, "shape": [3, 16, 16], "batch": 2, "work": d, "task": task, "protocol": card}))
            finally:
                timing.TaskModel = real
            self.assertEqual(built, [(task, True, 77)])

    def test_video_families_time_the_clip(self):
        for task, loss in (("video", "cross_entropy"), ("video_regression", "l1")):
            card = {"name": "table3", "adapter": task, "stem": "instance_norm", "loss": loss,
                    "augmentation": "resize 448, random crop 224, flip, rot90, brightness/contrast, gaussian noise 0.1",
                    "head": {"name": "temporal_transformer", "blocks": 1, "width": 8, "heads": 2, "projection": 8}}
            built, real = [], timing.TaskModel

            def spy(t, spec, shape, *a, **kw):
                built.append((t, list(shape), kw.get("protocol") is not None))
                return real(t, spec, shape, *a, **kw)
            timing.TaskModel = spy
            try:
                with tempfile.TemporaryDirectory() as d:
                    timing.job_timing(FakeRun({"encoder": SPEC, "shape": [3, 16, 16], "batch": 2, "work": d,
                                               "task": task, "protocol": card, "frames": 3}))
                    with open(os.path.join(d, "timing.json")) as f:
                        out = json.load(f)
            finally:
                timing.TaskModel = real
            self.assertEqual(built, [(task, [3, 3, 16, 16], True)])
            self.assertEqual(out["batch"] % 3, 0)  # frames, as plan counts them
        # Without its frames (an unknown shape) the classification head is timed.
        self.assertEqual(self.run_job(task="video", protocol=dict(card, adapter="video")), [("classification", False)])

    def test_other_families_time_the_classification_head(self):
        self.assertEqual(self.run_job(task="fewshot", protocol=dict(SEG, adapter="fewshot")), [("classification", False)])
        self.assertEqual(self.run_job(), [("classification", False)])


if __name__ == "__main__":
    unittest.main()
