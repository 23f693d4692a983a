"""A mask built from the row stride instead of N (issue 15.5, true diagnoses): on the strided cases
of lesson 6 and welford_merge, the kernels' arithmetic is simulated in numpy float32 on the buffer
the sandbox gets (`service.grading.inputs.storage`: the rows inside a wider buffer, NaN after each
row), addressed as the kernel does (row * stride_m + cols); the diagnosis must name the bug, and
its predicted numbers must be the observed ones. A different bug is not called this."""
from __future__ import annotations

import numpy as np
import pytest

from service.config import REPO_ROOT
from service.exercises import CaseSpec, ExerciseCatalog
from service.exercises.kit import CaseEvidence, draw_rows
from service.grading.inputs import storage

CATALOG = ExerciseCatalog(REPO_ROOT / "exercises")
LESSON6 = CATALOG.get("lesson06_mean_var")
WELFORD = CATALOG.get("welford_merge")


def _case(exercise, case_id: str) -> CaseSpec:
    return next(c for c in exercise.spec.cases if c.id == case_id)


def _load(case: CaseSpec, x: np.ndarray, start: int, block: int) -> tuple[np.ndarray, np.ndarray]:
    """tl.load(x + row * stride_m + cols, mask=cols < N, other=0.0) over the sandbox's buffer."""
    flat = storage(case, x).reshape(-1)
    stride = case.stride or case.cols
    cols = start + np.arange(block)
    mask = cols < case.cols
    index = np.arange(case.rows)[:, None] * stride + cols[None, :]
    values = np.where(mask, flat[np.minimum(index, flat.size - 1)], np.float32(0.0)).astype(np.float32)
    return cols, values


def _evidence(exercise, case: CaseSpec, x: np.ndarray, observed: dict[str, np.ndarray]) -> CaseEvidence:
    x64 = x.astype(np.float64)
    expected = exercise.checks.reference(x64)
    passed = all(np.allclose(observed[k], expected[k], atol=2e-4, rtol=2e-4) for k in expected)
    return CaseEvidence(case, x64, observed, expected, passed, {"x": x64})


# --- lesson 6 ------------------------------------------------------------------------------------

def mean_var(case: CaseSpec, x: np.ndarray, fill) -> dict[str, np.ndarray]:
    """mean_var_kernel with `fill(cols, N, stride_m, BLOCK)` in the blank."""
    n, stride = case.cols, case.stride or case.cols
    block = 1 << max(0, int(np.ceil(np.log2(n))))
    cols, values = _load(case, x, 0, block)
    mean = values.sum(axis=1, dtype=np.float32) / np.float32(n)
    diff = values - mean[:, None]
    centered_sq = np.where(fill(cols, n, stride, block), diff * diff, np.float32(0.0))
    return {"mean": mean, "var": (centered_sq.sum(axis=1, dtype=np.float32) / np.float32(n)).astype(np.float32)}


def lesson6(case: CaseSpec, fill) -> CaseEvidence:
    x = draw_rows(case, case.seed)
    return _evidence(LESSON6, case, x, mean_var(case, x, fill))


def by_stride(c, n, s, b):
    return c < s


def test_the_extra_lanes_are_the_loads_zeros_not_the_nan_after_the_row():
    case = _case(LESSON6, "probe.strided_pad")
    assert (case.cols, case.stride) == (20, 24)
    wide = storage(case, draw_rows(case, case.seed))
    assert np.isnan(wide[:, 20:]).all()  # what lies after each row in the buffer
    ev = lesson6(case, by_stride)
    assert np.isfinite(ev.observed["var"]).all() and not ev.passed  # the NaN was never read


@pytest.mark.parametrize(("case_id", "n", "stride", "block"),
                         [("probe.strided_pad", 20, 24, 32), ("boundary.strided", 33, 40, 64)])
def test_mask_uses_row_stride_on_each_strided_case(case_id, n, stride, block):
    ev = lesson6(_case(LESSON6, case_id), by_stride)
    (d,) = LESSON6.diagnose([ev])
    assert d.id == "mask_uses_row_stride"
    e = d.evidence["cases"][0]
    numbers = (e["N"], e["stride"], e["BLOCK"], e["lanes_counted"], e["extra_lanes"])
    assert numbers == (n, stride, block, stride, stride - n)
    assert e["predicted_excess"] == pytest.approx((stride - n) * e["mean"] ** 2 / n)
    # the prediction is the observed excess, and the excess is that of the worst row of the real numbers
    assert e["predicted_excess"] == pytest.approx(e["excess"], rel=1e-3)
    row = e["row"]
    assert e["excess"] == pytest.approx(float(ev.observed["var"][row]) - float(ev.expected["var"][row]))
    assert f"stride={stride}" in d.message and "other=0.0" in d.message and "cols < N" in d.message
    assert f"row stride {stride}" in d.evidence["messages"]["en"]


def test_both_strided_cases_with_the_contiguous_ones_passing():
    cases = [c for c in LESSON6.spec.cases if not c.draw]  # the drawn widths need a secret seed
    evidence = [lesson6(c, by_stride) for c in cases]
    failed = {ev.case.id for ev in evidence if not ev.passed}
    assert failed == {"boundary.strided", "probe.strided_pad"}
    (d,) = LESSON6.diagnose(evidence)
    assert d.id == "mask_uses_row_stride" and sorted(e["case"] for e in d.evidence["cases"]) == sorted(failed)
    assert d.evidence["cases"][0]["case"] in d.message  # the example is one of them, with its numbers


