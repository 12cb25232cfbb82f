"""The worker's validation and probe metrics on hand-checked cases."""
import unittest

import torch

from gatepipe_worker.probe import metric_accuracy, metric_map11, metric_mean_per_class, metric_roc_auc
from gatepipe_worker.train import val_metrics


class Targets:
    def __init__(self, y):
        self.y = y

    def labels(self, idx):
        return self.y[idx]


class ProbeMetricsTest(unittest.TestCase):
    scores = torch.tensor([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.3, 0.7]])
    y = torch.tensor([0, 1, 1, 1])

    def test_accuracy(self):
        self.assertAlmostEqual(metric_accuracy(self.scores, self.y, 2), 75.0)

    def test_mean_per_class(self):
        # class 0: 1/1, class 1: 2/3
        self.assertAlmostEqual(metric_mean_per_class(self.scores, self.y, 2), 100 * (1 + 2 / 3) / 2)

    def test_roc_auc(self):
        # Positives (class 1) score 0.8, 0.4, 0.7 against the negative's 0.1.
        self.assertAlmostEqual(metric_roc_auc(self.scores, self.y, 2), 100.0)
        flipped = torch.tensor([0, 1, 1, 0])
        # positives 0.8, 0.4 vs negatives 0.1, 0.7: 3 of 4 pairs ordered.
        self.assertAlmostEqual(metric_roc_auc(self.scores, flipped, 2), 75.0)

    def test_map11_perfect(self):
        scores = torch.eye(3)
        self.assertAlmostEqual(metric_map11(scores, torch.tensor([0, 1, 2]), 3), 100.0)


class SegmentationTest(unittest.TestCase):
    def test_mean_acc_averages_over_classes_in_the_truth(self):
        # Truth [0, 0], prediction [0, 1]: class 0 half right, class 1 absent
        # from the truth; mIoU averages classes in truth or prediction.
        best = torch.tensor([[0, 1]])
        ptrue = torch.tensor([[0.9, 0.4]])
        m = val_metrics("segmentation", (best, ptrue), Targets(torch.tensor([[0, 0]])), 2)
        self.assertAlmostEqual(m["mean_acc"], 50.0)
        self.assertAlmostEqual(m["miou"], 25.0)
        self.assertAlmostEqual(m["overall_acc"], 50.0)

    def test_confusion_is_summed_over_blocks_of_masks(self):
        # 130 masks: more than one block of 64.
        g = torch.Generator().manual_seed(3)
        y = torch.randint(0, 3, (130, 4), generator=g)
        best = torch.randint(0, 3, (130, 4), generator=g, dtype=torch.int32)
        ptrue = torch.full((130, 4), 0.5)
        m = val_metrics("segmentation", (best, ptrue), Targets(y), 3)
        self.assertAlmostEqual(m["overall_acc"], 100 * (best.long() == y).double().mean().item())


class RegressionTest(unittest.TestCase):
    def test_mae_and_mse(self):
        m = val_metrics("regression", torch.tensor([1.0, 4.0]), Targets(torch.tensor([2.0, 2.0])), 0)
        self.assertAlmostEqual(m["mae"], 1.5)
        self.assertAlmostEqual(m["mse"], 2.5)


if __name__ == "__main__":
    unittest.main()
