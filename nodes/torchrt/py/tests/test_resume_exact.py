"""A resumed training goes on as the uninterrupted one: with dropout
(BERT's patch root, 0.1) and the card's RandAugment, a run stopped after
its first checkpoint and resumed logs the same losses and predicts the
same as one that ran through (torch's generators are in the checkpoint;
the augmentation draws by iteration)."""
import json
import os
import tempfile
import unittest

import torch

from gatepipe_worker import patchroot, train
from gatepipe_worker.run import Run
from gatepipe_worker.storage import SafeTensors, write_safetensors
from tests.test_patchroot import BERT, hub_tensors, randomised, small, small_configs

ITERATIONS = 6


class Stop(Exception):
    pass


class ResumeExactTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        d = self.dir.name
        torch.manual_seed(1)
        rows, batch, shape = 6, 3, [3, 8, 8]
        self.store = os.path.join(d, "store")
        os.makedirs(self.store)
        with open(os.path.join(self.store, "meta.json"), "w") as f:
            json.dump({"shape": shape, "normalize": {"scale": 1 / 255, "mean": [0.5] * 3, "std": [0.25] * 3}}, f)
        for split in ("train", "val", "test"):
            write_safetensors(os.path.join(self.store, split + ".safetensors"),
                              {"x": torch.randint(0, 256, (rows, *shape), dtype=torch.uint8), "y": torch.arange(rows) % 3})
        self.draws = os.path.join(d, "draws.safetensors")
        write_safetensors(self.draws, {"batches": torch.stack([torch.randperm(rows)[:batch] for _ in range(ITERATIONS)])})
        self.hub = os.path.join(d, "model.safetensors")
        with small_configs():
            write_safetensors(self.hub, hub_tensors(randomised(patchroot.PatchRootEncoder(BERT, shape, small(BERT)), seed=2)))

    def tearDown(self):
        self.dir.cleanup()

    def run_job(self, tag, resume):
        work = os.path.join(self.dir.name, "work-" + tag)
        os.makedirs(work)
        card = {"adapter": "classification", "head": {"name": "linear", "projection": 16}, "stem": "instance_norm",
                "loss": "cross_entropy", "augmentation": "rand-m9-n3-mstd0.5-inc1"}
        cfg = {"job": "train", "task": "classification", "encoder": {"arch": "patchroot:" + BERT}, "weights": None,
               "library_weights": self.hub, "store": self.store, "preprocess": None, "outputs": 3, "draws": self.draws,
               "work": work, "protocol": card, "checkpoint_every": 2,
               "recipe": {"lr": 1e-3, "weight_decay": 0.0, "iterations": ITERATIONS, "validate_every": 1, "top_k": 1,
                          "plateau_threshold": 1e-4, "plateau_patience": 3, "plateau_factor": 0.5, "seed": 0}}
        path = os.path.join(work, "experiment.json")
        with open(path, "w") as f:
            json.dump({"protocol": "gatepipe-trainer/1", "config": cfg, "devices": {"cpus": 1}, "resume_dir": resume, "action": "a"}, f)
        with small_configs():
            train.job_train(Run(path))
        losses = [(e["iteration"], e["loss"]) for e in map(json.loads, open(os.path.join(work, "log.jsonl"))) if "loss" in e]
        return losses, SafeTensors(os.path.join(work, "pred.safetensors")).tensor("pred").clone()

    def test_resumed_equals_uninterrupted(self):
        through = self.run_job("through", "")
        resume = os.path.join(self.dir.name, "resume")
        os.makedirs(resume)
        save = train.TrainState.save

        def save_then_stop(state, *a, **kw):
            save(state, *a, **kw)
            raise Stop()
        train.TrainState.save = save_then_stop
        try:
            with self.assertRaises(Stop):
                self.run_job("stopped", resume)
        finally:
            train.TrainState.save = save
        resumed = self.run_job("resumed", resume)
        self.assertEqual(resumed[0], through[0])
        self.assertTrue(torch.equal(resumed[1], through[1]))


if __name__ == "__main__":
    unittest.main()
