"""Welford/Chan chunk merge (lesson 6, Q3 extension), trusted side: inputs, reference, diagnoses.

One program walks its row in BLOCK-sized chunks; each chunk gives (n_b, mean_b, M2_b) and is
merged into the running (n, mean, M2) with Chan's formula

    n' = n + n_b,  delta = mean_b − mean,  mean' = mean + delta·n_b/n',
    M2' = M2 + M2_b + delta²·n·n_b/n'.

The known wrong answers are replayed here in float64 on the case's input, chunk by chunk, so a
diagnosis can say which one the observed numbers match: the last chunk counted as BLOCK lanes,
padding lanes left in the chunk's M2 (each adds mean_b², lesson 6's re-mask), the delta term
dropped or weighted n·n_b (not divided by n'). The naive chunk formula Σx² − n_b·mean_b² cannot
be replayed in float64 (its error *is* float32 rounding): its signature is a mean that is right
and a variance whose error is of the order of float32's spacing at mean², on a row whose
variance is many orders of magnitude below mean².
"""
from __future__ import annotations

import numpy as np

from service.grading.diagnose import CaseEvidence
from service.grading.inputs import draw_rows
from service.report import Diagnosis

DEFAULT_BLOCK = 64  # welford_mean_var's default `block`


def make_inputs(case, seed: int) -> dict[str, np.ndarray]:
    """Rows as the case's data says; `params.chunk_offsets: [lo, hi]` adds one offset per BLOCK chunk
    (a staircase), so the chunk means differ and the merge's delta term carries most of the variance."""
    x = draw_rows(case, seed).astype(np.float64)
    offsets = case.params.get("chunk_offsets")
    if offsets is not None:
        block = int(case.kwargs.get("block", DEFAULT_BLOCK))
        rng = np.random.default_rng(seed + 1)
        for start in range(0, case.cols, block):
            x[:, start:start + block] += rng.uniform(float(offsets[0]), float(offsets[1]), size=(case.rows, 1))
    return {"x": x.astype(np.float32)}


def reference(x: np.ndarray) -> dict[str, np.ndarray]:
    """Population mean and variance per row, in float64."""
    x = np.asarray(x, dtype=np.float64)
    return {"mean": x.mean(axis=1), "var": x.var(axis=1)}


def _merge(x: np.ndarray, block: int, *, count: str = "valid", remask: bool = True,
           delta_term: str = "chan") -> tuple[np.ndarray, np.ndarray]:
    """Chunked merge in float64, with one of the known mistakes switched on."""
    rows, n_total = x.shape
    n = np.zeros(rows)
    mean = np.zeros(rows)
    m2 = np.zeros(rows)
    for start in range(0, n_total, block):
        chunk = x[:, start:start + block]
        valid = chunk.shape[1]
        n_b = float(block if count == "block" else valid)
        mean_b = chunk.sum(axis=1) / n_b
        m2_b = ((chunk - mean_b[:, None]) ** 2).sum(axis=1)
        if not remask:
            m2_b = m2_b + (block - valid) * mean_b**2  # padding lanes: 0 − mean_b, squared
        n_new = n + n_b
        delta = mean_b - mean
        mean = mean + delta * n_b / n_new
        if delta_term == "chan":
            m2 = m2 + m2_b + delta * delta * n * n_b / n_new
        elif delta_term == "none":
            m2 = m2 + m2_b
        elif delta_term == "no_division":
            m2 = m2 + m2_b + delta * delta * n * n_b
        n = n_new
    return mean, m2 / n


_CANDIDATES = {
    "last_chunk_counted_as_block": {"count": "block"},
    "chunk_m2_not_remasked": {"remask": False},
    "delta_term_missing": {"delta_term": "none"},
    "delta_weight_wrong": {"delta_term": "no_division"},
}


