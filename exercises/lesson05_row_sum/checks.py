"""Lesson 5, trusted side: the float64 reference and the signatures of the lesson's misconceptions.

A row-sum kernel can only go wrong in three places, one per blank, and each leaves its own
fingerprint in the observed sums `s`:

- padding value `other = c` (not the additive identity 0): every row is off by exactly
  `(BLOCK - N) * c`, the same amount in every row; `c = (s - ref) / (BLOCK - N)` names the fill
  (1.0, a huge negative "max identity", ...). An infinite fill makes every sum ±inf.
- mask: lanes `[0, k)` are summed, `s = prefix_k(x)`; k = N - 1 drops the last lane, a fixed k
  across different N is a hard-coded width.
- row address: on a strided case (a view of a wider buffer whose extra columns hold NaN) the
  kernel's reads are replayed on that buffer: row r read from `r * N` instead of `r * stride`
  hits the NaN columns in every row but row 0; a mask of `cols < stride` reads them in every row.
"""
from __future__ import annotations

import numpy as np

from service.grading.diagnose import CaseEvidence
from service.report import Diagnosis


def reference(x: np.ndarray) -> dict[str, np.ndarray]:
    """Row sums in float64."""
    return {"sums": np.asarray(x, dtype=np.float64).sum(axis=1)}


def _close(observed: np.ndarray, predicted: np.ndarray, scale: np.ndarray | float) -> bool:
    """observed ≈ predicted in every row (fp32 kernels: ~1e-6 relative to the row's magnitude)."""
    both_nan = np.isnan(observed) & np.isnan(predicted)
    same_inf = np.isinf(observed) & (observed == predicted)
    finite = np.isfinite(observed) & np.isfinite(predicted)
    ok = np.zeros(observed.shape, dtype=bool)
    ok[finite] = np.abs(observed[finite] - predicted[finite]) <= 1e-3 * np.broadcast_to(scale, observed.shape)[finite] + 1e-6
    return bool(np.all(ok | both_nan | same_inf))


def _replay(buffer: np.ndarray, rows: int, step: int, lanes: int) -> tuple[np.ndarray, np.ndarray]:
    """Sums a kernel gets that reads `lanes` elements from `row * step` of the flat buffer;
    NaN marks rows whose read would leave the buffer (not predictable: skipped when comparing)."""
    out = np.full(rows, np.nan)
    known = np.zeros(rows, dtype=bool)
    for r in range(rows):
        start = r * step
        if start + lanes <= buffer.size:
            out[r] = buffer[start:start + lanes].sum()
            known[r] = True
    return out, known


def _strided_reading(ev: CaseEvidence, s_obs: np.ndarray) -> tuple[str, dict] | None:
    """Which wrong way of addressing the wider buffer explains the observed sums."""
    case = ev.case
    rows, n, stride, block = case.rows, case.cols, case.row_stride, case.block
    wide = np.full((rows, stride), np.nan)
    wide[:, :n] = ev.inputs
    flat = wide.ravel()
    candidates = [
        ("row_stride_is_n", n, n),
        ("row_stride_is_block", block, n),
        ("mask_too_wide", stride, min(stride, block)),  # cols < stride (cols < BLOCK reads the same NaN)
    ]
    for key, step, lanes in candidates:
        if step == stride and lanes == n:
            continue
        predicted, known = _replay(flat, rows, step, lanes)
        if known.sum() < 2:
            continue
        scale = np.abs(ev.inputs).sum(axis=1)[known] + 1.0
        if _close(s_obs[known], predicted[known], scale):
            nan_rows = [int(r) for r in np.flatnonzero(np.isnan(s_obs))]
            return key, {"step": step, "lanes": lanes, "nan_rows": nan_rows[:12], "nan_row_count": len(nan_rows)}
    return None


def _lanes_counted(x: np.ndarray, s_obs: np.ndarray) -> int | None:
    """The k < N for which 'lanes [0, k) were summed' explains every row, if one does."""
    rows, n = x.shape
    prefix = np.concatenate([np.zeros((rows, 1)), np.cumsum(x, axis=1)], axis=1)
    scale = np.abs(x).sum(axis=1) + 1.0
    for k in range(n):
        if _close(s_obs, prefix[:, k], scale):
            return k
    return None


