"""GATE's code's defects that protocol "table3" reproduces (SPEC §5.9):
the checkpoints its "top-k" ensemble took (D1) and the parameters its
weight decay was meant for (D2, which "gate" mends). D7 (unnormalised
video frames) is storage.Inputs(normalize=False)."""


def d1_steps(steps, higher_is_better, k):
    """The validation steps GATE's ensemble of k took
    (gate/orchestration/evaluators/__init__.py,
    get_best_model_global_step_and_metric, and gate/boilerplate/core.py,
    load_best_model with kth_best=10): the steps, put in a set, listed in
    the set's order; the first 10, sorted descending for a higher-is-better
    metric; then the first k. The set's order of small integers does not
    depend on the metric (it is CPython's hash order), so neither does the
    choice: the last three steps for higher-is-better selection, step 0
    and two mid-run steps for lower-is-better on GATE's schedule."""
    order = list(set(steps))
    first = order[:10]
    if higher_is_better:
        first = sorted(first, reverse=True)
    return first[:k]


def no_decay(name, param):
    """Whether GATE's intended weight decay skips a parameter: biases and
    normalisation weights (gate/boilerplate/convenience.py
    get_parameter_names excludes LayerNorm and bias)."""
    return name.endswith(".bias") or "norm" in name or param.dim() <= 1