def test_a_hard_coded_width_that_equals_one_stride_is_still_a_hard_coded_width():
    fill = lambda c, n, s, b: c < 24  # noqa: E731 - the stride of probe.strided_pad, but on every case
    evidence = [lesson6(_case(LESSON6, i), fill) for i in ("probe.strided_pad", "boundary.n17")]
    assert {d.id for d in LESSON6.diagnose(evidence)} == {"hardcoded_width"}


def test_contiguous_missing_remask_and_strided_missing_remask_are_not_the_stride():
    everything = lambda c, n, s, b: np.ones_like(c, bool)  # noqa: E731
    for case_id in ("boundary.n33", "probe.strided_pad", "boundary.strided"):
        assert {d.id for d in LESSON6.diagnose([lesson6(_case(LESSON6, case_id), everything)])} == {"missing_remask"}
    off_by_one = lesson6(_case(LESSON6, "boundary.n33"), lambda c, n, s, b: c <= n)
    assert {d.id for d in LESSON6.diagnose([off_by_one])} == {"off_by_one_le"}


# --- welford_merge -------------------------------------------------------------------------------

def welford(case: CaseSpec, x: np.ndarray, count) -> dict[str, np.ndarray]:
    """welford_kernel (float32) with `count(cols, N, stride_m, BLOCK)` as the lanes n_b counts."""
    n, stride = case.cols, case.stride or case.cols
    block = int(case.kwargs.get("block", 64))
    f32 = np.float32
    cnt, mean, m2 = (np.zeros(case.rows, f32) for _ in range(3))
    for start in range(0, n, block):
        cols, values = _load(case, x, start, block)
        mask = cols < n
        n_b = f32(np.where(count(cols, n, stride, block), f32(1.0), f32(0.0)).sum(dtype=f32))
        mean_b = values.sum(axis=1, dtype=f32) / n_b
        m2_b = np.where(mask, (values - mean_b[:, None]) ** 2, f32(0.0)).sum(axis=1, dtype=f32)
        n_new = cnt + n_b
        delta = mean_b - mean
        mean = mean + delta * n_b / n_new
        m2 = m2 + m2_b + delta * delta * cnt * n_b / n_new
        cnt = n_new
    return {"mean": mean.astype(f32), "var": (m2 / cnt).astype(f32)}


def welford_case(case: CaseSpec, count) -> CaseEvidence:
    x = WELFORD.make_inputs(case, case.seed)["x"]
    return _evidence(WELFORD, case, x, welford(case, x, count))


def count_to_stride(c, n, s, b):
    return c < s


def count_valid(c, n, s, b):
    return c < n


def count_block(c, n, s, b):
    return np.ones_like(c, bool)


def test_count_uses_row_stride_on_the_probe():
    case = _case(WELFORD, "probe.strided_count")  # N = 100, stride 112, BLOCK 32: 16 counted, 4 valid
    ev = welford_case(case, count_to_stride)
    assert not ev.passed and np.isfinite(ev.observed["mean"]).all()
    (d,) = WELFORD.diagnose([ev])
    assert d.id == "count_uses_row_stride"
    e = d.evidence["cases"][0]
    assert (e["N"], e["stride"], e["BLOCK"], e["last_chunk"], e["counted"], e["extra"]) == (100, 112, 32, 4, 16, 12)
    row = e["row"]
    assert e["mean_obs"] == pytest.approx(e["mean"] * 100 / 112, rel=1e-5)
    assert e["mean_pred"] == pytest.approx(float(ev.observed["mean"][row]), rel=1e-5)
    assert e["var_pred"] == pytest.approx(float(ev.observed["var"][row]), rel=1e-4)
    assert "stride = 112" in d.message and "other=0.0" in d.message
    assert "row stride 112" in d.evidence["messages"]["en"]


def test_where_the_stride_reaches_past_the_last_chunk_the_passed_contiguous_cases_decide():
    """boundary.strided (N = 100, stride 128, BLOCK 32): counting to the stride counts the whole last
    chunk, the same numbers as counting every chunk as BLOCK. A contiguous ragged case that passed
    rules the block count out; one that failed as the block count rules it in."""
    strided, ragged = _case(WELFORD, "boundary.strided"), _case(WELFORD, "boundary.short_row")
    stride_bug = [welford_case(strided, count_to_stride), welford_case(ragged, count_to_stride)]
    assert [ev.passed for ev in stride_bug] == [False, True]
    assert [d.id for d in WELFORD.diagnose(stride_bug)] == ["count_uses_row_stride"]
    assert WELFORD.diagnose(stride_bug)[0].evidence["cases"][0]["extra"] == 28
    block_bug = [welford_case(strided, count_block), welford_case(ragged, count_block)]
    assert not any(ev.passed for ev in block_bug)
    assert {d.id for d in WELFORD.diagnose(block_bug)} == {"last_chunk_counted_as_block"}


def test_a_contiguous_case_with_another_bug_is_not_the_row_stride():
    ragged = _case(WELFORD, "boundary.block_plus_one")
    assert {d.id for d in WELFORD.diagnose([welford_case(ragged, count_block)])} == {"last_chunk_counted_as_block"}
    ok = welford_case(_case(WELFORD, "probe.strided_count"), count_valid)
    assert ok.passed and WELFORD.diagnose([ok]) == []
