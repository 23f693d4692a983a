"""Diagnoses only where their evidence holds (issue 15.5), on the trusted side with evidence shaped
as the sandbox returns it; the same cases through the real sandbox are in
tests/integration/test_drawn_shapes_and_diagnoses.py."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from service.exercises.kit import CaseEvidence
from service.grading.overwrite import changed_input, diagnosis

CATALOG = ExerciseCatalog(Path(REPO_ROOT / "exercises"))
LONG_SUM = CATALOG.get("puzzle_long_sum")
ROWS_TAIL = next(c for c in LONG_SUM.spec.cases if c.id == "probe.rows_tail")  # N0 = 9, B0 = 4
ALIGNED = next(c for c in LONG_SUM.spec.cases if c.id == "regular.aligned")  # N0 = 8, B0 = 4


def _failed(case, **evidence) -> CaseEvidence:
    x = LONG_SUM.make_inputs(case, 1)["x"].astype(np.float64)
    return CaseEvidence(case, x, None, {}, False, {"x": x}, **evidence)


def _buf(n0: int, b0: int, written_past_end: int = 0) -> np.ndarray:
    """The template's long_sum buffer after a call: z, then B0 sentinels (some overwritten)."""
    buf = np.concatenate([np.zeros(n0, np.float32), np.full(b0, -1234.5, np.float32)])
    buf[n0:n0 + written_past_end] = 7.25
    return buf


def test_an_error_without_out_of_bounds_evidence_is_no_out_of_bounds_diagnosis():
    for error in ("NameError: name 'not_defined_anywhere' is not defined", "AttributeError: ...",
                  "AssertionError: kernel 写到了 z 的范围之外（store 缺少行方向的 mask？）"):
        untouched = {"index": 1, "shape": [13], "dtype": "float32", "data": _buf(9, 4)}
        found = LONG_SUM.diagnose([_failed(ROWS_TAIL, error=error, allocations=[untouched])])
        assert "store_out_of_bounds" not in {d.id for d in found}, error


def test_the_sentinel_bytes_are_the_evidence():
    written = {"index": 1, "shape": [13], "dtype": "float32", "data": _buf(9, 4, written_past_end=3)}
    found = {d.id: d for d in LONG_SUM.diagnose([_failed(ROWS_TAIL, error="AssertionError", allocations=[written])])}
    d = found["store_out_of_bounds"]
    case = d.evidence["cases"][0]
    assert case["changed"] == 3 and case["first_past_end"] == 0 and case["value"] == 7.25 and case["source"] == "sentinel"
    assert "3 个元素被改写" in d.message and "rows < N0" in d.message
    assert "3 element(s)" in d.evidence["messages"]["en"] and "rows < N0" in d.evidence["messages"]["en"]


def test_one_row_per_program_signature():
    x = LONG_SUM.make_inputs(ALIGNED, 1)["x"].astype(np.float64)
    ref = x.sum(axis=1)
    z = np.full(8, np.nan)
    z[:2] = ref[:2]  # cdiv(8, 4) = 2 programs, each wrote row pid
    ev = CaseEvidence(ALIGNED, x, {"z": z.astype(np.float32)}, {"z": ref}, False, {"x": x})
    found = {d.id: d for d in LONG_SUM.diagnose([ev])}
    e = found["one_row_per_program"].evidence["cases"][0]
    assert (e["form"], e["rows_written"], e["rows_unwritten"], e["first_unwritten"]) == ("row = pid", 2, 6, 2)
    assert "B0" in found["one_row_per_program"].message
    z2 = ref.copy()
    z2[3] = np.nan  # one unwritten row elsewhere: not this signature
    ev2 = CaseEvidence(ALIGNED, x, {"z": z2.astype(np.float32)}, {"z": ref}, False, {"x": x})
    assert "one_row_per_program" not in {d.id for d in LONG_SUM.diagnose([ev2])}


def test_input_compared_bit_for_bit():
    sent = np.array([[1.0, np.nan, 3.0]], dtype=np.float32)
    assert changed_input("c", "x", sent, sent.copy()) is None  # NaN == NaN bitwise
    after = sent.copy()
    after[0, 2] = 0.0
    change = changed_input("c", "x", sent, after)
    assert change["changed"] == 1 and change["index"] == [0, 2] and change["max_abs_change"] == 3.0
    negative_zero = np.array([[1.0, np.nan, -0.0]], dtype=np.float32)
    assert changed_input("c", "x", np.array([[1.0, np.nan, 0.0]], np.float32), negative_zero)["changed"] == 1
    assert changed_input("c", "x", sent, None) is None  # no evidence sent: no diagnosis
    d = diagnosis([change], language="zh")
    assert d.id == "input_overwritten" and "x[0, 2]" in d.message and "x[0, 2]" in d.evidence["messages"]["en"]
    assert diagnosis([], language="zh") is None
