"""Lesson 6 signatures, fed with outputs of the kernel's arithmetic simulated in numpy (float32),
one simulation per wrong fill: the diagnosis must name the bug that produced the numbers."""
from __future__ import annotations

import numpy as np
import pytest

from service.config import REPO_ROOT
from service.exercises import CaseSpec, DataSpec, ExerciseCatalog
from service.exercises.kit import CaseEvidence, draw_rows

EXERCISE = ExerciseCatalog(REPO_ROOT / "exercises").get("lesson06_mean_var")


def kernel(x: np.ndarray, fill, *, mean_divisor=None, var_divisor=None) -> dict[str, np.ndarray]:
    """What mean_var_kernel computes, lane by lane, with `fill(cols, values, N, BLOCK)` in the blank."""
    rows, n = x.shape
    block = 1 << max(0, int(np.ceil(np.log2(n))))
    cols = np.arange(block)
    values = np.zeros((rows, block), np.float32)
    values[:, :n] = x
    mean = values.sum(axis=1, dtype=np.float32) / np.float32(mean_divisor(n, block) if mean_divisor else n)
    diff = values - mean[:, None]
    centered_sq = np.where(fill(cols, values, n, block), diff * diff, np.float32(0.0))
    var = centered_sq.sum(axis=1, dtype=np.float32) / np.float32(var_divisor(n, block) if var_divisor else n)
    return {"mean": mean.astype(np.float32), "var": var.astype(np.float32)}


def evidence_for(case: CaseSpec, **bug) -> CaseEvidence:
    x = draw_rows(case, 1234)
    observed = kernel(x, **bug)
    expected = EXERCISE.checks.reference(x.astype(np.float64))
    passed = all(np.allclose(observed[k], expected[k], atol=2e-4, rtol=2e-4) for k in expected)
    return CaseEvidence(case, x.astype(np.float64), observed, expected, passed)


def case(cols: int, **data) -> CaseSpec:
    return CaseSpec(id=f"t.n{cols}", kind="probe", rows=6, cols=cols, seed=cols, description="t", targets="t",
                    data=DataSpec(**({"loc": (-20.0, 20.0), "scale": (0.5, 2.0)} | data)))


def ids(*evidence: CaseEvidence) -> set[str]:
    return {d.id for d in EXERCISE.diagnose(list(evidence))}


def test_correct_fill_gives_no_diagnosis():
    ev = evidence_for(case(33), fill=lambda c, v, n, b: c < n)
    assert ev.passed and ids(ev) == set()


@pytest.mark.parametrize("fill", [lambda c, v, n, b: np.ones_like(c, bool), lambda c, v, n, b: c < b])
def test_missing_remask_matches_block_minus_n_mean_squared(fill):
    ev = evidence_for(case(33, loc=(300.0, 600.0), scale=(0.1, 0.3)), fill=fill)
    (diagnosis,) = EXERCISE.diagnose([ev])
    assert diagnosis.id == "missing_remask"
    found = diagnosis.evidence["cases"][0]
    assert found["predicted_excess"] == pytest.approx(found["excess"], rel=1e-3)
    assert "(BLOCK−N)·mean²/N" in diagnosis.message and "tl.where" in diagnosis.message
    (english,) = EXERCISE.diagnose([ev], language="en")
    assert english.evidence == diagnosis.evidence and english.message == diagnosis.evidence["messages"]["en"]
    assert english.message.startswith("On t.n33 the variance is too large")
    assert "tl.where(mask, …, 0.0)" in english.message


def test_off_by_one():
    assert ids(evidence_for(case(33), fill=lambda c, v, n, b: c <= n)) == {"off_by_one_le"}


def test_drops_last_lane():
    assert ids(evidence_for(case(33), fill=lambda c, v, n, b: c < n - 1)) == {"drops_last_lane"}


def test_hardcoded_width_needs_two_widths():
    fill = lambda c, v, n, b: c < 17  # noqa: E731
    assert ids(evidence_for(case(33), fill=fill), evidence_for(case(20), fill=fill)) == {"hardcoded_width"}


def test_value_based_mask_on_exact_zeros():
    ev = evidence_for(case(128, loc=(2.0, 5.0), zeros_fraction=0.25), fill=lambda c, v, n, b: v != 0)
    (diagnosis,) = EXERCISE.diagnose([ev])
    assert diagnosis.id == "value_based_mask" and "values != 0" in diagnosis.message


def test_divide_by_block_and_bessel():
    ragged = case(33)
    block = evidence_for(ragged, fill=lambda c, v, n, b: c < n, mean_divisor=lambda n, b: b)
    bessel = evidence_for(ragged, fill=lambda c, v, n, b: c < n, var_divisor=lambda n, b: n - 1)
    assert ids(block) == {"divide_by_block"}
    assert ids(bessel) == {"bessel"}
