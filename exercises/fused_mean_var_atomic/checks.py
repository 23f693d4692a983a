"""Fused mean/variance with two atomics, trusted side: inputs, the float64 reference, diagnoses.

The kernel's only cross-program state is two scratch buffers (Σx and Σx² per row) that the
caller owns. Every wrong answer we know leaves a signature in the two statistics the host
returns, computed here in float64 from the case's input:

- scratch not zeroed, after k calls on the same buffers: Σx and Σx² are k times too large
  (mean·k, var = k·E[x²] − k²·mean²); only Σx² not zeroed: mean right, var = k·E[x²] − mean²;
- the nonlinear step applied per program and atomic-added: each program's own variance
  (about its chunk mean) summed over the G programs, or the identity applied to the partial
  sums (Σ_p [S2_p/N − (S1_p/N)²]), whose error is about mean²·(1 − 1/G);
- host combine mistakes: mean not squared (E[x²] − mean), Bessel (N − 1).

A candidate explains a case when it reproduces every row's mean and variance to float32
accuracy (relative 1e-3, with a floor of 1e-5·E[x²] for the cancellation in E[x²] − mean²).
"""
from __future__ import annotations

import numpy as np

from service.grading.diagnose import CaseEvidence
from service.grading.inputs import draw_rows
from service.report import Diagnosis

DEFAULT_BLOCK = 128  # mean_var_atomic's default `block`


def make_inputs(case, seed: int) -> dict[str, np.ndarray]:
    """x as the case's data says; both scratch buffers start zeroed (as a fresh caller gives them)."""
    x = draw_rows(case, seed)
    return {"x": x, "sums": np.zeros(case.rows, np.float32), "sumsqs": np.zeros(case.rows, np.float32)}


def reference(x: np.ndarray, sums: np.ndarray, sumsqs: np.ndarray) -> dict[str, np.ndarray]:
    """Population mean and variance per row, in float64 (the scratch buffers are not outputs)."""
    x = np.asarray(x, dtype=np.float64)
    return {"mean": x.mean(axis=1), "var": x.var(axis=1)}


def _chunks(x: np.ndarray, block: int) -> list[np.ndarray]:
    return [x[:, start:start + block] for start in range(0, x.shape[1], block)]


