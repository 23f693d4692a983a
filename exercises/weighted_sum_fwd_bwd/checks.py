"""Weighted sum (forward + backward with block pointers), trusted side: inputs, the float64
reference for y, dL/dx and dL/dw, and the signatures of the blog's misconceptions.

Each signature recomputes, in float64, what a specific wrong fill returns for the same inputs:
block pointers that do not move along D (or move along the rows), the blog's own typo that starts
grad_x's block at column D_TILE_SIZE, grad_x row offsets without the tile size, and a partial-sum
buffer whose shape floors the number of row tiles (the last, incomplete tile's store is dropped).
A missing D-direction boundary_check is recognised on strided inputs: the columns past D hold NaN
(another tensor's data, in real memory), and NaN x 0 (zero-padded weight) is still NaN.
"""
from __future__ import annotations

import numpy as np

from service.report import Diagnosis


def make_inputs(case, seed):
    rng = np.random.default_rng(seed)
    rows, d = case.rows, case.cols
    x = rng.uniform(-1.0, 1.0, size=(rows, 1)) + rng.standard_normal((rows, d))
    w = rng.standard_normal(d)
    dy = rng.standard_normal(rows)
    return {"x": x.astype(np.float32), "w": w.astype(np.float32), "dy": dy.astype(np.float32)}


def reference(x, w, dy):
    x, w, dy = (np.asarray(a, dtype=np.float64) for a in (x, w, dy))
    return {"y": x @ w, "dx": dy[:, None] * w[None, :], "dw": (dy[:, None] * x).sum(axis=0)}


def _tiles(case):
    return int(case.kwargs.get("rows_tile", 16)), int(case.kwargs.get("d_tile", 16))


def _forward_advance(x, w, rt, dt, step):
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


def _fits_gradx_row_offsets(dx, dy, w, rt) -> bool:
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


def _close(observed, predicted, mask=None):
    mask = np.ones(observed.shape, dtype=bool) if mask is None else mask
    if not mask.any():
        return False
    o, p = observed[mask], predicted[mask]
    return bool(np.all(np.isfinite(o)) and np.all(np.abs(o - p) <= 1e-3 * (np.abs(p) + 1.0)))