def diagnose(evidence: list[CaseEvidence]) -> list[Diagnosis]:
    findings: dict[str, list[dict]] = {}
    lane_counts: list[tuple[CaseEvidence, int]] = []

    for ev in evidence:
        if ev.passed or ev.observed is None:
            continue
        case = ev.case
        n, block = case.cols, case.block
        x = ev.inputs
        s_true = ev.expected["sums"]
        s_obs = ev.observed["sums"].astype(np.float64)
        where = {"case": case.id, "N": n, "BLOCK": block, "rows": case.rows}
        if case.stride is not None:
            where["stride"] = case.stride

        if case.stride is not None:
            reading = _strided_reading(ev, s_obs)
            if reading is not None:
                key, numbers = reading
                findings.setdefault(key, []).append({**where, **numbers})
                continue
        if not np.all(np.isfinite(s_obs)):
            if block > n and np.all(np.isinf(s_obs)) and len(set(np.sign(s_obs))) == 1:
                findings.setdefault("padding_infinite", []).append({**where, "value": float(s_obs[0]), "padding": block - n})
            else:
                bad = [int(r) for r in np.flatnonzero(~np.isfinite(s_obs))]
                findings.setdefault("nonfinite_output", []).append({**where, "rows_bad": bad[:12]})
            continue

        diff = s_obs - s_true
        worst = int(np.argmax(np.abs(diff)))
        if block > n:
            per_lane = diff / (block - n)
            c = float(np.median(per_lane))
            slack = (1e-3 * (np.abs(x).sum(axis=1) + np.abs(s_obs)) + 1e-4) / (block - n)
            if abs(c) > 0 and np.all(np.abs(per_lane - c) <= 1e-3 * abs(c) + slack):
                findings.setdefault("padding_not_identity", []).append({
                    **where, "padding": block - n, "other": c, "row": worst,
                    "offset": float(diff[worst]), "predicted_offset": (block - n) * c})
                continue
        k = _lanes_counted(x, s_obs)
        if k is not None:
            lane_counts.append((ev, k))
            continue
        findings.setdefault("unexplained_sum", []).append({**where, "row": worst, "max_abs_err": float(abs(diff[worst]))})

    for ev, k in lane_counts:
        n, block = ev.case.cols, ev.case.block
        diff = ev.observed["sums"].astype(np.float64) - ev.expected["sums"]
        worst = int(np.argmax(np.abs(diff)))
        where = {"case": ev.case.id, "N": n, "BLOCK": block, "lanes_counted": k, "row": worst,
                 "missing": float(-diff[worst])}
        other_ns = {e.case.cols for e, kk in lane_counts if kk == k}
        if len(other_ns) >= 2 and k != n - 1:
            findings.setdefault("hardcoded_width", []).append(where)
        elif k == n - 1:
            findings.setdefault("drops_last_lane", []).append(where)
        else:
            findings.setdefault("wrong_lane_count", []).append(where)

    return [Diagnosis(id=key, message=_message(key, cases), evidence={"cases": cases}) for key, cases in findings.items()]


