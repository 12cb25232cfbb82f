"""GATE's defects, reproduced under protocol "table3" and mended under
"gate" (SPEC §5.9)."""
import unittest

from torch import nn

from gatepipe_worker.defects import d1_steps
from gatepipe_worker.train import optimizer

SCHEDULE = list(range(0, 10001, 250))  # GATE's: validation every 250 of 10,000 steps, step 0 included


class D1Test(unittest.TestCase):
    def test_gates_ensemble_is_the_last_three_or_step_zero(self):
        # What the paper's Table 3 used (gate_protocol.md D1).
        self.assertEqual(d1_steps(SCHEDULE, True, 3), [10000, 9750, 9500])
        self.assertEqual(d1_steps(SCHEDULE, False, 3), [0, 5250, 5000])

    def test_the_choice_ignores_the_scores(self):
        # The set's order of these steps is the same whatever order the
        # argsort of the metric inserts them in.
        shuffled = SCHEDULE[::-1][::2] + SCHEDULE[::-1][1::2]
        self.assertEqual(d1_steps(shuffled, True, 3), d1_steps(SCHEDULE, True, 3))


class D2Test(unittest.TestCase):
    def net(self):
        m = nn.Module()
        m.encoder = nn.Sequential(nn.Linear(4, 4), nn.LayerNorm(4))
        return m

    def test_table3_decays_nothing_and_gate_decays_weights_only(self):
        m = self.net()
        rec = {"lr": 1e-3, "weight_decay": 0.0}
        table3 = {"optimizer": {"betas": [0.9, 0.98], "eps": 1e-6, "weight_decay": 0}}
        opt = optimizer(m, list(m.parameters()), "classification", rec, table3)
        self.assertEqual([g["weight_decay"] for g in opt.param_groups], [0.0])
        gate = {"optimizer": {"betas": [0.9, 0.98], "eps": 1e-6, "weight_decay": 0.01, "no_decay": ["bias", "norm"]}}
        opt = optimizer(m, list(m.parameters()), "classification", dict(rec, weight_decay=0.01), gate)
        decayed = [p for g in opt.param_groups if g["weight_decay"] > 0 for p in g["params"]]
        self.assertEqual(len(decayed), 1)
        self.assertIs(decayed[0], m.encoder[0].weight)


if __name__ == "__main__":
    unittest.main()


class D7Test(unittest.TestCase):
    def test_video_frames_unnormalised_under_table3(self):
        import torch
        from gatepipe_worker.storage import Inputs

        class Store:
            meta = {"normalize": {"scale": 1 / 255, "mean": [0.5, 0.5, 0.5], "std": [0.25, 0.25, 0.25]}}
            shape = [2, 3, 4, 4]
        x = torch.full((1, 2, 3, 4, 4), 255, dtype=torch.uint8)
        normalised = Inputs(Store(), None, torch.device("cpu"))(x)
        raw = Inputs(Store(), None, torch.device("cpu"), normalize=False)(x)
        self.assertTrue(torch.allclose(normalised, torch.full_like(normalised, 2.0)))
        self.assertTrue(torch.allclose(raw, torch.ones_like(raw)))
