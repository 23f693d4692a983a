"""Long Sum's diagnoses against the cases that passed (sixth third-party batch): `range(0, T - 1, B1)`
loses the only block of T = 1 (boundary.t_one) and nothing else. Read alone, that case matched "the
loop bound rounded down, T // B1" (dropped_tail) and "the loop stops one block early", and the report
said so, while boundary.t_short (T = 20 < B1 = 32), which either mistake sums to 0, had passed. A
mistake a passed case rules out is no longer named; the catalogue's own mistakes still are. The kernels
are replayed in numpy on each case's inputs."""
from __future__ import annotations

import numpy as np

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from service.exercises.kit import CaseEvidence

LONG_SUM = ExerciseCatalog(REPO_ROOT / "exercises").get("puzzle_long_sum")
checks = LONG_SUM.checks


def _evidence(kernel) -> list[CaseEvidence]:
    out = []
    for case in LONG_SUM.spec.cases:
        if case.kind == "given" or isinstance(case.params.get("T"), list) or getattr(case, "draw", None):
            continue
        x = checks.make_inputs(case, case.seed)["x"].astype(np.float64)
        b1 = int(case.kwargs.get("B1", 32))
        z = kernel(x, b1)
        expected = checks.reference(x)
        passed = bool(np.allclose(z, expected["z"], atol=1e-4, rtol=1e-4))
        out.append(CaseEvidence(case, x, {"z": z}, expected, passed, {"x": x}))
    return out


def _ids(kernel) -> dict[str, list[str]]:
    return {f.id: [c["case"] for c in f.cases] for f in checks.diagnose(_evidence(kernel))}


def _t_minus_one(x: np.ndarray, b1: int) -> np.ndarray:
    t = x.shape[1]
    return sum((x[:, s:s + b1].sum(axis=1) for s in range(0, t - 1, b1)), np.zeros(x.shape[0]))


def test_a_mistake_that_a_passed_case_rules_out_is_not_named():
    evidence = _evidence(_t_minus_one)
    assert {e.case.id for e in evidence if not e.passed} == {"boundary.t_one"}
    found = _ids(_t_minus_one)
    assert "dropped_tail" not in found and "loop_stops_early" not in found, found
    assert found == {"unexplained_sum": ["boundary.t_one"]}, found


def test_a_dropped_tail_is_still_named():
    found = _ids(lambda x, b1: x[:, :x.shape[1] // b1 * b1].sum(axis=1))
    assert "boundary.t_short" in found["dropped_tail"], found


def test_first_block_only_is_still_named():
    found = _ids(lambda x, b1: x[:, :b1].sum(axis=1))
    assert "first_block_only" in found, found


def test_a_mask_hoisted_out_of_the_loop_is_still_next_row_leak():
    # cols < T computed once for the first block: a one-block row (boundary.t_short) passes, and the last
    # block of a longer ragged row reads the next row's first elements (lsum5.wrong.col_mask_hoisted)
    def hoisted(x: np.ndarray, b1: int) -> np.ndarray:
        n0, t = x.shape
        flat = x.ravel()
        pad = -t % b1
        if t <= b1:
            return x.sum(axis=1)
        return np.array([flat[r * t: r * t + t + pad].sum() if (r + 1) * t + pad <= flat.size else np.nan
                         for r in range(n0)])

    evidence = _evidence(hoisted)
    assert any(e.passed and e.case.id == "boundary.t_short" for e in evidence)
    failed = {e.case.id for e in evidence if not e.passed}
    if not failed:  # every fixed case here has T a multiple of B1 or T <= B1: nothing to name
        return
    assert "next_row_leak" in _ids(hoisted), _ids(hoisted)
