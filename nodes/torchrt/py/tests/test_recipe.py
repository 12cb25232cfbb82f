"""GATE's recipe in the worker: AdamW's betas and eps, the segmentation
decoder's learning-rate multiple, and the plateau on the training loss."""
import types
import unittest
import warnings

from torch import nn

from gatepipe_worker.train import Plateau, fp16_scaler, optimizer, set_lr

GATE = {"optimizer": {"betas": [0.9, 0.98], "eps": 1e-6}, "decoder_lr_multiplier": 10,
        "schedule": {"on": "train_loss", "factor": 0.5, "patience": 2, "threshold": 1e-4}}
REC = {"lr": 1e-3, "weight_decay": 0.0, "plateau_factor": 0.5, "plateau_patience": 3, "plateau_threshold": 1e-4}


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(2, 2)
        self.head = nn.Module()
        self.head.decoder = nn.Linear(2, 2)


class RecipeTest(unittest.TestCase):
    def test_decoder_group_and_gate_betas(self):
        m = Net()
        opt = optimizer(m, list(m.parameters()), "segmentation", REC, GATE)
        set_lr(opt, 1e-5)
        groups = {len(g["params"]): g for g in opt.param_groups}
        self.assertEqual(len(opt.param_groups), 2)
        self.assertAlmostEqual(opt.param_groups[0]["lr"], 1e-5)
        self.assertAlmostEqual(opt.param_groups[1]["lr"], 1e-4)
        self.assertIs(opt.param_groups[1]["params"][0], m.head.decoder.weight)
        self.assertEqual(groups[2]["betas"], (0.9, 0.98))
        self.assertEqual(groups[2]["eps"], 1e-6)

    def test_defaults_without_a_card(self):
        m = Net()
        opt = optimizer(m, list(m.parameters()), "segmentation", REC, None)
        self.assertEqual(len(opt.param_groups), 1)
        self.assertEqual(opt.param_groups[0]["betas"], (0.9, 0.999))
        self.assertFalse(Plateau(REC, None).per_step)

    def test_plateau_on_the_training_loss(self):
        p = Plateau(REC, GATE)
        self.assertTrue(p.per_step)
        lr, best, bad = 1.0, float("inf"), 0
        for v in [1.0, 1.0, 1.0, 1.0]:  # patience 2: the third miss halves
            lr, best, bad = p.step(v, lr, best, bad)
        self.assertEqual((lr, best, bad), (0.5, 1.0, 0))
        lr, best, bad = p.step(0.5, lr, best, bad)
        self.assertEqual((lr, best, bad), (0.5, 0.5, 0))



class FP16Test(unittest.TestCase):
    def test_acdc_fp16_only_on_a_gpu_where_gatepipe_chose(self):
        # (card's precision, the run's device, the precision the user set) -> fp16 with a scaler
        for gate, cuda, asked, want in [
            ({"precision": "fp16"}, True, None, True),
            ({"precision": "fp16"}, True, "auto", True),
            ({"precision": "fp16"}, True, "fp32", False),  # the user's precision wins
            ({"precision": "fp16"}, False, None, False),  # CPU autocast has no float16
            ({"precision": "bf16"}, True, None, False),
            (None, True, None, False),
        ]:
            run = types.SimpleNamespace(cuda=cuda, cfg={"precision": asked} if asked else {}, precision="bf16" if cuda else "fp32")
            before = run.precision
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # GradScaler on a machine without CUDA
                got = fp16_scaler(run, gate)
            self.assertEqual(got is not None, want, (gate, cuda, asked))
            self.assertEqual(run.precision, "fp16" if want else before, (gate, cuda, asked))


if __name__ == "__main__":
    unittest.main()
