"""Lesson 7's "the row maximum was not subtracted" (sixth third-party batch): a kernel that shifts by the
largest magnitude, tl.max(tl.abs(x)), is right on rows near +500 (probe.large_logits passes) and gives
0/0 on rows near -150 (probe.very_negative). It was diagnosed no_max_underflow, "matches 'the row maximum
was not subtracted' element by element", which probe.large_logits contradicts: without any shift exp
overflows there. Such NaN now goes under nonfinite_output; a kernel that subtracts nothing is still named.
Each kernel is replayed in numpy float32 on each case's own inputs."""
from __future__ import annotations

import numpy as np

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from service.exercises.kit import CaseEvidence, draw_rows

LESSON7 = ExerciseCatalog(REPO_ROOT / "exercises").get("lesson07_softmax")
checks = LESSON7.checks


def _shift_max_abs(x: np.ndarray, block: int) -> np.ndarray:
    x32 = x.astype(np.float32)
    with np.errstate(all="ignore"):
        e = np.exp(x32 - np.abs(x32).max(axis=1, keepdims=True))
        return (e / e.sum(axis=1, keepdims=True, dtype=np.float32)).astype(np.float64)


def _evidence(kernel) -> list[CaseEvidence]:
    out = []
    for case in LESSON7.spec.cases:
        x = draw_rows(case, case.seed).astype(np.float64)
        observed = {"y": kernel(x, case.block)}
        expected = checks.reference(x)
        passed = bool(np.allclose(observed["y"], expected["y"], atol=1e-6, rtol=1e-5))
        out.append(CaseEvidence(case, x, observed, expected, passed, {"x": x}))
    return out


def _ids(kernel) -> dict[str, list[str]]:
    return {f.id: [c["case"] for c in f.cases] for f in checks.diagnose(_evidence(kernel))}


def test_a_shift_that_passes_large_logits_is_not_called_no_max():
    evidence = _evidence(_shift_max_abs)
    assert {e.case.id for e in evidence if not e.passed} == {"probe.very_negative"}
    found = _ids(_shift_max_abs)
    assert "no_max_underflow" not in found and "no_max_overflow" not in found, found
    assert found.get("nonfinite_output") == ["probe.very_negative"], found


def test_no_shift_at_all_is_still_no_max():
    found = _ids(lambda x, block: checks._replay(x, block, -np.inf, "zero"))
    assert "probe.large_logits" in found["no_max_overflow"], found
    assert "probe.very_negative" in found["no_max_underflow"], found
