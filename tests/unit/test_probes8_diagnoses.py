"""Eighth third-party probe batch: wrong kernels whose report said "matches none of the known
misconceptions", or named a NaN/inf without its cause. Each kernel is replayed in numpy on the
exercise's own cases (no GPU, no sandbox), and the trusted diagnosis must name it:

- Long Sum, other=float("-inf") copied from a softmax (lsum8.wrong.other_neg_inf): every row with
  padding lanes is -inf; was nonfinite_output ("memory outside x, or rows never written").
- Long Sum, rows left NaN (the host's fill) while the rest are right: rows = pid + tl.arange(0, B0)
  (lsum7.wrong.rows_without_block_dim) and tl.atomic_add into a z nobody zeroed
  (lsum8.wrong.atomic_into_unzeroed_z); were unexplained_sum / nonfinite_output.
- Long Sum, x read column-major (lsum8.wrong.column_major_x) and the store one row off
  (lsum8.wrong.store_one_row_off); were unexplained_sum.
- Fused mean/var, a program's Σx² through float16 past 65504 (fused7.wrong.fp16_squares,
  fused8.wrong.fp16_block_sum); was nonfinite_output ("a division by 0, data past the padding")."""
from __future__ import annotations

import numpy as np

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from service.exercises.kit import CaseEvidence

CATALOG = ExerciseCatalog(REPO_ROOT / "exercises")
LONG_SUM = CATALOG.get("puzzle_long_sum")
FUSED = CATALOG.get("fused_mean_var_atomic")


def _fixed(cases):
    return [c for c in cases if c.kind != "given" and not isinstance(c.params.get("T"), list)
            and not getattr(c, "draw", None)]


def _long_sum_ids(kernel) -> dict[str, list[str]]:
    """kernel(x, b0, b1) -> z (float64, NaN where never written), on every fixed Long Sum case."""
    checks, out = LONG_SUM.checks, []
    for case in _fixed(LONG_SUM.spec.cases):
        x = checks.make_inputs(case, case.seed)["x"].astype(np.float64)
        z = kernel(x, int(case.kwargs.get("B0", 4)), int(case.kwargs.get("B1", 32)))
        expected = checks.reference(x)
        passed = bool(np.allclose(z, expected["z"], atol=1e-4, rtol=1e-4))
        out.append(CaseEvidence(case, x, {"z": z}, expected, passed, {"x": x}))
    return {f.id: [c["case"] for c in f.cases] for f in checks.diagnose(out)}


def test_a_minus_inf_padding_in_a_sum_is_named():
    def kernel(x, b0, b1):
        return np.full(x.shape[0], -np.inf) if x.shape[1] % b1 else x.sum(axis=1)

    found = _long_sum_ids(kernel)
    assert "nonfinite_output" not in found, found
    assert set(found) == {"padding_infinite"} and "boundary.t_one" in found["padding_infinite"], found


def test_an_accumulator_started_at_minus_inf_is_not_an_infinite_padding():
    found = _long_sum_ids(lambda x, b0, b1: np.full(x.shape[0], -np.inf))  # -inf on every case, padded or not
    assert "padding_infinite" not in found and "nonfinite_output" in found, found


