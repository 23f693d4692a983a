"""weighted_sum_fwd_bwd's diagnoses (exercises/weighted_sum_fwd_bwd/checks.py) on the outputs of wrong
fills, computed here by a block-pointer emulator of the template (tile loads with boundary_check and
zero padding, advance, stores dropped outside the block pointer's shape), for every case of the
exercise as graded with secret seed 99. The exercise runs on a GPU only (the interpreter refuses it),
so its mutants are not validated in CI; this checks what its checks.py names from such outputs. The
same verdicts came from the real kernels under a Triton 3.6 interpreter sandbox (the mutants
wrong.advance_rows_tile ... wrong.partial_shape_one_row)."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from service.config import Settings
from service.exercises import ExerciseCatalog, kit
from service.grading.inputs import case_seed

SEED = 99
Advance = Callable[[int, dict], tuple[int, int]]  # iteration, numbers -> x's advance (rows, cols)
ShapeRows = Callable[[int, int, int], int]  # n_row_tiles, NUM_ROWS, ROWS_TILE_SIZE -> the shape's rows


@pytest.fixture(scope="module")
def exercise():
    return ExerciseCatalog(Settings().exercises_dir).get("weighted_sum_fwd_bwd")


def _load(a: np.ndarray, r0: int, c0: int, rt: int, dt: int) -> np.ndarray:
    """tl.load(block_ptr, boundary_check=(0, 1), padding_option="zero") of an (rt, dt) tile at (r0, c0)."""
    tile = np.zeros((rt, dt))
    for a_r in range(rt):
        for a_c in range(dt):
            r, c = r0 + a_r, c0 + a_c
            if 0 <= r < a.shape[0] and 0 <= c < a.shape[1]:
                tile[a_r, a_c] = a[r, c]
    return tile


def _forward(x: np.ndarray, w: np.ndarray, rt: int, dt: int, advance: Advance, numbers: dict) -> np.ndarray:
    rows, d = x.shape
    y = np.zeros(rows)
    for t in range(-(-rows // rt)):
        r0, c0, w0 = t * rt, 0, 0
        out = np.zeros(rt)
        for i in range(-(-d // dt)):
            tile = _load(x, r0, c0, rt, dt)
            weight = _load(w[None, :], 0, w0, 1, dt)[0]
            out += (tile * weight[None, :]).sum(axis=1)
            dr, dc = advance(i, numbers)
            r0, c0, w0 = r0 + dr, c0 + dc, w0 + dt
        for a in range(rt):
            if t * rt + a < rows:
                y[t * rt + a] = out[a]
    return y


def _grad_w(x: np.ndarray, dy: np.ndarray, rt: int, dt: int, shape_rows: ShapeRows) -> np.ndarray:
    """grad_w when the partial buffer's block pointer shape has shape_rows(n_tiles, rows, rt) rows."""
    rows, d = x.shape
    tiles = -(-rows // rt)
    partial = np.zeros((tiles, d))
    limit = shape_rows(tiles, rows, rt)
    for t in range(tiles):
        g = _load(dy[:, None], t * rt, 0, rt, 1)[:, 0]
        for i in range(-(-d // dt)):
            share = (_load(x, t * rt, i * dt, rt, dt) * g[:, None]).sum(axis=0)
            for a_c in range(dt):
                if t < limit and i * dt + a_c < d:
                    partial[t, i * dt + a_c] = share[a_c]
    return partial.sum(axis=0)


def _evidence(exercise, advance: Advance | None = None,
              shape_rows: ShapeRows | None = None) -> list[kit.CaseEvidence]:
    out = []
    for case in exercise.spec.cases_for(SEED):
        arrays = exercise.make_inputs(case, case_seed(case, SEED))
        x, w, dy = (arrays[k].astype(np.float64) for k in ("x", "w", "dy"))
        rt, dt = int(case.kwargs["rows_tile"]), int(case.kwargs["d_tile"])
        expected = exercise.checks.reference(x, w, dy)
        row_stride = case.layout["x"].strides(x.shape)[0] if "x" in case.layout else x.shape[1]
        numbers = {"stride": case.stride or row_stride, "rt": rt, "dt": dt,
                   "cs": exercise.checks.col_stride(case, x.shape)}
        y = _forward(x, w, rt, dt, advance, numbers) if advance else expected["y"]
        dw = _grad_w(x, dy, rt, dt, shape_rows) if shape_rows else expected["dw"]
        observed = {"y": y, "dx": expected["dx"], "dw": dw}
        passed = all(np.allclose(observed[k], expected[k], atol=1e-4, rtol=1e-4) for k in observed)
        out.append(kit.CaseEvidence(case, x, observed, expected, passed, dict(arrays)))
    return out


def _diagnoses(exercise, evidence) -> dict[str, str]:
    return {d.id: d.evidence["messages"]["en"] for d in exercise.diagnose(evidence, language="en")}


def test_advance_by_the_row_tile_is_advance_rows_everywhere_and_says_so(exercise):
    found = _diagnoses(exercise, _evidence(exercise, advance=lambda i, n: (n["rt"], 0)))
    assert set(found) == {"advance_rows"}  # regular.rect and boundary_removed too (rt != dt there)
    assert "(ROWS_TILE_SIZE, 0)" in found["advance_rows"]


def test_advance_by_the_d_tile_along_rows_keeps_its_words(exercise):
    found = _diagnoses(exercise, _evidence(exercise, advance=lambda i, n: (n["dt"], 0)))
    assert set(found) == {"advance_rows"}
    assert "(D_TILE_SIZE, 0)" in found["advance_rows"]


def test_advance_by_the_row_stride_is_first_tile_only_not_advance_rows(exercise):
    # one row (boundary.one_row) and regular.rect read the first tile only under advance_rows too
    found = _diagnoses(exercise, _evidence(exercise, advance=lambda i, n: (0, n["stride"])))
    assert set(found) == {"first_tile_only"}


def test_advance_as_an_absolute_position_names_no_mistake(exercise):
    # two iterations read the first tile twice (= no_advance on those cases), three or more do not
    found = _diagnoses(exercise, _evidence(exercise, advance=lambda i, n: (0, i * n["dt"])))
    assert set(found) == {"unexplained_forward"}


def test_no_advance_and_one_column_keep_their_names(exercise):
    assert set(_diagnoses(exercise, _evidence(exercise, advance=lambda i, n: (0, 0)))) == {"no_advance"}
    assert set(_diagnoses(exercise, _evidence(exercise, advance=lambda i, n: (0, 1)))) == {"advance_one_column"}


def test_partial_shape_one_row_short_is_too_few_rows_not_the_floor(exercise):
    found = _diagnoses(exercise, _evidence(exercise, shape_rows=lambda tiles, rows, rt: tiles - 1))
    assert set(found) == {"partial_rows_too_few"}


def test_partial_shape_of_one_row_is_too_few_rows(exercise):
    assert set(_diagnoses(exercise, _evidence(exercise, shape_rows=lambda tiles, rows, rt: 1))) == {"partial_rows_too_few"}


def test_partial_shape_floored_keeps_last_row_tile_dropped(exercise):
    found = _diagnoses(exercise, _evidence(exercise, shape_rows=lambda tiles, rows, rt: rows // rt))
    assert set(found) == {"last_row_tile_dropped"}


def test_partial_rows_the_tile_size_shows_on_many_row_tiles(exercise):
    # (ROWS_TILE_SIZE, D): every case but probe.many_row_tiles has at most ROWS_TILE_SIZE row tiles
    evidence = _evidence(exercise, shape_rows=lambda tiles, rows, rt: rt)
    assert [ev.case.id for ev in evidence if not ev.passed] == ["probe.many_row_tiles"]
    assert set(_diagnoses(exercise, evidence)) == {"partial_rows_too_few"}


def test_advance_times_the_column_stride_is_named_on_the_column_strided_case_only(exercise):
    """advance((0, D_TILE_SIZE * x_stride_dim)) is right wherever x.stride(1) == 1: only the case whose
    layout gives x a column stride of 2 fails, and the diagnosis says the kernel did not honour x's stride."""
    evidence = _evidence(exercise, advance=lambda i, n: (0, n["dt"] * n["cs"]))
    assert [ev.case.id for ev in evidence if not ev.passed] == ["probe.x_col_strided"]
    found = _diagnoses(exercise, evidence)
    assert set(found) == {"advance_scaled_by_stride"}
    assert "column stride x.stride(1) = 2" in found["advance_scaled_by_stride"]
    assert "did not honour the stride" in found["advance_scaled_by_stride"]
    zh = exercise.diagnose(evidence, language="zh")[0].message
    assert "没有按传给它的 stride" in zh


def test_a_column_strided_x_keeps_the_other_forward_names(exercise):
    # the row stride there is 2 * D: advancing by it still leaves x after the first tile
    assert set(_diagnoses(exercise, _evidence(exercise, advance=lambda i, n: (0, n["stride"])))) == {"first_tile_only"}