def _close(observed: np.ndarray, predicted: np.ndarray, floor: np.ndarray | float, rel: float = 1e-4) -> bool:
    return bool(np.all(np.abs(observed - predicted) <= rel * (np.abs(observed) + np.abs(predicted)) + floor))


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
        if mean_obs.shape != mean_true.shape or var_obs.shape != var_true.shape:
            continue
        chunks = -(-n // block)
        where = {"case": case.id, "N": n, "BLOCK": block, "chunks": chunks, "last_chunk": n - (chunks - 1) * block}
        if not (np.all(np.isfinite(mean_obs)) and np.all(np.isfinite(var_obs))):
            findings.setdefault("nonfinite_output", []).append(where)
            continue
        ex2 = (x * x).mean(axis=1)
        row = int(np.argmax(np.abs(var_obs - var_true) / (np.abs(var_true) + 1e-30)))
        numbers = {**where, "row": row, "mean": float(mean_true[row]), "mean_obs": float(mean_obs[row]),
                   "var": float(var_true[row]), "var_obs": float(var_obs[row])}
        # float32 noise of a chunked two-pass kernel: the mean is rounded to ~1e-6 of its size, and
        # the variance inherits that rounding squared.
        floor_mean = 1e-6 * np.sqrt(ex2) + 1e-7
        floor_var = 1e-13 * ex2 + 1e-9
        found = None
        for name, switches in _CANDIDATES.items():
            mean_pred, var_pred = _merge(x, block, **switches)
            if _close(mean_pred, mean_true, 0.0, rel=1e-7) and _close(var_pred, var_true, 0.0, rel=1e-7):
                continue  # on this input the mistake changes nothing: it cannot explain a failure
            if _close(mean_obs, mean_pred, floor_mean) and _close(var_obs, var_pred, floor_var):
                found = name
                numbers["var_pred"] = float(var_pred[row])
                numbers["mean_pred"] = float(mean_pred[row])
                break
        if found is None:
            mean_ok = _close(mean_obs, mean_true, floor_mean)
            # float32 spacing at mean²: what a difference of two numbers of that size is rounded to
            spacing = np.spacing((mean_true**2).astype(np.float32)).astype(np.float64)
            err = np.abs(var_obs - var_true)
            if mean_ok and np.max(mean_true**2 / (var_true + 1e-30)) > 1e6:
                numbers["mean_sq"] = float(mean_true[row] ** 2)
                numbers["spacing"] = float(spacing[row])
                numbers["ratio"] = float(mean_true[row] ** 2 / var_true[row]) if var_true[row] > 0 else float("inf")
                numbers["mean_ulp"] = float(np.spacing(np.float32(abs(mean_true[row]))))
                numbers["max_err"] = float(np.max(err))
                if np.max(err) >= 1e-2 * spacing[row] and np.all(err <= 1e3 * spacing):
                    found = "cancellation"
                elif np.max(err) < 1e-2 * spacing[row]:
                    found = "rounding_amplified"
        findings.setdefault(found or "unexplained", []).append(numbers)
    return [Diagnosis(id=key, message=_message(key, cases), evidence={"cases": cases}) for key, cases in findings.items()]


def _message(key: str, cases: list[dict]) -> str:
    names = "、".join(d["case"] for d in cases)
    c = max(cases, key=lambda d: abs(d.get("var_obs", 0.0) - d.get("var", 0.0)))
    at = (f"以 {c['case']} 为例（N={c['N']}，BLOCK={c['BLOCK']}，{c['chunks']} 块，最后一块 {c['last_chunk']} 个有效 lane，"
          f"第 {c.get('row', 0)} 行）")
    got = (f"均值 {c.get('mean_obs', float('nan')):.6g}（正确 {c.get('mean', float('nan')):.6g}），"
           f"方差 {c.get('var_obs', float('nan')):.6g}（正确 {c.get('var', float('nan')):.6g}）")
    if key == "cancellation":
        return (
            f"在 {names} 上均值正确、方差完全不对：{at}，{got}。这一行 mean² ≈ {c['mean_sq']:.4g}，是方差的 {c['ratio']:.3g} 倍；"
            f"float32 在 mean² 附近相邻两个数相差 {c['spacing']:.3g}，比真实方差还大。块内用了 Σx² − n_b·mean_b²（E[x²] − E[x]²）："
            "两个几乎相等的大数相减，剩下的只有舍入误差（灾难性抵消），甚至是负数。块内 M2_b 要先减 mean_b 再平方（两遍），"
            "跨块再用 Chan 的公式合并 (n, mean, M2)。"
        )
    if key == "rounding_amplified":
        return (
            f"在 {names} 上均值正确、方差偏了 {c['max_err']:.3g}：{at}，{got}。这远小于 E[x²] − E[x]² 抵消时的量级"
            f"（mean² 附近的 float32 间距是 {c['spacing']:.3g}），但比正确合并的误差大得多：float32 里块均值本身只精确到约 "
            f"{c['mean_ulp']:.3g}（均值附近的间距），这些舍入通过 delta 进入修正项；Chan 的权重 n·n_b/(n + n_b) 不会放大它，"
            "权重写错（例如没有除以 n + n_b）就会随已合并的元素个数放大。请检查合并公式中修正项的权重。"
        )
    if key == "last_chunk_counted_as_block":
        return (
            f"在 {names} 上结果与“每一块都按 BLOCK 个元素计数”吻合：{at}，{got}。N 不是 BLOCK 的整数倍时，"
            f"最后一块只有 {c['last_chunk']} 个有效 lane：n_b 必须是有效 lane 的个数（例如 tl.sum(tl.where(mask, 1.0, 0.0))），"
            "否则 mean_b 的分母、合并权重 n_b/n 和最终的 n 都错了。"
        )
    if key == "chunk_m2_not_remasked":
        return (
            f"在 {names} 上方差偏大，与“padding lane 也算进了块内 M2_b”吻合：{at}，{got}（按这个错误推算是 {c['var_pred']:.6g}）。"
            "padding lane 以 0.0 载入，减去 mean_b 后是 −mean_b，平方后是 mean_b²：每个 padding lane 给 M2_b 多加 mean_b²"
            "（第 6 课的二次 mask）。块内的平方项要用 tl.where(mask, …, 0.0) 清零后再求和。"
        )
    if key == "delta_term_missing":
        return (
            f"在 {names} 上方差偏小，与“合并时只把各块的 M2 相加”吻合：{at}，{got}（按这个错误推算是 {c['var_pred']:.6g}）。"
            "每块的 M2_b 只度量块内相对于本块均值 mean_b 的偏差；各块均值不同时，相对于合并后均值还多出块间项 "
            "delta²·n·n_b/(n + n_b)，delta = mean_b − mean。Chan 的合并公式必须加上这一项。"
        )
    if key == "delta_weight_wrong":
        return (
            f"在 {names} 上方差偏大，与“修正项写成 delta²·n·n_b（没有除以 n + n_b）”吻合：{at}，{got}"
            f"（按这个错误推算是 {c['var_pred']:.6g}）。块间项的权重是 n·n_b/(n + n_b)：两部分各自的元素数之积除以合并后的总数。"
        )
    if key == "nonfinite_output":
        return (
            f"在 {names} 上输出了 NaN 或 inf，而正确结果是有限值（{c['case']}：N = {c['N']}，BLOCK = {c['BLOCK']}）："
            "第一块合并时 n = 0，检查是否除以了 n（而不是 n + n_b），或者 n_b 可能为 0。"
        )
    return (
        f"在 {names} 上结果不对（{at}：{got}），且不符合已知误区的特征："
        "请逐块检查 n_b、mean_b、M2_b 是否只统计有效 lane，以及 Chan 合并公式的每一项。"
    )