def _message(key: str, cases: list[dict]) -> str:
    names = "、".join(d["case"] for d in cases)
    if key == "padding_not_identity":
        c = max(cases, key=lambda d: d["padding"])
        big_negative = c["other"] < -1e6
        return (
            f"在 {names} 上，每一行的和都偏离了同一个量。以 {c['case']} 为例（N={c['N']}，BLOCK={c['BLOCK']}，"
            f"{c['padding']} 个 padding lane）：第 {c['row']} 行多出 {c['offset']:.6g}，"
            f"恰好是 (BLOCK−N)·other = {c['padding']} × {c['other']:.4g} = {c['predicted_offset']:.6g}。"
            f"padding lane 被填成了 {c['other']:.4g}，它们和有效 lane 一起进了 tl.sum。"
            + ("这是求最大值时的思路（max 的单位元是 −inf，这里用了一个极大的负数代替）；" if big_negative else "")
            + "求和的单位元是 0：other=0.0 才能让 padding lane 对和没有任何贡献。"
        )
    if key == "padding_infinite":
        c = cases[0]
        return (
            f"在 {names} 上，每一行的和都是 {c['value']:g}，而正确结果是有限值：{c['case']} 有 {c['padding']} 个 padding lane，"
            "它们被填成了无穷大，x + (−inf) = −inf。−inf 是 max 归约的单位元，不是 sum 的：求和时 other 必须是 0.0。"
        )
    if key == "row_stride_is_n":
        c = cases[0]
        return (
            f"在 {names} 上，第 0 行正确，其余 {c['nan_row_count']} 行是 NaN（{c['case']}：N={c['N']}，行步长 stride={c['stride']}）。"
            f"这与“第 row 行从 row·N = row·{c['N']} 开始读”完全吻合：输入是更宽张量的视图，相邻两行在内存里相隔 stride={c['stride']} 个元素，"
            f"不是 N 个；用 N 算地址，第 1 行起就读进了上一行末尾之后的 {c['stride'] - c['N']} 列别的数据（这里是 NaN）。"
            "行起点必须是 x + row * stride_m（wrapper 传入的 x.stride(0)）。给定检查是连续张量（stride = N），所以碰巧通过。"
        )
    if key == "row_stride_is_block":
        c = cases[0]
        return (
            f"在 {names} 上，结果与“第 row 行从 row·BLOCK 开始读”吻合（{c['case']}：BLOCK={c['BLOCK']}，stride={c['stride']}）："
            "BLOCK 是向量宽度（2 的幂），不是内存里的行距。行起点必须是 x + row * stride_m。"
        )
    if key == "mask_too_wide":
        c = cases[0]
        return (
            f"在 {names} 上，每一行都是 NaN，与“每行读了 {c['lanes']} 个 lane”吻合（{c['case']}：N={c['N']}，stride={c['stride']}）："
            f"掩码放进了 cols ≥ N 的 lane（例如用了行步长 cols < stride 或 cols < BLOCK），第 N…stride−1 列（{c['stride'] - c['N']} 列）"
            "不属于这一行，却被读进来求和。有效列是 cols < N；stride 只决定行起点。"
            "（cols < stride 在连续张量上等于 cols < N，所以给定检查碰巧通过。）"
        )
    if key == "hardcoded_width":
        c = cases[0]
        return (
            f"在宽度不同的多个用例（{names}）上，都只累加了前 {c['lanes_counted']} 个 lane："
            "掩码里写死了宽度，只对某一个 N 碰巧正确。掩码必须由运行时的 N 决定（cols < N）。"
        )
    if key == "drops_last_lane":
        c = cases[0]
        return (
            f"在 {names} 上行和偏小：只累加了前 N−1 个 lane（{c['case']} 第 {c['row']} 行少了 {c['missing']:.6g}，正是最后一个有效元素）。"
            "下标从 0 开始，有效 lane 是 0…N−1，掩码应是 cols < N，不是 cols < N − 1。"
        )
    if key == "wrong_lane_count":
        c = cases[0]
        return (
            f"在 {names} 上，行和与“只累加前 {c['lanes_counted']} 个 lane”吻合（正确是前 N = {c['N']} 个）：掩码的范围不对。"
        )
    if key == "nonfinite_output":
        c = cases[0]
        return (
            f"在 {names} 上输出了 NaN 或 inf（{c['case']} 的第 {c['rows_bad']} 行），而正确结果是有限值："
            "检查是否读到了这一行以外的数据（掩码、行地址），或 padding 填了非有限值。"
        )
    c = cases[0]
    return (
        f"在 {names} 上行和不对（{c['case']}：最大误差 {c.get('max_abs_err', float('nan')):.4g}），"
        "且不符合本课已知误区的特征：请逐 lane 检查行起点（row * stride）、掩码（cols < N）和 padding 的值（other=0.0）。"
    )
