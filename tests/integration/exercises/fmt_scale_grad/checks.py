"""fmt_scale_grad, trusted side: inputs, float64 reference (forward and gradients), no diagnoses."""
import numpy as np


def make_inputs(case, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((case.rows, case.cols)).astype(np.float32)
    w = rng.uniform(0.5, 2.0, case.cols).astype(np.float32)
    dy = rng.standard_normal((case.rows, case.cols)).astype(np.float32)
    return {"x": x, "w": w, "acc": np.zeros((case.rows, case.cols), np.float32), "dy": dy}


def reference(x, w, acc, dy):
    return {"y": x * w, "dx": dy * w, "dw": (dy * x).sum(axis=0)}


def diagnose(evidence):
    return []