def test_rows_never_written_are_named():
    def rows_without_block_dim(x, b0, b1):  # program p writes rows p .. p + B0 - 1, with their right sums
        n0 = x.shape[0]
        z = np.full(n0, np.nan)
        for p in range(-(-n0 // b0)):
            rows = np.arange(p, min(p + b0, n0))
            z[rows] = x[rows].sum(axis=1)
        return z

    found = _long_sum_ids(rows_without_block_dim)
    assert list(found) == ["rows_not_written"], found
    assert list(_long_sum_ids(lambda x, b0, b1: np.full(x.shape[0], np.nan))) == ["rows_not_written"]


def test_x_read_column_major_is_named():
    found = _long_sum_ids(lambda x, b0, b1: x.ravel().reshape(x.shape[1], x.shape[0]).sum(axis=0))
    assert "column_major" in found and "unexplained_sum" not in found, found


def test_a_store_one_row_off_is_named():
    def one_off(x, b0, b1):
        z = np.full(x.shape[0], np.nan)
        z[1:] = x[:-1].sum(axis=1)
        return z

    found = _long_sum_ids(one_off)
    assert "rows_shifted" in found and "unexplained_sum" not in found, found


def _fused_ids(to_half) -> dict[str, list[str]]:
    """A kernel whose per-program Σx² goes through float16 (`to_half` of the block's float32 sum)."""
    checks, out = FUSED.checks, []
    for case in _fixed(FUSED.spec.cases):
        x = checks.make_inputs(case, case.seed)["x"].astype(np.float64)
        block = int(case.kwargs.get("block", 128))
        chunks = [x[:, s:s + block].astype(np.float32) for s in range(0, x.shape[1], block)]
        with np.errstate(over="ignore"):
            s2 = sum(to_half((c * c).sum(axis=1)).astype(np.float64) for c in chunks)
        n = x.shape[1]
        mean = x.sum(axis=1) / n
        var = s2 / n - mean * mean
        expected = checks.reference(x, None, None)
        passed = bool(np.allclose(var, expected["var"], atol=1e-2, rtol=1e-2))
        out.append(CaseEvidence(case, x, {"mean": mean, "var": var}, expected, passed,
                                tolerances=FUSED.spec.outputs))
    return {f.id: [c["case"] for c in f.cases] for f in checks.diagnose(out)}


def test_an_fp16_overflow_of_a_programs_sum_of_squares_is_named():
    found = _fused_ids(lambda a: a.astype(np.float16))
    assert "probe.large_mean" in found.get("half_overflow", []), found
    assert "nonfinite_output" not in found, found


def test_an_inf_without_a_float16_overflow_is_still_nonfinite_output():
    found = _fused_ids(lambda a: np.where(a > 0, np.inf, a))  # every row inf, whatever its size
    assert "half_overflow" not in found and "nonfinite_output" in found, found


def test_nan_rows_where_other_cases_are_wrong_are_not_called_unwritten():
    # loads without masks (lsum7.wrong.store_mask_only): T = 1 < B1 reads past x into NaN on every row,
    # the ragged cases add the next row's head; the NaN case is no evidence of rows never written
    def unmasked(x, b0, b1):
        n0, t = x.shape
        pad = -t % b1
        flat = np.concatenate([x.ravel(), np.full(b1, np.nan)])
        return np.array([flat[r * t: r * t + t + pad].sum() for r in range(n0)])

    found = _long_sum_ids(unmasked)
    assert "rows_not_written" not in found, found
    assert "boundary.t_one" in found.get("nonfinite_output", []), found


def _replayed(exercise, outputs) -> dict[str, list[str]]:
    """outputs(case, arrays, expected) -> the observed outputs, on every fixed case of `exercise`."""
    checks, out = exercise.checks, []
    for case in _fixed(exercise.spec.cases):
        arrays = {k: np.asarray(v, dtype=np.float64) for k, v in checks.make_inputs(case, case.seed).items()}
        expected = checks.reference(**arrays)
        observed = outputs(arrays, expected)
        passed = all(np.allclose(observed[k], expected[k], atol=1e-6, rtol=1e-5) for k in expected)
        first = next(iter(arrays.values()))
        out.append(CaseEvidence(case, first, observed, expected, passed, arrays))
    return {f.id: [c["case"] for c in f.cases] for f in checks.diagnose(out)}


def _fp16(expected):
    return {k: v.astype(np.float32).astype(np.float16).astype(np.float64) for k, v in expected.items()}


def test_a_long_softmax_stored_through_float16_is_named():
    found = _replayed(CATALOG.get("puzzle_long_softmax"), lambda arrays, expected: _fp16(expected))
    assert list(found) == ["half_precision_output"], found


def test_an_outer_add_stored_through_float16_is_named():
    found = _replayed(CATALOG.get("puzzle_outer_add"), lambda arrays, expected: _fp16(expected))
    assert list(found) == ["half_precision_output"], found


def test_float32_noise_is_not_a_float16_output():
    rng = np.random.default_rng(0)
    noisy = lambda arrays, expected: {k: v * (1 + 1e-3 * rng.standard_normal(v.shape)) for k, v in expected.items()}  # noqa: E731
    found = _replayed(CATALOG.get("puzzle_outer_add"), noisy)
    assert "half_precision_output" not in found, found


def test_a_long_softmax_sum_kept_in_float16_is_named():
    # lsm7.wrong.fp16_running_sum: s = tl.zeros((B0,), dtype=tl.float16), each update cast back
    def fp16_sum(arrays, expected):
        x = arrays["x"]
        t, b1 = x.shape[1], 32
        m = x.max(axis=1, keepdims=True)
        s = np.zeros(x.shape[0], dtype=np.float16)
        for start in range(0, t, b1):
            s = (s.astype(np.float32) + np.exp(x[:, start:start + b1] - m).sum(axis=1).astype(np.float32)).astype(np.float16)
        return {"z": np.exp(x - m) / s.astype(np.float64)[:, None]}

    found = _replayed(CATALOG.get("puzzle_long_softmax"), fp16_sum)
    assert "half_precision_sum" in found and "unexplained_softmax" not in found, found


def _outer_oob_ids(row_stride) -> dict[str, list[str]]:
    """Outer Add with the mask complete and rows `row_stride(n0, b0)` apart, stored into the wrapper's buf
    (z, then the sentinel tail): the cases that write past z give no outputs, only the buffer's bytes."""
    outer = CATALOG.get("puzzle_outer_add")
    checks, out = outer.checks, []
    for case in _fixed(outer.spec.cases):
        arrays = {k: np.asarray(v, dtype=np.float64) for k, v in checks.make_inputs(case, case.seed).items()}
        n0, n1 = int(case.params["N0"]), int(case.params["N1"])
        b0, b1 = int(case.kwargs["B0"]), int(case.kwargs["B1"])
        total = n1 * n0 + b1 * n0 + b0
        buf = np.full(total, np.nan, dtype=np.float32)
        buf[n1 * n0:] = checks.SENTINEL
        x32, y32 = arrays["x"].astype(np.float32), arrays["y"].astype(np.float32)
        stride = row_stride(n0, b0)
        for j in range(n1):
            for i in range(n0):
                if j * stride + i < total:
                    buf[j * stride + i] = y32[j] + x32[i]
        expected = checks.reference(**arrays)
        if np.all(buf[n1 * n0:] == np.float32(checks.SENTINEL)):
            z = buf[:n1 * n0].reshape(n1, n0).astype(np.float64)
            passed = bool(np.allclose(z, expected["z"], atol=1e-5, rtol=1e-5))
            out.append(CaseEvidence(case, arrays["x"], {"z": z}, expected, passed, arrays))
        else:
            out.append(CaseEvidence(case, arrays["x"], None, expected, False, arrays, error="AssertionError",
                                    allocations=[{"dtype": "float32", "data": buf}]))
    return {f.id: [c["case"] for c in f.cases] for f in checks.diagnose(out)}


def test_valid_lanes_written_past_z_blame_the_addresses_not_the_mask():
    # outer8.wrong.pitched_row_stride: rows cdiv(N0, B0)·B0 apart (a pitched allocation's width)
    found = _outer_oob_ids(lambda n0, b0: -(-n0 // b0) * b0)
    assert "valid_lanes_out_of_bounds" in found and "store_out_of_bounds" not in found, found


def test_a_missing_column_mask_is_still_store_out_of_bounds():
    # no column mask: lanes past N0 load other=0.0 and write y[j] alone into the next row and past z
    outer = CATALOG.get("puzzle_outer_add")
    checks = outer.checks
    case = next(c for c in _fixed(outer.spec.cases) if c.id == "boundary.small_ragged")
    arrays = {k: np.asarray(v, dtype=np.float64) for k, v in checks.make_inputs(case, case.seed).items()}
    n0, n1, b0, b1 = 5, 3, 16, 16
    buf = np.full(n1 * n0 + b1 * n0 + b0, np.nan, dtype=np.float32)
    buf[n1 * n0:] = checks.SENTINEL
    x32, y32 = arrays["x"].astype(np.float32), arrays["y"].astype(np.float32)
    for j in range(n1):
        for i in range(b0):
            buf[j * n0 + i] = y32[j] + (x32[i] if i < n0 else np.float32(0.0))
    ev = CaseEvidence(case, arrays["x"], None, checks.reference(**arrays), False, arrays, error="AssertionError",
                      allocations=[{"dtype": "float32", "data": buf}])
    found = {f.id for f in checks.diagnose([ev])}
    assert found == {"store_out_of_bounds"}, found


def test_tiles_that_miss_part_of_z_are_named():
    # outer7.wrong.flat_index_wrong_divisor: i = pid_0 * B0 + idx % B1, j = pid_1 * B1 + idx // B1 over B0 * B1 lanes
    outer = CATALOG.get("puzzle_outer_add")
    checks, out = outer.checks, []
    for case in _fixed(outer.spec.cases):
        arrays = {k: np.asarray(v, dtype=np.float64) for k, v in checks.make_inputs(case, case.seed).items()}
        n0, n1 = int(case.params["N0"]), int(case.params["N1"])
        b0, b1 = int(case.kwargs["B0"]), int(case.kwargs["B1"])
        z = np.full((n1, n0), np.nan)
        for p0 in range(-(-n0 // b0)):
            for p1 in range(-(-n1 // b1)):
                for idx in range(b0 * b1):
                    i, j = p0 * b0 + idx % b1, p1 * b1 + idx // b1
                    if i < n0 and j < n1:
                        z[j, i] = arrays["x"][i] + arrays["y"][j]
        expected = checks.reference(**arrays)
        passed = bool(np.allclose(z, expected["z"], atol=1e-5, rtol=1e-5))
        out.append(CaseEvidence(case, arrays["x"], {"z": z}, expected, passed, arrays))
    found = {f.id: [c["case"] for c in f.cases] for f in checks.diagnose(out)}
    assert list(found) == ["cells_not_written"] and "probe.rect_blocks" in found["cells_not_written"], found


def test_a_long_softmax_reading_x_column_major_is_named():
    # lsm8.wrong.x_column_major: x_ptr + rows[:, None] + cols[None, :] * N0 in both passes, z row-major
    def column_major(arrays, expected):
        x = arrays["x"]
        cm = x.ravel().reshape(x.shape[1], x.shape[0]).T
        e = np.exp(cm - cm.max(axis=1, keepdims=True))
        return {"z": e / e.sum(axis=1, keepdims=True)}

    found = _replayed(CATALOG.get("puzzle_long_softmax"), column_major)
    assert "column_major" in found and "unexplained_softmax" not in found, found