def _candidates(x: np.ndarray, block: int, calls: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """(mean, var) per row that each known wrong answer would return, in float64."""
    rows, n = x.shape
    s1, s2 = x.sum(axis=1), (x * x).sum(axis=1)
    mean, ex2 = s1 / n, s2 / n
    chunks = _chunks(x, block)
    found: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    if calls > 1:
        k = float(calls)
        found["scratch_not_zeroed"] = (k * mean, k * ex2 - (k * mean) ** 2)
        found["sumsq_not_zeroed"] = (mean, k * ex2 - mean**2)
        found["sum_not_zeroed"] = (k * mean, ex2 - (k * mean) ** 2)
    if len(chunks) > 1:
        found["variances_summed"] = (mean, sum(c.var(axis=1) for c in chunks))
        found["nonlinear_per_program"] = (mean, sum((c * c).sum(axis=1) / n - (c.sum(axis=1) / n) ** 2 for c in chunks))
    found["mean_not_squared"] = (mean, ex2 - mean)
    if n > 1:
        found["bessel"] = (mean, (ex2 - mean**2) * n / (n - 1))
    return found


def _close(observed: np.ndarray, predicted: np.ndarray, floor: np.ndarray) -> bool:
    return bool(np.all(np.abs(observed - predicted) <= 1e-3 * (np.abs(observed) + np.abs(predicted)) + floor))


def diagnose(evidence: list[CaseEvidence]) -> list[Diagnosis]:
    findings: dict[str, list[dict]] = {}
    for ev in evidence:
        if ev.passed or ev.observed is None:
            continue
        case = ev.case
        block = int(case.kwargs.get("block", DEFAULT_BLOCK))
        x = ev.inputs
        rows, n = x.shape
        mean_true, var_true = ev.expected["mean"], ev.expected["var"]
        mean_obs = ev.observed["mean"].astype(np.float64).reshape(-1)
        var_obs = ev.observed["var"].astype(np.float64).reshape(-1)
        programs = -(-n // block)
        where = {"case": case.id, "N": n, "BLOCK": block, "programs_per_row": programs, "calls": case.calls}
        if mean_obs.shape != mean_true.shape or var_obs.shape != var_true.shape:
            continue
        if not (np.all(np.isfinite(mean_obs)) and np.all(np.isfinite(var_obs))):
            findings.setdefault("nonfinite_output", []).append(where)
            continue
        ex2 = (x * x).mean(axis=1)
        floor_mean = 1e-5 * np.sqrt(ex2) + 1e-6
        floor_var = 1e-5 * ex2 + 1e-6
        best = None
        for name, (mean_pred, var_pred) in _candidates(x, block, case.calls).items():
            if _close(mean_obs, mean_pred, floor_mean) and _close(var_obs, var_pred, floor_var):
                best = name
                break
        err_var = var_obs - var_true
        row = int(np.argmax(np.abs(err_var) + np.abs(mean_obs - mean_true)))
        numbers = {**where, "row": row, "mean": float(mean_true[row]), "mean_obs": float(mean_obs[row]),
                   "var": float(var_true[row]), "var_obs": float(var_obs[row]), "ex2": float(ex2[row]),
                   "mean_ratio": float(mean_obs[row] / mean_true[row]) if mean_true[row] else float("nan")}
        findings.setdefault(best or "unexplained", []).append(numbers)
    return [Diagnosis(id=key, message=_message(key, cases), evidence={"cases": cases}) for key, cases in findings.items()]


def _message(key: str, cases: list[dict]) -> str:
    names = "、".join(d["case"] for d in cases)
    c = max(cases, key=lambda d: abs(d.get("var_obs", 0.0) - d.get("var", 0.0)))
    at = (f"以 {c['case']} 为例（N={c['N']}，BLOCK={c['BLOCK']}，每行 {c['programs_per_row']} 个 program，"
          f"第 {c.get('row', 0)} 行）") if "row" in c else f"以 {c['case']} 为例"
    if key == "scratch_not_zeroed":
        return (
            f"{names} 在同一组缓冲区上连续调用了 {c['calls']} 次，只有最后一次的结果被比较：{at}，"
            f"均值得到 {c['mean_obs']:.6g}，正确是 {c['mean']:.6g}（{c['mean_ratio']:.3g} 倍），"
            f"与“Σx、Σx² 都是 {c['calls']} 次调用之和”吻合。atomic_add 是在缓冲区原有的值上累加：launch 之前没有把两个 "
            "scratch 缓冲区清零，第二次调用就把第一次的和也算了进去。第一次调用时缓冲区恰好是 0，所以给定检查能通过——"
            "这正是文章说的最糟糕的、依赖调用顺序的错误。每次 launch 前都要把两个缓冲区都清零（zero_）。"
        )
    if key == "sumsq_not_zeroed":
        return (
            f"{names} 在同一组缓冲区上调用了 {c['calls']} 次：{at}，均值正确（{c['mean_obs']:.6g}），"
            f"方差却是 {c['var_obs']:.6g}，正确是 {c['var']:.6g}，与 {c['calls']}·E[x²] − mean² 吻合（E[x²] = {c['ex2']:.6g}）："
            "只清零了 Σx 的缓冲区，Σx² 的缓冲区保留了上一次调用的和。两个累加器都是通过 atomic_add 累加的，launch 前两个都必须清零。"
        )
    if key == "sum_not_zeroed":
        return (
            f"{names} 在同一组缓冲区上调用了 {c['calls']} 次：{at}，均值是 {c['mean_obs']:.6g}（正确 {c['mean']:.6g}），"
            "Σx 的缓冲区保留了上一次调用的和，Σx² 的却被清零了。两个累加器都是通过 atomic_add 累加的，launch 前两个都必须清零。"
        )
    if key == "variances_summed":
        return (
            f"在 {names} 上方差偏大：{at}，得到 {c['var_obs']:.6g}，正确是 {c['var']:.6g}，与“每个 program 各自算出本块的方差，"
            "再 atomic_add 加起来”吻合（约为 program 个数倍）。方差不是线性的：Var(A ∪ B) ≠ Var(A) + Var(B)，各块方差不能跨 program "
            "相加。只有 Σx、Σx² 是线性的，应该由 atomic 累加；E[x²] − mean² 要在 host 上、所有 program 合并完之后再算。"
        )
    if key == "nonlinear_per_program":
        return (
            f"在 {names} 上方差偏小：{at}，得到 {c['var_obs']:.6g}，正确是 {c['var']:.6g}，与“每个 program 用自己的部分和算 "
            f"S2_p/N − (S1_p/N)²，再 atomic_add”吻合：这样减掉的是 Σ_p (S1_p/N)²，而不是 (Σ_p S1_p/N)²，差约 mean²·(1 − 1/G)"
            f"（这一行 mean = {c['mean']:.4g}）。均值接近 0 的随机数据上这个差很小，所以给定检查能碰巧通过；均值一大就暴露。"
            "非线性的一步（平方、相减）只能在跨 program 合并完成之后、在 host 上做；kernel 只累加线性的 Σx、Σx²。"
        )
    if key == "mean_not_squared":
        return (
            f"在 {names} 上方差不对：{at}，得到 {c['var_obs']:.6g}，正确是 {c['var']:.6g}，与 E[x²] − mean 吻合：总体方差是 "
            "Σx²/N − mean²，均值要平方。"
        )
    if key == "bessel":
        return (
            f"在 {names} 上方差约为正确值的 N/(N−1) 倍：用了样本方差（分母 N − 1）。文章要求的是总体方差（分母 N）。"
        )
    if key == "nonfinite_output":
        return (
            f"在 {names} 上输出了 NaN 或 inf，而正确结果是有限值（{c['case']}：N = {c['N']}）："
            "检查是否除以了 0（例如 N = 1 时的 N − 1），或读到了 padding 之外的数据。"
        )
    return (
        f"在 {names} 上结果不对（{at}：均值 {c.get('mean_obs', float('nan')):.6g}，正确 {c.get('mean', float('nan')):.6g}；"
        f"方差 {c.get('var_obs', float('nan')):.6g}，正确 {c.get('var', float('nan')):.6g}），且不符合已知误区的特征："
        "请检查两个累加器各自累加的是什么、launch 前是否清零、host 上的合成公式。"
    )
