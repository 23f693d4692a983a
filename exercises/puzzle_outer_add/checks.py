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
              transposed: bool = False, x_step: int | None = None, rows_to: int | None = None,
              cols_to: int | None = None, column_major: bool = False,
              axes: tuple[int, int] = (0, 1)) -> tuple[np.ndarray, np.ndarray]:
    """Every store a kernel makes, as (flat addresses, values), whose y-tile offset is pid_1 * y_step
    (x's pid_0 * x_step, B0 unless given), row stride row_stride, and (transposed) that adds
    x[:, None] + y[None, :] (needs B0 == B1); loads are masked (other=0), the store's mask bounds
    rows by rows_to and columns by cols_to (N1, N0 unless given); column_major stores element (j, i)
    at i * N1 + j (z laid out [N0, N1], a column-major habit); axes names the grid axis whose
    program id offsets x and the one that offsets y ((0, 1) as the grid is launched). Where rows overlap, which
    program's store lands last is a race on a GPU (grid order on the interpreter), so the stores are
    kept, not their last writer: _same accepts any of them (one diagnosis on every device)."""
    n0, n1 = x.size, y.size
    row_stride = n0 if row_stride is None else row_stride
    x_step = b0 if x_step is None else x_step
    addresses, values = [], []
    for p0 in range(-(-n0 // b0)):
        for p1 in range(-(-n1 // b1)):
            pid = (p0, p1)
            ox = pid[axes[0]] * x_step + np.arange(b0)
            oy = pid[axes[1]] * y_step + np.arange(b1)
            xv = np.where(ox < n0, x[np.minimum(ox, n0 - 1)], 0.0)
            yv = np.where(oy < n1, y[np.minimum(oy, n1 - 1)], 0.0)
            tile = (xv[:, None] + yv[None, :]) if transposed else (xv[None, :] + yv[:, None])
            keep = ((oy[:, None] < (n1 if rows_to is None else rows_to))
                    & (ox[None, :] < (n0 if cols_to is None else cols_to)))
            addr = (ox[None, :] * n1 + oy[:, None]) if column_major else (oy[:, None] * row_stride + ox[None, :])
            keep &= addr < n1 * n0
            addresses.append(addr[keep])
            values.append(tile[keep])
    return np.concatenate(addresses), np.concatenate(values)


def _same(observed: np.ndarray, stores: tuple[np.ndarray, np.ndarray]) -> bool:
    """Every cell holds what one of the stores to it wrote (any of them: the order is a race), and a
    cell no store reaches is still NaN."""
    addresses, values = stores
    flat = observed.reshape(-1)
    close = np.abs(flat[addresses] - values) <= 1e-5 * (np.abs(values) + 1.0)
    written = np.zeros(flat.size, dtype=bool)
    written[addresses] = True
    matched = np.zeros(flat.size, dtype=bool)
    np.logical_or.at(matched, addresses, close)
    return bool(np.all(np.where(written, matched, np.isnan(flat))))


# The simulated mistakes, most specific first. Two can coincide on one case (pid_1 * B0 and no y
# offset at all when B0 >= N1; a row stride B0 and N1 when B0 == N1), so each failed case lists
# every one it matches and _across keeps those that explain every failed case with outputs.
_MISTAKES = ("y_offset_uses_b0", "block_offset_missing.y", "block_offset_missing.x", "row_stride_b0",
             "row_stride_n1", "transposed", "column_major", "mask_bound_swapped.y", "mask_bound_swapped.x",
             # last: on a tall case (N0 = 32, N1 = 64, B 16) the ids swapped leave what a row mask bounded
             # by N0 does, and that kernel's other failed cases write past z, which leaves no outputs
             "program_id_same_axis", "program_ids_swapped",
             # the right sums, each rounded to a 16-bit float (a .to(tl.float16) before the store; kit.half_rounded)
             "half_precision_output",
             # last, the least specific: right wherever written, NaN (the host's fill) elsewhere; the tiles the
             # programs store miss part of z (seventh batch, outer7.wrong.flat_index_wrong_divisor: a flattened
             # index split by B1 where the tile is B0 wide writes B1 of each block's B0 columns)
             "cells_not_written")


# A program id taken from the wrong grid axis, as (x's axis, y's axis): both offsets from one axis
# (offs_x from program_id(1), a copy of the y line, or offs_y from program_id(0): either way block k
# of x meets only block k of y, the same z, so the evidence names no axis), or the two swapped.
_AXES = {"program_id_same_axis": (1, 1), "program_ids_swapped": (1, 0)}


def _right_where_written(z: np.ndarray, ref: np.ndarray) -> bool:
    """Some element still NaN, every other one right."""
    unwritten = np.isnan(z)
    return bool(unwritten.any() and np.all(unwritten | (np.abs(z - ref) <= 1e-5 * (np.abs(ref) + 1.0))))


def _matches(x: np.ndarray, y: np.ndarray, z: np.ndarray, n0: int, n1: int, b0: int, b1: int) -> list[str]:
    grid = (-(-n0 // b0), -(-n1 // b1))
    tests = {
        "y_offset_uses_b0": lambda: b0 != b1 and _same(z, _simulate(x, y, b0, b1, y_step=b0)),
        "block_offset_missing.y": lambda: n1 > b1 and _same(z, _simulate(x, y, b0, b1, y_step=0)),
        "block_offset_missing.x": lambda: n0 > b0 and _same(z, _simulate(x, y, b0, b1, y_step=b1, x_step=0)),
        # right on one program (both ids 0), and swapped on a square grid (block k of each axis)
        "program_id_same_axis": lambda: max(grid) > 1 and _same(
            z, _simulate(x, y, b0, b1, y_step=b1, axes=_AXES["program_id_same_axis"])),
        "program_ids_swapped": lambda: grid[0] != grid[1] and _same(
            z, _simulate(x, y, b0, b1, y_step=b1, axes=_AXES["program_ids_swapped"])),
        "row_stride_b0": lambda: b0 != n0 and _same(z, _simulate(x, y, b0, b1, y_step=b1, row_stride=b0)),
        "row_stride_n1": lambda: n1 != n0 and _same(z, _simulate(x, y, b0, b1, y_step=b1, row_stride=n1)),
        "transposed": lambda: b0 == b1 and _same(z, _simulate(x, y, b0, b1, y_step=b1, transposed=True)),
        "column_major": lambda: min(n0, n1) > 1 and _same(z, _simulate(x, y, b0, b1, y_step=b1, column_major=True)),
        "mask_bound_swapped.y": lambda: n0 < n1 and _same(z, _simulate(x, y, b0, b1, y_step=b1, rows_to=n0)),
        "mask_bound_swapped.x": lambda: n1 < n0 and _same(z, _simulate(x, y, b0, b1, y_step=b1, cols_to=n1)),
        "half_precision_output": lambda: kit.half_rounded(z, y[:, None] + x[None, :]) is not None,
        "cells_not_written": lambda: _right_where_written(z, y[:, None] + x[None, :]),
    }
    return [name for name in _MISTAKES if tests[name]()]


def _valid_lanes_past_end(ev: kit.CaseEvidence, n0: int, n1: int, total_len: int) -> kit.Numbers | None:
    """Evidence that what went past z came from lanes inside N1 x N0 (a wrong address), not from lanes a
    missing mask lets through: every value written in the sentinel tail after z is a sum x[i] + y[j] of a valid
    (i, j) in float32, bit for bit, while a lane past N0 or N1 loads other=0.0 and writes y[j] or x[i] alone
    (eighth probe batch, outer8.wrong.pitched_row_stride: rows cdiv(N0, B0)·B0 apart, the mask complete, was
    told its mask is incomplete). None where any value is not such a sum, or the tail is not in the evidence."""
    if "x" not in ev.arrays or "y" not in ev.arrays:
        return None
    want = np.array([SENTINEL], dtype=np.float32).view(np.int32)[0]
    total = n1 * n0
    for alloc in ev.allocations:  # the wrapper's buf: z, then the sentinel tail (kit.sentinel_breach)
        data = alloc.get("data")
        if alloc.get("dtype") != "float32" or data is None or data.size != total_len:
            continue
        tail = np.asarray(data[total:], dtype=np.float32)
        written = tail[tail.view(np.int32) != want]
        if not written.size:
            continue
        x32 = np.asarray(ev.arrays["x"], dtype=np.float32)[:n0]
        y32 = np.asarray(ev.arrays["y"], dtype=np.float32)[:n1]
        sums = (y32[:, None] + x32[None, :])
        hits = np.isin(written.view(np.int32), sums.reshape(-1).view(np.int32))
        if not hits.all():
            return None
        j, i = np.argwhere(sums.view(np.int32) == written[:1].view(np.int32)[0])[0]
        return {"lane_i": int(i), "lane_j": int(j), "lanes_past_end": int(written.size)}
    return None


def _classify(ev: kit.CaseEvidence) -> Iterator[kit.Found]:
    where = kit.case_numbers(ev.case, params=("N0", "N1"), kwargs={"B0": 32, "B1": 32})
    n0, n1, b0, b1 = where["N0"], where["N1"], where["B0"], where["B1"]
    if ev.observed is None:
        ragged = {"cols_past_end": -n0 % b0, "rows_past_end": -n1 % b1}
        for key, numbers in kit.store_out_of_bounds(ev, {**where, **ragged}, data_len=n1 * n0,
                                                    total_len=n1 * n0 + b1 * n0 + b0, sentinel=SENTINEL):
            # No lane of this case lies outside N1 x N0: a write past z came from the addresses (a
            # row stride, a block offset), not from a missing mask.
            if not any(ragged.values()):
                key = "store_address_out_of_bounds"
            elif (lane := _valid_lanes_past_end(ev, n0, n1, n1 * n0 + b1 * n0 + b0)) is not None:
                key, numbers = "valid_lanes_out_of_bounds", {**numbers, **lane}
            yield key, numbers
        return
    x, y = ev.arrays["x"], ev.arrays["y"]
    z = ev.observed["z"].astype(np.float64)
    ref = ev.expected["z"]
    unwritten = int(np.isnan(z).sum())
    bad_rows = np.where(np.any(~np.isclose(z, ref, rtol=1e-5, atol=1e-5), axis=1))[0]
    r, c = np.unravel_index(int(np.nanargmax(np.where(np.isnan(z), np.inf, np.abs(z - ref)))), z.shape)
    first = np.argwhere(np.isnan(z))
    yield kit.ACROSS, {**where, **(kit.half_rounded(z, ref) or {}),
                       **({"first_unwritten_row": int(first[0][0]), "first_unwritten_col": int(first[0][1])}
                          if first.size else {}),
                       "matches": _matches(x, y, z, n0, n1, b0, b1), "unwritten": unwritten,
                       "first_bad_row": int(bad_rows[0]) if bad_rows.size else 0, "bad_rows": int(bad_rows.size),
                       "row": int(r), "col": int(c), "observed": float(z[r, c]), "expected": float(ref[r, c])}


_WORDS = {"block_offset_missing.y": ("y", "pid_1", "B1"), "block_offset_missing.x": ("x", "pid_0", "B0"),
          "mask_bound_swapped.y": ("y", "N0", "N1"), "mask_bound_swapped.x": ("x", "N1", "N0")}


def _across(pending: list[kit.Numbers]) -> Iterator[kit.Found]:
    """Each case under the mistake that explains every failed case with outputs (the first such, in
    _MISTAKES's order); a case no such mistake explains is unexplained. pid_1 * B0 is right when
    B0 == B1 (_matches never lists it there), so a failed case with B0 == B1 rules it out."""
    explains_all = [m for m in _MISTAKES if all(m in n["matches"] for n in pending)]
    for numbers in pending:
        found = next((m for m in explains_all if m in numbers["matches"]), None)
        out = {k: v for k, v in numbers.items() if k != "matches"}
        if found is None:
            yield "unexplained_outer_add", out
        elif found.startswith("block_offset_missing"):
            axis, pid, block = _WORDS[found]
            yield "block_offset_missing", {**out, "axis": axis, "pid": pid, "block": block}
        elif found in _AXES:
            grid = {"grid0": -(-out["N0"] // out["B0"]), "grid1": -(-out["N1"] // out["B1"])}
            yield found, {**out, **grid, "blocks": grid["grid0"] * grid["grid1"], "diagonal": min(grid.values())}
        elif found.startswith("mask_bound_swapped"):
            axis, used, right = _WORDS[found]
            yield "mask_bound_swapped", {**out, "axis": axis, "used": used, "right": right}
        else:
            yield found, out


# The ids _across gives a simulated mistake under: one that explains every failed case with outputs
# leads the report, before a case's own finding (a write past z is what the wrong stride did there).
CAUSES = ("y_offset_uses_b0", "block_offset_missing", *_AXES, "row_stride_b0", "row_stride_n1", "transposed",
          "column_major", "mask_bound_swapped", "half_precision_output", "cells_not_written")

diagnose = kit.make_diagnose(_classify, with_outputs=False, across=_across, causes=CAUSES)
