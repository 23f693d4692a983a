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


# Seventh third-party batch (lsum7.wrong.bf16_loads): every value rounded to bfloat16 at the load, summed in
# float32. On boundary.t_one (T = 1) that gives the numbers of a bfloat16 accumulator, and the report said
# "exactly as an accumulator in bfloat16 predicts ... keep the accumulator in float32" of a float32 accumulator,
# while every longer row, which such an accumulator would have rounded too, failed otherwise.


def _bf16_loads(x: np.ndarray, b1: int) -> np.ndarray:
    x16 = checks._to_bfloat16(x.astype(np.float32)).astype(np.float32)
    acc = np.zeros(x.shape[0], dtype=np.float32)
    for start in range(0, x.shape[1], b1):
        acc = acc + x16[:, start:start + b1].sum(axis=1, dtype=np.float32)
    return acc.astype(np.float64)


def test_a_mistake_that_another_failed_case_contradicts_is_not_named():
    evidence = _evidence(_bf16_loads)
    failed = {e.case.id for e in evidence if not e.passed}
    assert "boundary.t_one" in failed and len(failed) > 1, failed
    found = _ids(_bf16_loads)
    assert "half_precision_accumulator" not in found, found
    assert "boundary.t_one" in found["unexplained_sum"], found


def test_a_bfloat16_accumulator_is_still_named_with_its_own_bit_count():
    findings = checks.diagnose(_evidence(lambda x, b1: checks._half_accumulator(x, b1, "bfloat16")))
    half = next(f for f in findings if f.id == "half_precision_accumulator")
    assert len(half.cases) > 1, half.cases
    said = {lang: LONG_SUM.messages.render(half.message, lang) for lang in ("en", "zh")}
    assert "bfloat16 keeps 8 significant bits" in said["en"] and "11" not in said["en"].split("bits")[0], said["en"]
    assert "bfloat16 只有 8 位有效二进制位" in said["zh"], said["zh"]
    case = half.cases[0]  # the row shown is one the simulation gives exactly
    assert abs(case["observed"] - case["predicted"]) <= 1e-6 * (abs(case["predicted"]) + 1.0), case
