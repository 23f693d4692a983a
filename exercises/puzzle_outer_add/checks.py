"""Puzzle 3/4 (Outer Vector Add, blocked), trusted side: inputs, the float64 reference, signatures.

Wrong tilings are recognised by simulating them: every program of the grid writes what the
mistaken offsets would make it write, and cells nobody writes stay NaN (the wrapper fills z with
NaN first). A match names the mistake and the numbers (which rows or columns went wrong).
"""
from __future__ import annotations

import numpy as np

from service.grading.diagnose import out_of_bounds_en, sentinel_breach
from service.report import Diagnosis

SENTINEL = -1234.5  # what the template's add_vec_block keeps after z


def make_inputs(case, seed):
    rng = np.random.default_rng(seed)
    n0, n1 = int(case.params["N0"]), int(case.params["N1"])
    x = rng.uniform(-3.0, 3.0) + rng.standard_normal(n0)
    y = rng.uniform(-3.0, 3.0) + 10.0 * rng.standard_normal(n1)
    return {"x": x.astype(np.float32), "y": y.astype(np.float32)}


def reference(x, y):
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    return {"z": x[None, :] + y[:, None]}


def _simulate(x, y, b0, b1, y_step, row_stride=None, transposed=False):
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


def _same(observed, predicted):
    both_nan = np.isnan(observed) & np.isnan(predicted)
    close = np.abs(observed - predicted) <= 1e-5 * (np.abs(predicted) + 1.0)
    return bool(np.all(both_nan | close))


def diagnose(evidence):
    findings: dict[str, list[dict]] = {}
    for ev in evidence:
        if ev.passed:
            continue
        case = ev.case
        n0, n1 = int(case.params["N0"]), int(case.params["N1"])
        b0, b1 = int(case.kwargs.get("B0", 32)), int(case.kwargs.get("B1", 32))
        where = {"case": case.id, "N0": n0, "N1": n1, "B0": b0, "B1": b1}
        if ev.observed is None:
            breach = sentinel_breach(ev, data_len=n1 * n0, total_len=n1 * n0 + b1 * n0 + b0, sentinel=SENTINEL)
            if breach is not None:  # evidence in the bytes, not in the error's text
                findings.setdefault("store_out_of_bounds", []).append(
                    {**where, "cols_past_end": -n0 % b0, "rows_past_end": -n1 % b1, **breach})
            continue
        x, y = ev.arrays["x"], ev.arrays["y"]
        z = ev.observed["z"].astype(np.float64)
        ref = ev.expected["z"]
        unwritten = int(np.isnan(z).sum())
        if b0 != b1 and _same(z, _simulate(x, y, b0, b1, y_step=b0)):
            bad_rows = np.where(np.any(~np.isclose(z, ref, rtol=1e-5, atol=1e-5), axis=1))[0]
            findings.setdefault("y_offset_uses_b0", []).append(
                {**where, "first_bad_row": int(bad_rows[0]), "bad_rows": int(bad_rows.size), "unwritten": unwritten})
            continue
        if b0 != n0 and _same(z, _simulate(x, y, b0, b1, y_step=b1, row_stride=b0)):
            findings.setdefault("row_stride_b0", []).append({**where, "unwritten": unwritten})
            continue
        if b0 == b1 and _same(z, _simulate(x, y, b0, b1, y_step=b1, transposed=True)):
            findings.setdefault("transposed", []).append(where)
            continue
        r, c = np.unravel_index(int(np.nanargmax(np.where(np.isnan(z), np.inf, np.abs(z - ref)))), z.shape)
        findings.setdefault("unexplained_outer_add", []).append(
            {**where, "row": int(r), "col": int(c), "observed": float(z[r, c]), "expected": float(ref[r, c]),
             "unwritten": unwritten})
    return [Diagnosis(id=k, message=_message(k, v), evidence=_evidence(k, v)) for k, v in findings.items()]


def _evidence(key, cases):
    if key != "store_out_of_bounds":
        return {"cases": cases}
    c = cases[0]
    why = (f"N0={c['N0']} with B0={c['B0']} leaves {c['cols_past_end']} column(s) past the last block, N1={c['N1']} with "
           f"B1={c['B1']} leaves {c['rows_past_end']} row(s): a 2-D store needs both masks, mask_y[:, None] & "
           "mask_x[None, :]. Without the column mask, elements past a row's end land at the start of the next row (and "
           "past z after the last row); without the row mask, rows land past the end of z.")
    return {"cases": cases, "messages": {"zh": _message(key, cases), "en": out_of_bounds_en(c, "、".join(d["case"] for d in cases), why)}}


def _message(key, cases):
    c = cases[0]
    names = "、".join(d["case"] for d in cases)
    if key == "y_offset_uses_b0":
        return (f"在 {names} 上（{c['case']}：B0={c['B0']} ≠ B1={c['B1']}），从第 {c['first_bad_row']} 行起共 {c['bad_rows']} 行不对、"
                f"{c['unwritten']} 个元素从未写入，与“y 方向的块偏移写成 pid_1 * B0”的模拟完全吻合。"
                "y 的块大小是 B1：offs_y = program_id(1) * B1 + tl.arange(0, B1)。给定检查里 B0 = B1，所以这个错误在那里看不出来。")
    if key == "row_stride_b0":
        return (f"在 {names} 上，结果与“z 的行步长用了 B0（而不是 N0）”的模拟吻合（{c['case']}：N0={c['N0']}，B0={c['B0']}，"
                f"{c['unwritten']} 个元素从未写入）。z 是 [N1, N0] 的连续矩阵，第 j 行从 j * N0 开始。")
    if key == "transposed":
        return (f"在 {names} 上结果是转置的：z[j, i] 应为 x[i] + y[j]，即 x[None, :] + y[:, None]（x 沿列、y 沿行）；"
                "写成了 x[:, None] + y[None, :]。")
    if key == "store_out_of_bounds":
        return (f"{names} 上 kernel 写到了 z 的末尾之外：z 之后的 {c['changed']} 个元素被改写（评分方逐位比较了 z 之后的哨兵区，"
                f"写入值 {c['value']}）。这个用例 N0={c['N0']}、B0={c['B0']}（最后一块多出 {c['cols_past_end']} 列），"
                f"N1={c['N1']}、B1={c['B1']}（最后一块多出 {c['rows_past_end']} 行）："
                "tl.store 的 mask 不完整。二维的 store 需要两个方向的 mask：mask_y[:, None] & mask_x[None, :]。"
                "缺列方向时，越过行尾的元素会写进下一行的开头（最后一行则写到 z 之外）；缺行方向时写到 z 的末尾之外。")
    return (f"在 {names} 上结果不对（{c['case']}：z[{c['row']},{c['col']}] = {c['observed']:.6g}，正确 {c['expected']:.6g}，"
            f"{c['unwritten']} 个元素从未写入），不符合已知误区的特征：检查两个 program_id、两个方向的偏移、广播方向与行步长。")
