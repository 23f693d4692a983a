"""Lesson 7's padding value (third-party kernels, fifth batch): other=-1.0 was diagnosed "about -1" on
four cases and "filled with 0.0" on probe.very_negative, whose rows (about -170) underflow every valid
lane once a padding lane is the row's maximum, whatever its value: that output cannot tell 0 from -1,
so the second diagnosis was false. Such a case now goes under the value the other cases showed; a real
zero padding is still named. The kernel is replayed in numpy float32 on each case's own inputs."""
from __future__ import annotations

import numpy as np

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from service.exercises.kit import CaseEvidence, draw_rows

LESSON7 = ExerciseCatalog(REPO_ROOT / "exercises").get("lesson07_softmax")
checks = LESSON7.checks


def _evidence(pad: float) -> list[CaseEvidence]:
    out = []
    for case in LESSON7.spec.cases:
        x = draw_rows(case, case.seed).astype(np.float64)
        observed = {"y": checks._replay(x, case.block, pad, "max")}
        expected = checks.reference(x)
        passed = bool(np.allclose(observed["y"], expected["y"], atol=1e-6, rtol=1e-5))
        out.append(CaseEvidence(case, x, observed, expected, passed, {"x": x}))
    return out


def _ids(pad: float) -> dict[str, list[str]]:
    return {f.id: [c["case"] for c in f.cases] for f in checks.diagnose(_evidence(pad))}


def test_a_case_that_cannot_tell_the_padding_value_takes_the_value_the_others_showed():
    found = _ids(-1.0)
    assert "padding_zero" not in found, found
    assert "probe.very_negative" in found["padding_not_neg_inf"], found


def test_a_zero_padding_is_still_named():
    found = _ids(0.0)
    assert "padding_zero" in found and "padding_not_neg_inf" not in found, found
