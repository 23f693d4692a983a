"""Lesson 6, eighth third-party batch: a re-mask that changes with the row, as a CUDA port writes it
with the global element offset: `row * stride_m + cols < N` (row 0 alone keeps its lanes: var 0 on every
other row) and `row * stride_m + cols < (row + 1) * N` (right where stride = N; on a strided view row r
keeps N − r·(stride − N) lanes). Both were unexplained_variance; each row's own count of lanes names them
(row_dependent_mask). The kernels are replayed in numpy (float64) on the exercise's cases."""
from __future__ import annotations

import numpy as np

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from service.exercises.kit import CaseEvidence

LESSON6 = ExerciseCatalog(REPO_ROOT / "exercises").get("lesson06_mean_var")
checks = LESSON6.checks


def _ids(keep) -> dict[str, list[str]]:
    """keep(row, cols, n, stride) -> the lanes the re-mask keeps; the load's mask stays cols < N."""
    out = []
    for case in LESSON6.spec.cases:
        if case.kind == "given" or getattr(case, "draw", None):
            continue
        rng = np.random.default_rng(case.seed)
        x = rng.normal(0.0, 1.0, size=(case.rows, case.cols)) + rng.uniform(-3, 3, size=(case.rows, 1))
        n, block = case.cols, case.block
        stride = case.stride or n
        mean = x.mean(axis=1)
        cols = np.arange(block)
        values = np.zeros((case.rows, block))
        values[:, :n] = x
        var = np.array([np.where(keep(r, cols, n, stride), (values[r] - mean[r]) ** 2, 0.0).sum() / n
                        for r in range(case.rows)])
        expected = checks.reference(x)
        passed = bool(np.allclose(var, expected["var"], atol=2e-4, rtol=2e-4))
        out.append(CaseEvidence(case, x, {"mean": mean, "var": var}, expected, passed))
    return {f.id: [c["case"] for c in f.cases] for f in checks.diagnose(out)}


def test_a_global_offset_compared_with_n_is_a_row_dependent_mask():
    found = _ids(lambda r, cols, n, stride: r * stride + cols < n)
    assert list(found) == ["row_dependent_mask"], found


def test_a_row_end_assuming_stride_n_is_a_row_dependent_mask():
    found = _ids(lambda r, cols, n, stride: r * stride + cols < (r + 1) * n)
    assert set(found) == {"row_dependent_mask"} and "boundary.strided" in found["row_dependent_mask"], found


def test_the_missing_remask_is_still_named():
    found = _ids(lambda r, cols, n, stride: np.ones_like(cols, dtype=bool))
    assert "missing_remask" in found and "row_dependent_mask" not in found, found
