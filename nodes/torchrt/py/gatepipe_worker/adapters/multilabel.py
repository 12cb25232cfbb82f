"""GATE's multi-label (medical) classification adapter,
"backbone-with-linear-multi-classifier" (GATE@65192ec
gate/models/task_adapters/multi_class_classification.py,
MultiClassBackboneWithLinear).

The same network as the classification adapter: stem -> encoder pooled
features -> bias-free projection to 768 -> nn.Linear(768, classes) with
bias. Loss: F.binary_cross_entropy_with_logits against the multi-hot
labels ("bce"). GATE applies the stem here only when an image is given,
which it always is.
"""
from .classification import LinearClassifier


class MultiLabelClassifier(LinearClassifier):
    """As LinearClassifier; the outputs are one logit per label."""
