"""Puzzle 3/4 (Outer Vector Add, blocked), trusted side: inputs, the float64 reference, signatures.

Wrong tilings are recognised by simulating them: every program of the grid writes what the
mistaken offsets would make it write, and cells nobody writes stay NaN (the wrapper fills z with
NaN first). A match names the mistake and the numbers (which rows or columns went wrong).
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from service.exercises import kit

SENTINEL = -1234.5  # what the template's add_vec_block keeps after z


def make_inputs(case: kit.CaseSpec, seed: int) -> kit.Arrays:
    rng = np.random.default_rng(seed)
    n0, n1 = kit.int_param(case, "N0"), kit.int_param(case, "N1")
    x = rng.uniform(-3.0, 3.0) + rng.standard_normal(n0)
    y = rng.uniform(-3.0, 3.0) + 10.0 * rng.standard_normal(n1)
    return {"x": x.astype(np.float32), "y": y.astype(np.float32)}


def reference(x: np.ndarray, y: np.ndarray) -> kit.Arrays:
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    return {"z": x[None, :] + y[:, None]}


def _simulate(x: np.ndarray, y: np.ndarray, b0: int, b1: int, y_step: int, row_stride: int | None = None,
              transposed: bool = False) -> np.ndarray:
    """z as a kernel writes it whose y-tile offset is pid_1 * y_step, row stride row_stride, and
    (transposed) that adds x[:, None] + y[None, :] (needs B0 == B1); loads are masked (other=0)."""
    n0, n1 = x.size, y.size
    row_stride = n0 if row_stride is None else row_stride
    flat = np.full(n1 * n0, np.nan)
    for p0 in range(-(-n0 // b0)):
        for p1 in range(-(-n1 // b1)):
            ox = p0 * b0 + np.arange(b0)
            oy = p1 * y_step + np.arange(b1)
            xv = np.where(ox < n0, x[np.minimum(ox, n0 - 1)], 0.0)
            yv = np.where(oy < n1, y[np.minimum(oy, n1 - 1)], 0.0)
            tile = (xv[:, None] + yv[None, :]) if transposed else (xv[None, :] + yv[:, None])
            keep = (oy[:, None] < n1) & (ox[None, :] < n0)
            addr = oy[:, None] * row_stride + ox[None, :]
            keep &= addr < flat.size
            flat[addr[keep]] = tile[keep]
    return flat.reshape(n1, n0)


def _same(observed: np.ndarray, predicted: np.ndarray) -> bool:
    both_nan = np.isnan(observed) & np.isnan(predicted)
    close = np.abs(observed - predicted) <= 1e-5 * (np.abs(predicted) + 1.0)
    return bool(np.all(both_nan | close))


def _classify(ev: kit.CaseEvidence) -> Iterator[kit.Found]:
    where = kit.case_numbers(ev.case, params=("N0", "N1"), kwargs={"B0": 32, "B1": 32})
    n0, n1, b0, b1 = where["N0"], where["N1"], where["B0"], where["B1"]
    if ev.observed is None:
        yield from kit.store_out_of_bounds(ev, {**where, "cols_past_end": -n0 % b0, "rows_past_end": -n1 % b1},
                                           data_len=n1 * n0, total_len=n1 * n0 + b1 * n0 + b0, sentinel=SENTINEL)
        return
    x, y = ev.arrays["x"], ev.arrays["y"]
    z = ev.observed["z"].astype(np.float64)
    ref = ev.expected["z"]
    unwritten = int(np.isnan(z).sum())
    if b0 != b1 and _same(z, _simulate(x, y, b0, b1, y_step=b0)):
        bad_rows = np.where(np.any(~np.isclose(z, ref, rtol=1e-5, atol=1e-5), axis=1))[0]
        yield "y_offset_uses_b0", {**where, "first_bad_row": int(bad_rows[0]), "bad_rows": int(bad_rows.size),
                                   "unwritten": unwritten}
        return
    if b0 != n0 and _same(z, _simulate(x, y, b0, b1, y_step=b1, row_stride=b0)):
        yield "row_stride_b0", {**where, "unwritten": unwritten}
        return
    if b0 == b1 and _same(z, _simulate(x, y, b0, b1, y_step=b1, transposed=True)):
        yield "transposed", where
        return
    r, c = np.unravel_index(int(np.nanargmax(np.where(np.isnan(z), np.inf, np.abs(z - ref)))), z.shape)
    yield "unexplained_outer_add", {**where, "row": int(r), "col": int(c), "observed": float(z[r, c]),
                                    "expected": float(ref[r, c]), "unwritten": unwritten}


diagnose = kit.make_diagnose(_classify, with_outputs=False)
