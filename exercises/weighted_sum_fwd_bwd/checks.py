"""Weighted sum (forward + backward with block pointers), trusted side: inputs, the float64
reference for y, dL/dx and dL/dw, and the signatures of the blog's misconceptions.

Each signature recomputes, in float64, what a specific wrong fill returns for the same inputs:
block pointers that do not move along D (or move along the rows, by either tile size, or one column,
or jump past D after the first tile), the blog's own typo that starts grad_x's block at column
D_TILE_SIZE, grad_x row offsets without the tile size, and a partial-sum buffer whose shape has too
few rows (floored: the last, incomplete tile's store is dropped; or fewer still). The forward's and
grad_w's mistakes are named across the cases (`_across`): one row or one row tile cannot tell most
of them apart, so a simulation is named only when it fits every failed case.
A missing D-direction boundary_check is recognised on strided inputs: the columns past D hold NaN
(another tensor's data, in real memory), and NaN x 0 (zero-padded weight) is still NaN.
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from service.exercises import kit


def make_inputs(case: kit.CaseSpec, seed: int) -> kit.Arrays:
    rng = np.random.default_rng(seed)
    rows, d = case.rows, case.cols
    x = rng.uniform(-1.0, 1.0, size=(rows, 1)) + rng.standard_normal((rows, d))
    w = rng.standard_normal(d)
    dy = rng.standard_normal(rows)
    return {"x": x.astype(np.float32), "w": w.astype(np.float32), "dy": dy.astype(np.float32)}


def reference(x: np.ndarray, w: np.ndarray, dy: np.ndarray) -> kit.Arrays:
    x, w, dy = (np.asarray(a, dtype=np.float64) for a in (x, w, dy))
    return {"y": x @ w, "dx": dy[:, None] * w[None, :], "dw": (dy[:, None] * x).sum(axis=0)}


def _tiles(case: kit.CaseSpec) -> tuple[int, int]:
    return int(case.kwargs.get("rows_tile", 16)), int(case.kwargs.get("d_tile", 16))


def _forward_advance(x: np.ndarray, w: np.ndarray, rt: int, dt: int, step: tuple[int, int]) -> np.ndarray:
    """y when x's block pointer advances by `step` (rows, cols) per iteration; w advances by dt."""
    rows, d = x.shape
    y = np.zeros(rows)
    n_iter = -(-d // dt)
    for t in range(-(-rows // rt)):
        for a in range(rt):
            r0 = t * rt + a
            if r0 >= rows:
                continue
            acc = 0.0
            for i in range(n_iter):
                r, c0 = r0 + i * step[0], i * step[1]
                if r >= rows:
                    continue
                for j in range(dt):
                    c, wc = c0 + j, i * dt + j
                    if c < d and wc < d:
                        acc += x[r, c] * w[wc]
            y[r0] = acc
    return y


def _fits_gradx_row_offsets(dx: np.ndarray, dy: np.ndarray, w: np.ndarray, rt: int) -> bool:
    """dx as written when grad_x's block starts at row row_tile_idx (not row_tile_idx * ROWS_TILE_SIZE):
    tile t writes rows t .. t+rt-1 with the gradients of rows t*rt .. t*rt+rt-1. Neighbouring tiles
    overlap, and which one wrote a row last depends on the order programs ran in (sequential on
    the interpreter, any order on a GPU): each row must equal one of its possible writers, and a
    row no tile writes stays NaN."""
    rows = dy.size
    tiles = -(-rows // rt)
    for r in range(rows):
        writers = [t for t in range(tiles) if 0 <= r - t < rt]
        if not writers:
            if not np.all(np.isnan(dx[r])):
                return False
            continue
        candidates = [(dy[t * rt + r - t] if t * rt + r - t < rows else 0.0) * w for t in writers]
        if not any(_close(dx[r], c) for c in candidates):
            return False
    return True


def _close(observed: np.ndarray, predicted: np.ndarray, mask: np.ndarray | None = None) -> bool:
    mask = np.ones(observed.shape, dtype=bool) if mask is None else mask
    if not mask.any():
        return False
    o, p = observed[mask], predicted[mask]
    return bool(np.all(np.isfinite(o)) and np.all(np.abs(o - p) <= 1e-3 * (np.abs(p) + 1.0)))


# The forward's simulated mistakes, in the order one is preferred when several explain every failed
# case: x's block pointer advanced by `step` (rows, columns) per iteration while w advances by dt.
# advance_rows comes in two spellings, (D_TILE_SIZE, 0) and (ROWS_TILE_SIZE, 0): they differ where the
# tiles differ (regular.rect, probe.boundary_removed). first_tile_only: x jumped past D after its
# first tile (an advance by a row's length or a stride), so every later tile is zero padding.
ADVANCE_ROWS = "advance_rows"  # the diagnosis id both spellings report
# advance_scaled_by_stride: x advanced by D_TILE_SIZE * x_stride_dim columns, right only where x's
# column stride is 1; on a contiguous case it is the right answer, so it names only failed cases that
# all have another column stride (a case's `layout`, e.g. x = wide[:, ::2]).
FORWARD_MISTAKES = ("no_advance", f"{ADVANCE_ROWS}:D_TILE_SIZE", f"{ADVANCE_ROWS}:ROWS_TILE_SIZE", "advance_one_column",
                    "advance_scaled_by_stride", "first_tile_only")


def col_stride(case: kit.CaseSpec, shape: tuple[int, int]) -> int:
    """x.stride(1) on this case: 1 unless the case lays x out otherwise."""
    layout = case.layout.get("x")
    return layout.strides(shape)[1] if layout is not None else 1


def _forward_step(label: str, rt: int, dt: int, d: int, cs: int = 1) -> tuple[int, int]:
    return {"no_advance": (0, 0), f"{ADVANCE_ROWS}:D_TILE_SIZE": (dt, 0), f"{ADVANCE_ROWS}:ROWS_TILE_SIZE": (rt, 0),
            "advance_one_column": (0, 1), "advance_scaled_by_stride": (0, dt * cs), "first_tile_only": (0, d)}[label]


def _forward(where: kit.Numbers, x: np.ndarray, w: np.ndarray, y: np.ndarray, ref: np.ndarray,
             case: kit.CaseSpec) -> kit.Found:
    rt, dt = where["ROWS_TILE_SIZE"], where["D_TILE_SIZE"]
    d = where["D"]
    cs = col_stride(case, x.shape)
    laid_out = "x" in case.layout and not case.layout["x"].contiguous
    if not np.all(np.isfinite(y)):
        key = "d_boundary_check_missing" if (case.stride or laid_out) and d % dt else "nonfinite_forward"
        row_stride = case.stride or (case.layout["x"].strides(x.shape)[0] if laid_out else d)
        return key, {**where, "stride": row_stride, "nan_rows": int((~np.isfinite(y)).sum()), "pad_cols": -d % dt}
    r = int(np.argmax(np.abs(y - ref)))
    matches: dict[str, kit.Numbers] = {}
    for label in FORWARD_MISTAKES:
        if label == "advance_scaled_by_stride" and cs == 1:
            continue  # the right step there: no evidence either way
        pred = _forward_advance(x, w, rt, dt, _forward_step(label, rt, dt, d, cs))
        if _close(y, pred):
            matches[label] = {**where, "row": r, "observed": float(y[r]), "expected": float(ref[r]),
                              "predicted": float(pred[r]), "written": label.partition(":")[2], "col_stride": cs,
                              "step": dt * cs}
    # Named across the cases (_across): a simulation that fits this case alone is no evidence when
    # another failed case refutes it (one row, or one row tile, cannot tell most of them apart).
    return kit.ACROSS, {**where, "part": "forward", "matches": matches, "row": r, "observed": float(y[r]),
                        "expected": float(ref[r])}


def _grad_x(where: kit.Numbers, dx: np.ndarray, dy: np.ndarray, w: np.ndarray, ref: np.ndarray) -> kit.Found:
    rows, d, rt, dt = where["rows"], where["D"], where["ROWS_TILE_SIZE"], where["D_TILE_SIZE"]
    unwritten = int(np.isnan(dx).sum())
    shifted = np.full_like(dx, np.nan)
    if d > dt:
        shifted[:, dt:] = ref[:, : d - dt]
    if d > dt and _close(dx, shifted, np.isfinite(shifted)) and np.all(np.isnan(dx[:, :dt])):
        return "gradx_column_offset", {**where, "unwritten": unwritten, "sample_observed": float(dx[0, dt]),
                                       "sample_expected": float(ref[0, dt])}
    if rows > rt and _fits_gradx_row_offsets(dx, dy, w, rt):
        return "gradx_row_offset", {**where, "unwritten": unwritten}
    r, c = np.unravel_index(int(np.argmax(np.where(np.isfinite(dx), np.abs(dx - ref), np.inf))), dx.shape)
    return "unexplained_grad_x", {**where, "row": int(r), "col": int(c), "unwritten": unwritten}


def _grad_w(where: kit.Numbers, dw: np.ndarray, dy: np.ndarray, x: np.ndarray, ref: np.ndarray) -> kit.Found:
    rows, rt = where["rows"], where["ROWS_TILE_SIZE"]
    if not np.all(np.isfinite(dw)):
        return "nonfinite_grad_w", where
    tiles = -(-rows // rt)
    j = int(np.argmax(np.abs(dw - ref)))
    # The first `kept` row tiles' shares only: the partial buffer's shape had `kept` rows where the
    # grid has `tiles` programs, and boundary_check dropped the stores of the others.
    kept = next((k for k in range(tiles) if _close(dw, (dy[:k * rt, None] * x[:k * rt]).sum(axis=0))), None)
    return kit.ACROSS, {**where, "part": "grad_w", "kept": kept, "col": j, "observed": float(dw[j]),
                        "expected": float(ref[j]), "missing_rows": rows - (rows // rt) * rt, "tiles_floor": rows // rt,
                        "tiles_cdiv": tiles}


def _across(pending: list[kit.Numbers]) -> Iterator[kit.Found]:
    """The findings that depend on every failed case. The forward: each case under the first
    simulated mistake (FORWARD_MISTAKES' order) that every failed forward case matches, or
    unexplained_forward. grad_w: the floored shape (last_row_tile_dropped) when every failed case kept
    exactly its full row tiles and dropped a partial last one; a shape of too few rows otherwise
    (partial_rows_too_few: `(n_row_tiles - 1, D)`, `(1, D)`) when every failed case kept a prefix of
    its row tiles; else unexplained_grad_w."""
    forward = [n for n in pending if n["part"] == "forward"]
    shared = [label for label in FORWARD_MISTAKES if forward and all(label in n["matches"] for n in forward)]
    for n in forward:
        if shared:
            yield shared[0].partition(":")[0], n["matches"][shared[0]]
        else:
            yield "unexplained_forward", {k: v for k, v in n.items() if k not in ("part", "matches")}
    grad_w = [n for n in pending if n["part"] == "grad_w"]
    prefix = all(n["kept"] is not None for n in grad_w)
    floored = prefix and all(n["kept"] == n["tiles_floor"] and n["missing_rows"] > 0 for n in grad_w)
    # grad_w = 0 alone (kept 0) says only that nothing arrived: a prefix needs a case that kept some
    prefix = prefix and any(n["kept"] > 0 for n in grad_w)
    for n in grad_w:
        numbers = {k: v for k, v in n.items() if k != "part"}
        if floored:
            yield "last_row_tile_dropped", numbers
        elif prefix:
            yield "partial_rows_too_few", numbers
        else:
            yield "unexplained_grad_w", {k: v for k, v in numbers.items() if k not in ("kept", "missing_rows",
                                                                                        "tiles_floor", "tiles_cdiv")}


def _classify(ev: kit.CaseEvidence) -> Iterator[kit.Found]:
    """The forward output, dL/dx and dL/dw each get their own finding."""
    assert ev.observed is not None
    case = ev.case
    rt, dt = _tiles(case)
    x, w, dy = ev.arrays["x"], ev.arrays["w"], ev.arrays["dy"]
    rows, d = x.shape
    where = {"case": case.id, "rows": rows, "D": d, "ROWS_TILE_SIZE": rt, "D_TILE_SIZE": dt}
    y, dx, dw = (ev.observed[k].astype(np.float64) for k in ("y", "dx", "dw"))
    ref = ev.expected
    if not _close(y, ref["y"]):
        yield _forward(where, x, w, y, ref["y"], case)
    if not _close(dx, ref["dx"]):
        yield _grad_x(where, dx, dy, w, ref["dx"])
    if not _close(dw, ref["dw"]):
        yield _grad_w(where, dw, dy, x, ref["dw"])


def _words(key: str, cases: list[kit.Numbers]) -> kit.Say:
    return kit.say_about(key, cases, tiles=kit.Say("part.tiles", cases[0]))


diagnose = kit.make_diagnose(_classify, _words, across=_across)
