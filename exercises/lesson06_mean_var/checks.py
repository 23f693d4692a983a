"""Lesson 6, trusted side: the float64 reference and the signatures of the lesson's misconceptions.

Most wrong fills of the re-mask change *which lanes* the second sum counts. So the main signature
reads, from the observed variance, how many lanes were counted: with `S = var_obs * N` the
observed sum of squares and `mu` the row mean, a kernel that counts lanes `[0, k)` gives
`S = sum_{i<min(k,N)} (x_i - mu)^2 + max(0, min(k,BLOCK) - N) * mu^2` (padding lanes hold 0.0,
which becomes -mu, then mu^2). Solving for k names the bug: k = BLOCK is the missing re-mask,
k = N + 1 is `cols <= N`, k = N - 1 drops the last valid lane, and the same k across different N
is a hard-coded width. Masks that depend on values (`values != 0`, `values > 0`) are recognised
by recomputing S over the lanes such a mask keeps.
"""
from __future__ import annotations

import numpy as np

from service.grading.diagnose import CaseEvidence
from service.report import Diagnosis


def reference(x: np.ndarray) -> dict[str, np.ndarray]:
    """Population mean and variance per row, in float64."""
    x = np.asarray(x, dtype=np.float64)
    return {"mean": x.mean(axis=1), "var": x.var(axis=1)}


def _matches(observed: np.ndarray, predicted: np.ndarray, floor: np.ndarray | float = 0.0) -> bool:
    """observed ≈ predicted in every row, relative to their own size (fp32 kernels: ~1e-6)."""
    scale = np.abs(observed) + np.abs(predicted) + floor
    return bool(np.all(np.abs(observed - predicted) <= 1e-3 * scale + 1e-9))


def _lanes_counted(x: np.ndarray, mean: np.ndarray, var_obs: np.ndarray, block: int) -> int | None:
    """The k for which 'lanes [0, k) were counted' explains every row best, if it explains them."""
    rows, n = x.shape
    sq = (x - mean[:, None]) ** 2
    prefix = np.concatenate([np.zeros((rows, 1)), np.cumsum(sq, axis=1)], axis=1)  # prefix[:, k]
    s_obs = var_obs * n
    best, best_residual = None, np.inf
    for k in range(block + 1):
        predicted = prefix[:, min(k, n)] + max(0, min(k, block) - n) * mean**2
        residual = float(np.max(np.abs(s_obs - predicted) / (np.abs(s_obs) + np.abs(predicted) + 1e-12)))
        if residual < best_residual:
            best, best_residual = k, residual
    if best is None or best == n:
        return None
    predicted = prefix[:, min(best, n)] + max(0, min(best, block) - n) * mean**2
    return best if _matches(s_obs, predicted, 1e-6 * prefix[:, -1]) else None


def _value_mask(x: np.ndarray, mean: np.ndarray, var_obs: np.ndarray, block: int) -> str | None:
    n = x.shape[1]
    sq = (x - mean[:, None]) ** 2
    s_obs = var_obs * n
    pad = (block - n) * mean**2
    candidates = {
        "values != 0": (x != 0, False),
        "values > 0": (x > 0, False),
        "values >= 0": (x >= 0, True),
        "values < 0": (x < 0, False),
    }
    for label, (keep, pads_kept) in candidates.items():
        predicted = np.where(keep, sq, 0.0).sum(axis=1) + (pad if pads_kept else 0.0)
        if np.all(keep) and not pads_kept:
            continue  # keeps exactly the valid lanes here: indistinguishable from the right mask
        if _matches(s_obs, predicted, 1e-6 * sq.sum(axis=1)):
            return label
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
        mean_true, var_true = ev.expected["mean"], ev.expected["var"]
        mean_obs = ev.observed["mean"].astype(np.float64)
        var_obs = ev.observed["var"].astype(np.float64)
        where = {"case": case.id, "N": n, "BLOCK": block, "rows": case.rows}

        if not (np.all(np.isfinite(mean_obs)) and np.all(np.isfinite(var_obs))):
            findings.setdefault("nonfinite_output", []).append(where)
            continue
        mean_ok = _matches(mean_obs, mean_true, 1e-3)
        if not mean_ok:
            if block != n and _matches(mean_obs, mean_true * n / block, 1e-3):
                findings.setdefault("divide_by_block", []).append({**where, "ratio": n / block})
            continue
        if _matches(var_obs, var_true, 1e-6):
            continue
        if n > 1 and _matches(var_obs, var_true * n / (n - 1)):
            findings.setdefault("bessel", []).append({**where, "ratio": n / (n - 1)})
            continue
        if block != n and _matches(var_obs, var_true * n / block):
            findings.setdefault("divide_by_block", []).append({**where, "ratio": n / block})
            continue
        # Position first: on all-positive rows, "all BLOCK lanes" and "values >= 0" are the same set.
        k = _lanes_counted(x, mean_obs, var_obs, block)
        if k is not None:
            lane_counts.append((ev, k))
            continue
        label = _value_mask(x, mean_obs, var_obs, block)
        if label is not None:
            findings.setdefault("value_based_mask", []).append({**where, "mask": label})
            continue
        findings.setdefault("unexplained_variance", []).append(
            {**where, "max_abs_err": float(np.max(np.abs(var_obs - var_true)))})

    for ev, k in lane_counts:
        n, block = ev.case.cols, ev.case.block
        mean_obs = ev.observed["mean"].astype(np.float64)
        var_obs = ev.observed["var"].astype(np.float64)
        excess = var_obs - ev.expected["var"]
        worst = int(np.argmax(np.abs(excess)))
        where = {"case": ev.case.id, "N": n, "BLOCK": block, "lanes_counted": k, "row": worst,
                 "mean": float(mean_obs[worst]), "excess": float(excess[worst])}
        other_ns = {e.case.cols for e, kk in lane_counts if kk == k}
        if k == block:
            predicted = (block - n) * mean_obs[worst] ** 2 / n
            findings.setdefault("missing_remask", []).append({**where, "predicted_excess": float(predicted)})
        elif len(other_ns) >= 2 and k not in (n + 1, n - 1):
            findings.setdefault("hardcoded_width", []).append(where)
        elif k == n + 1:
            findings.setdefault("off_by_one_le", []).append({**where, "predicted_excess": float(mean_obs[worst] ** 2 / n)})
        elif k == n - 1:
            findings.setdefault("drops_last_lane", []).append(where)
        else:
            findings.setdefault("wrong_lane_count", []).append(where)

    return [Diagnosis(id=key, message=_message(key, cases), evidence={"cases": cases}) for key, cases in findings.items()]


