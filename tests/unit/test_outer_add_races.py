"""Outer add's simulated tilings (issue 15.5, true diagnoses on every device): where a wrong row
stride makes rows overlap, which program's store lands last is a race on a GPU and grid order on the
interpreter. A signature must match whichever store landed, so the H100's outcome of
`offs_y * N1` (ragged cases matched "none of the known misconceptions" there) is named as the
interpreter's is, and a value no store wrote still matches nothing."""
from __future__ import annotations

import numpy as np

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog

OUTER = ExerciseCatalog(REPO_ROOT / "exercises").get("puzzle_outer_add")
checks = OUTER.checks


def _z(n0: int, n1: int, stores: tuple[np.ndarray, np.ndarray], *, last_wins: bool) -> np.ndarray:
    """z as the wrapper leaves it (NaN first) after the stores land in grid order (last_wins) or with
    the earliest program's store landing last where two overlap (another order a GPU may run in)."""
    addresses, values = stores
    flat = np.full(n1 * n0, np.nan)
    order = range(addresses.size) if last_wins else reversed(range(addresses.size))
    for i in order:
        flat[addresses[i]] = values[i]
    return flat.reshape(n1, n0).astype(np.float32).astype(np.float64)


def _case(n0: int, n1: int, seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    case = next(c for c in OUTER.spec.cases if c.id == "boundary.small_ragged")
    arrays = checks.make_inputs(case.model_copy(update={"params": {"N0": n0, "N1": n1}}), seed)
    return arrays["x"].astype(np.float64), arrays["y"].astype(np.float64)


def test_row_stride_n1_is_named_whichever_overlapping_store_lands_last():
    for n0, n1, b0, b1 in ((5, 3, 16, 16), (50, 32, 32, 16), (64, 20, 32, 16)):
        x, y = _case(n0, n1)
        stores = checks._simulate(x, y, b0, b1, y_step=b1, row_stride=n1)
        for last_wins in (True, False):
            z = _z(n0, n1, stores, last_wins=last_wins)
            assert "row_stride_n1" in checks._matches(x, y, z, n0, n1, b0, b1), (n0, n1, last_wins)


def test_the_orders_differ_so_the_test_can_fail():
    x, y = _case(50, 32)
    stores = checks._simulate(x, y, 32, 16, y_step=16, row_stride=32)
    assert not np.array_equal(_z(50, 32, stores, last_wins=True), _z(50, 32, stores, last_wins=False),
                              equal_nan=True)


def test_a_value_no_store_wrote_matches_no_tiling():
    x, y = _case(50, 32)
    z = _z(50, 32, checks._simulate(x, y, 32, 16, y_step=16, row_stride=32), last_wins=False)
    z[1, 3] += 0.5
    assert checks._matches(x, y, z, 50, 32, 32, 16) == []
    right = x[None, :] + y[:, None]
    assert checks._matches(x, y, right, 50, 32, 32, 16) == []


def test_a_column_major_z_is_named_and_nothing_else_is():
    """z written column-major (element (j, i) at i * N1 + j: offs_x[None, :] * N1 + offs_y[:, None]) was
    "matches none of the known misconceptions" (third-party kernels, fifth batch); the right z, the
    transposed broadcast and a row stride N1 are not called column-major."""
    for n0, n1, b0, b1 in ((100, 90, 32, 32), (5, 3, 16, 16), (50, 32, 32, 16), (32, 64, 16, 16)):
        x, y = _case(n0, n1)
        z = _z(n0, n1, checks._simulate(x, y, b0, b1, y_step=b1, column_major=True), last_wins=True)
        assert checks._matches(x, y, z, n0, n1, b0, b1) == ["column_major"], (n0, n1)
        right = x[None, :] + y[:, None]
        assert "column_major" not in checks._matches(x, y, right, n0, n1, b0, b1)
        n1_stride = _z(n0, n1, checks._simulate(x, y, b0, b1, y_step=b1, row_stride=n1), last_wins=True)
        assert "column_major" not in checks._matches(x, y, n1_stride, n0, n1, b0, b1)
        if b0 == b1:
            transposed = _z(n0, n1, checks._simulate(x, y, b0, b1, y_step=b1, transposed=True), last_wins=True)
            assert "column_major" not in checks._matches(x, y, transposed, n0, n1, b0, b1)


def test_a_program_id_from_the_wrong_axis_is_named_from_the_z_it_leaves():
    """offs_x from program_id(1) (third-party kernels, fifth batch) and offs_y from program_id(0) (the
    catalogue's wrong.same_program_id) leave the same z, the diagonal blocks alone: both are
    program_id_same_axis; the two ids swapped is program_ids_swapped, wherever the grid is not square
    (on a square one it is right). Neither is named for the right z or the other simulated tilings."""
    for n0, n1, b0, b1 in ((100, 90, 32, 32), (32, 64, 16, 16), (40, 24, 32, 8), (64, 20, 32, 16), (113, 32, 32, 16)):
        x, y = _case(n0, n1)
        for axes in ((1, 1), (0, 0)):
            stores = checks._simulate(x, y, b0, b1, y_step=b1, axes=axes)
            for last_wins in (True, False):
                z = _z(n0, n1, stores, last_wins=last_wins)
                # the diagonal blocks right and the rest NaN is also the general cells_not_written (eighth
                # probe batch), listed last: _across names the first that explains every case
                assert checks._matches(x, y, z, n0, n1, b0, b1) == ["program_id_same_axis", "cells_not_written"], \
                    (n0, n1, axes)
        swapped = _z(n0, n1, checks._simulate(x, y, b0, b1, y_step=b1, axes=(1, 0)), last_wins=True)
        square = -(-n0 // b0) == -(-n1 // b1)
        assert ("program_ids_swapped" in checks._matches(x, y, swapped, n0, n1, b0, b1)) != square, (n0, n1)
        if square:
            assert np.allclose(swapped, x[None, :] + y[:, None])
        right = x[None, :] + y[:, None]
        others = [_z(n0, n1, checks._simulate(x, y, b0, b1, y_step=b1, **kw), last_wins=True)
                  for kw in ({"x_step": 0}, {"row_stride": n1}, {"column_major": True})]
        for z in (right, *others):
            assert not {"program_id_same_axis", "program_ids_swapped"} & set(checks._matches(x, y, z, n0, n1, b0, b1))


def test_one_program_per_axis_names_no_program_id_mistake():
    """With one block each way both ids are 0: the same-axis simulation is the right z, and is not named."""
    x, y = _case(5, 3)
    z = _z(5, 3, checks._simulate(x, y, 16, 16, y_step=16, axes=(1, 1)), last_wins=True)
    assert np.allclose(z, x[None, :] + y[:, None])
    assert checks._matches(x, y, z, 5, 3, 16, 16) == []


def test_where_a_row_mask_bounded_by_n0_leaves_the_same_z_it_is_named_first():
    """On regular.tall (N0 = 32, N1 = 64, B0 = B1 = 16) the ids swapped leave the z a row mask bounded
    by N0 leaves (rows 32.. never written); that kernel's other failed cases write past z (no outputs),
    so the tall case alone decides, and the mask (the catalogue's wrong.mask_y_bound_n0) is named."""
    x, y = _case(32, 64)
    z = _z(32, 64, checks._simulate(x, y, 16, 16, y_step=16, rows_to=32), last_wins=True)
    matches = checks._matches(x, y, z, 32, 64, 16, 16)
    assert {"mask_bound_swapped.y", "program_ids_swapped"} <= set(matches)
    pending = [{"case": "regular.tall", "N0": 32, "N1": 64, "B0": 16, "B1": 16, "matches": matches}]
    assert [key for key, _ in checks._across(pending)] == ["mask_bound_swapped"]
