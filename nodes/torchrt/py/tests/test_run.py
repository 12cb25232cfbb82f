"""run.Run: the settings a job's config asks of torch."""
import json
import os
import tempfile
import unittest

import torch

from gatepipe_worker.run import Run


def make_run(config):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "experiment.json")
        with open(path, "w") as f:
            json.dump({"protocol": "gatepipe-trainer/1", "config": config, "devices": {"cpus": 1}}, f)
        return Run(path)


class RunTest(unittest.TestCase):
    def tearDown(self):
        torch.use_deterministic_algorithms(False)

    def test_deterministic_asks_for_repeatable_kernels(self):
        saved = os.environ.pop("CUBLAS_WORKSPACE_CONFIG", None)
        try:
            r = make_run({"job": "train", "deterministic": True})
            self.assertTrue(r.deterministic)
            self.assertTrue(torch.are_deterministic_algorithms_enabled())
            self.assertEqual(os.environ.get("CUBLAS_WORKSPACE_CONFIG"), ":4096:8")
        finally:
            os.environ.pop("CUBLAS_WORKSPACE_CONFIG", None)
            if saved is not None:
                os.environ["CUBLAS_WORKSPACE_CONFIG"] = saved

    def test_default_leaves_kernels_free(self):
        r = make_run({"job": "train"})
        self.assertFalse(r.deterministic)
        self.assertFalse(torch.are_deterministic_algorithms_enabled())
        self.assertEqual(r.precision, "fp32")  # auto on CPU


if __name__ == "__main__":
    unittest.main()