def _message(key: str, cases: list[dict]) -> str:
    c = max(cases, key=lambda d: abs(d.get("excess", 0.0)))
    names = "、".join(d["case"] for d in cases)
    if key == "missing_remask":
        return (
            f"在 {names} 上方差偏大。以 {c['case']} 为例（N={c['N']}，BLOCK={c['BLOCK']}，第 {c['row']} 行均值 ≈ {c['mean']:.4g}）："
            f"方差多出 {c['excess']:.4g}，与 (BLOCK−N)·mean²/N = {c['predicted_excess']:.4g} 吻合。"
            "这说明第二次求和把全部 BLOCK 个 lane 都算进去了：padding lane 加载时是 0.0，中心化后变成 −mean，平方后是 mean²。"
            "load 时的 mask 只保护第一次求和；平方之后必须再用 tl.where(mask, …, 0.0) 把 padding lane 清零（二次 mask）。"
        )
    if key == "off_by_one_le":
        return (
            f"在 {names} 上方差偏大，恰好多算了一个 padding lane（多出 mean²/N，{c['case']} 上 ≈ {c['predicted_excess']:.4g}）。"
            "条件写成了 cols <= N：下标从 0 开始，有效 lane 是 0…N−1，第 N 个 lane 已经是 padding，中心化后贡献 mean²。"
        )
    if key == "drops_last_lane":
        return (
            f"在 {names} 上方差偏小：最后一个有效 lane（下标 N−1）没有被计入第二次求和。"
            "有效 lane 是 cols < N，不是 cols < N − 1。"
        )
    if key == "hardcoded_width":
        return (
            f"在宽度不同的多个用例（{names}）上，第二次求和都只计入了前 {c['lanes_counted']} 个 lane："
            "掩码里写死了宽度，只对某一个 N 碰巧正确。掩码必须由运行时的 N 决定（cols < N，也就是 mask）。"
        )
    if key == "value_based_mask":
        return (
            f"在 {names} 上，方差与只统计满足 `{c['mask']}` 的 lane 的结果吻合：掩码是按数值而不是按位置定义的。"
            "有效数据里也可能有 0 或负数，它们同样必须计入方差；padding 只能由位置（cols < N）识别。"
        )
    if key == "divide_by_block":
        return (
            f"在 {names} 上，结果约为正确值的 N/BLOCK 倍（{c['case']}：{c['ratio']:.4g}）："
            "分母用了 BLOCK（向量宽度）而不是真实元素数 N。"
        )
    if key == "bessel":
        return (
            f"在 {names} 上，方差约为正确值的 N/(N−1) 倍：用了样本方差（Bessel 校正，分母 N−1），本课要求总体方差（分母 N）。"
        )
    if key == "nonfinite_output":
        return f"在 {names} 上输出了 NaN 或 inf，而正确结果是有限值：检查是否读到了 padding 之外的数据，或除以了 0（例如 N = 1 时的 N − 1）。"
    if key == "wrong_lane_count":
        return (
            f"在 {names} 上，方差与“只统计前 {c['lanes_counted']} 个 lane”吻合（正确是前 N = {c['N']} 个）：掩码的范围不对。"
        )
    return (
        f"在 {names} 上方差不对（{c['case']}：最大误差 {c.get('max_abs_err', float('nan')):.4g}），"
        "且不符合本课已知误区的特征：请对照“具体演示”逐 lane 检查 padding 与有效 lane 在两次求和中的贡献。"
    )