def diagnose(evidence):
    findings: dict[str, list[dict]] = {}
    for ev in evidence:
        if ev.passed or ev.observed is None:
            continue
        case = ev.case
        rt, dt = _tiles(case)
        x, w, dy = ev.arrays["x"], ev.arrays["w"], ev.arrays["dy"]
        rows, d = x.shape
        where = {"case": case.id, "rows": rows, "D": d, "ROWS_TILE_SIZE": rt, "D_TILE_SIZE": dt}
        y, dx, dw = (ev.observed[k].astype(np.float64) for k in ("y", "dx", "dw"))
        ref = ev.expected

        # forward
        if not _close(y, ref["y"]):
            if not np.all(np.isfinite(y)):
                key = "d_boundary_check_missing" if case.stride and d % dt else "nonfinite_forward"
                findings.setdefault(key, []).append({**where, "stride": case.stride, "nan_rows": int((~np.isfinite(y)).sum()),
                                                     "pad_cols": -d % dt})
            else:
                for key, step in (("no_advance", (0, 0)), ("advance_rows", (dt, 0)), ("advance_one_column", (0, 1))):
                    pred = _forward_advance(x, w, rt, dt, step)
                    if _close(y, pred):
                        r = int(np.argmax(np.abs(y - ref["y"])))
                        findings.setdefault(key, []).append({**where, "row": r, "observed": float(y[r]),
                                                             "expected": float(ref["y"][r]), "predicted": float(pred[r])})
                        break
                else:
                    r = int(np.argmax(np.abs(y - ref["y"])))
                    findings.setdefault("unexplained_forward", []).append(
                        {**where, "row": r, "observed": float(y[r]), "expected": float(ref["y"][r])})

        # dL/dx
        if not _close(dx, ref["dx"]):
            unwritten = int(np.isnan(dx).sum())
            shifted = np.full_like(dx, np.nan)
            if d > dt:
                shifted[:, dt:] = ref["dx"][:, : d - dt]
            if d > dt and _close(dx, shifted, np.isfinite(shifted)) and np.all(np.isnan(dx[:, :dt])):
                findings.setdefault("gradx_column_offset", []).append({**where, "unwritten": unwritten,
                                                                       "sample_observed": float(dx[0, dt]),
                                                                       "sample_expected": float(ref["dx"][0, dt])})
            elif rows > rt and _fits_gradx_row_offsets(dx, dy, w, rt):
                findings.setdefault("gradx_row_offset", []).append({**where, "unwritten": unwritten})
            else:
                r, c = np.unravel_index(int(np.argmax(np.where(np.isfinite(dx), np.abs(dx - ref["dx"]), np.inf))), dx.shape)
                findings.setdefault("unexplained_grad_x", []).append({**where, "row": int(r), "col": int(c), "unwritten": unwritten})

        # dL/dw
        if not _close(dw, ref["dw"]):
            full = (rows // rt) * rt
            dropped = (dy[:full, None] * x[:full]).sum(axis=0)
            if full < rows and _close(dw, dropped):
                j = int(np.argmax(np.abs(dw - ref["dw"])))
                findings.setdefault("last_row_tile_dropped", []).append({
                    **where, "col": j, "observed": float(dw[j]), "expected": float(ref["dw"][j]),
                    "missing_rows": rows - full, "tiles_floor": rows // rt, "tiles_cdiv": -(-rows // rt)})
            elif not np.all(np.isfinite(dw)):
                findings.setdefault("nonfinite_grad_w", []).append(where)
            else:
                j = int(np.argmax(np.abs(dw - ref["dw"])))
                findings.setdefault("unexplained_grad_w", []).append({**where, "col": j, "observed": float(dw[j]),
                                                                      "expected": float(ref["dw"][j])})
    return [Diagnosis(id=k, message=_message(k, v), evidence={"cases": v}) for k, v in findings.items()]


def _message(key, cases):
    c = cases[0]
    names = "、".join(d["case"] for d in cases)
    tiles = f"ROWS_TILE_SIZE={c['ROWS_TILE_SIZE']}，D_TILE_SIZE={c['D_TILE_SIZE']}"
    if key == "d_boundary_check_missing":
        return (f"在 {names} 上前向输出有 {c['nan_rows']} 行是 NaN（{c['case']}：D={c['D']}，{tiles}，x 是行步长 {c['stride']} 的视图，"
                f"每行最后一个 tile 有 {c['pad_cols']} 列越过 D）。x 的 tl.load 没有检查 D 方向（维度 1）的边界：越过 D 的列读到了相邻的数据"
                "（这里是 NaN），即使 weight 用 padding 补 0，NaN × 0 仍是 NaN。连续的 x 上越界列读到的是下一行的有限值，乘 0 后看不出来，"
                "所以给定检查能通过。D_TILE_SIZE 不整除 D 时，boundary_check 必须包含维度 1：boundary_check=(0, 1)。")
    if key == "no_advance":
        return (f"在 {names} 上前向结果与“x 的 block pointer 没有前进”完全吻合（{c['case']}：{tiles}，第 {c['row']} 行得到 {c['observed']:.6g}，"
                f"正确 {c['expected']:.6g}，预测 {c['predicted']:.6g}）：每次循环都读 x 的第一个 tile，而 weight 在前进。"
                "x_block_ptr = x_block_ptr.advance((0, D_TILE_SIZE))：沿最后一维前进 D_TILE_SIZE。")
    if key == "advance_rows":
        return (f"在 {names} 上前向结果与“x 的 block pointer 沿行方向前进”完全吻合（{c['case']}：{tiles}，第 {c['row']} 行得到 "
                f"{c['observed']:.6g}，正确 {c['expected']:.6g}）：advance 的参数是 (行偏移, 列偏移)，应为 (0, D_TILE_SIZE)，写成了 (D_TILE_SIZE, 0)。")
    if key == "advance_one_column":
        return (f"在 {names} 上前向结果与“每次只前进 1 列”吻合（{c['case']}：第 {c['row']} 行得到 {c['observed']:.6g}，正确 {c['expected']:.6g}）："
                "advance 的单位是元素，不是 tile：应前进 D_TILE_SIZE 列。")
    if key == "gradx_column_offset":
        return (f"在 {names} 上 grad_x 向右错开了 D_TILE_SIZE={c['D_TILE_SIZE']} 列：前 {c['D_TILE_SIZE']} 列从未写入（{c['unwritten']} 个 NaN），"
                f"第 j 列是本应在第 j − D_TILE_SIZE 列的值（{c['case']}：grad_x[0,{c['D_TILE_SIZE']}] = {c['sample_observed']:.6g}，"
                f"正确 {c['sample_expected']:.6g}）。grad_x 的 block pointer 起点写成了 (row_tile_idx * ROWS_TILE_SIZE, D_TILE_SIZE)"
                "（博客代码里的笔误）；起点应是 (row_tile_idx * ROWS_TILE_SIZE, 0)，之后由 advance 前进。")
    if key == "gradx_row_offset":
        return (f"在 {names} 上 grad_x 与“行块起点写成 row_tile_idx（漏乘 ROWS_TILE_SIZE）”的模拟吻合（{c['case']}：{tiles}，"
                f"{c['unwritten']} 个元素从未写入）：各行块写到了重叠的行上。offsets 的单位是元素：第 i 个行块从第 i * ROWS_TILE_SIZE 行开始。")
    if key == "last_row_tile_dropped":
        return (f"在 {names} 上 grad_w 少了最后一个行块的贡献（{c['case']}：rows={c['rows']}，ROWS_TILE_SIZE={c['ROWS_TILE_SIZE']}，"
                f"最后一个行块只有 {c['missing_rows']} 行；grad_w[{c['col']}] 得到 {c['observed']:.6g}，正确 {c['expected']:.6g}，"
                f"等于只把前 {c['tiles_floor']} 个完整行块相加）。partial buffer 的形状用了向下取整的行块数（NUM_ROWS // ROWS_TILE_SIZE），"
                f"而 grid 有 cdiv = {c['tiles_cdiv']} 个 program：最后一个 program 的行号越出了 block pointer 的 shape，boundary_check 把它的 store 丢掉了。"
                "形状应是 (n_row_tiles, D)，n_row_tiles = tl.num_programs(0) = cdiv(NUM_ROWS, ROWS_TILE_SIZE)。")
    if key == "nonfinite_forward":
        return f"在 {names} 上前向输出了 NaN/inf，而正确结果是有限值：检查 boundary_check 与 padding_option。"
    if key == "nonfinite_grad_w":
        return f"在 {names} 上 grad_w 出现 NaN/inf：检查 x 与 grad_output 的 boundary_check 以及 partial buffer 的形状与偏移。"
    if key == "unexplained_forward":
        return (f"在 {names} 上前向结果不对（{c['case']}：第 {c['row']} 行得到 {c['observed']:.6g}，正确 {c['expected']:.6g}），"
                "不符合已知误区的特征：检查 block pointer 的 shape、offsets、advance 与 boundary_check。")
    if key == "unexplained_grad_x":
        return (f"在 {names} 上 grad_x 不对（{c['case']}：第一个错误在 [{c['row']},{c['col']}]，{c['unwritten']} 个元素从未写入），"
                "不符合已知误区的特征：grad_x 是 grad_output 与 w 的外积，检查 grad_x 的 block pointer 起点与 advance。")
    return (f"在 {names} 上 grad_w 不对（{c['case']}：grad_w[{c['col']}] 得到 {c['observed']:.6g}，正确 {c['expected']:.6g}），"
            "不符合已知误区的特征：检查每个行块的局部归约与 partial buffer 的形状、偏移。")
