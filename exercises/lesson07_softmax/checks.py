"""Lesson 7, trusted side: the float64 reference and the signatures of the lesson's misconceptions.

The kernel has two blanks, the padding value `other = c` and the shift `s` subtracted before exp.
Each named misconception is replayed in float32 numpy on the case's own rows (padding lanes
appended, the same overflow to inf and underflow to 0 as the kernel) and compared with what the
kernel returned, NaN for NaN:

- padding 0.0 with the max subtracted: the max becomes max(m, 0), and every padding lane adds
  exp(0 - max) to the denominator; relative to the true max m the denominator grows by exactly
  (BLOCK - N) * exp(-m), so every row's probabilities sum to S / (S + (BLOCK - N) * exp(-m)),
  where S = sum_i exp(x_i - m).
- no max subtracted (padding -inf): exp(x) overflows to inf above ln(FLT_MAX) ≈ 88.72
  (inf / inf = NaN) and underflows to 0 for a whole row below ≈ -103.3 (0 / 0 = NaN).
- the row mean subtracted instead of the max: exp(x - mean) still overflows once max - mean > 88.72.

A finite padding value c other than 0 leaves the same fingerprint as 0 with c in its place: the
denominator grows by (BLOCK - N) * exp(c - m), so c = m + ln(extra / (BLOCK - N)) is read off the
observed row sums.
"""
from __future__ import annotations

import numpy as np

from service.grading.diagnose import CaseEvidence
from service.report import Diagnosis

LN_FLT_MAX = float(np.log(np.finfo(np.float32).max))  # 88.72: exp overflows to inf above this
LN_FLT_TINY = float(np.log(np.float32(1.4e-45)))  # -103.28: exp is 0 below this (−87.3 with flush-to-zero)


def reference(x: np.ndarray) -> dict[str, np.ndarray]:
    """Row softmax in float64."""
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return {"y": e / e.sum(axis=1, keepdims=True)}


def _replay(x: np.ndarray, block: int, pad: float, shift: str) -> np.ndarray:
    """The kernel with padding value `pad` and shift `max` / `zero` / `mean`, in float32."""
    rows, n = x.shape
    x32 = x.astype(np.float32)
    full = np.concatenate([x32, np.full((rows, block - n), pad, dtype=np.float32)], axis=1)
    with np.errstate(all="ignore"):
        if shift == "max":
            s = full.max(axis=1, keepdims=True)
        elif shift == "mean":
            s = (x32.sum(axis=1, keepdims=True, dtype=np.float32) / np.float32(n)).astype(np.float32)
        else:
            s = np.zeros((rows, 1), dtype=np.float32)
        e = np.exp(full - s)
        y = e[:, :n] / e.sum(axis=1, keepdims=True, dtype=np.float32)
    return y.astype(np.float64)


def _same(observed: np.ndarray, predicted: np.ndarray) -> bool:
    """NaN where the replay has NaN, inf where it has inf, and close values elsewhere."""
    if not np.array_equal(np.isnan(observed), np.isnan(predicted)):
        return False
    if not np.array_equal(np.isinf(observed), np.isinf(predicted)):
        return False
    finite = np.isfinite(predicted)
    # relative: a replay that gives 0 must not match an output of 1e-24 (tiny, but not underflowed);
    # the floor only absorbs denormals, which a GPU flushes to zero
    return bool(np.all(np.abs(observed[finite] - predicted[finite]) <= 1e-3 * np.abs(predicted[finite]) + 1e-36))


def _padding_value(x: np.ndarray, y_obs: np.ndarray, block: int) -> float | None:
    """The finite padding value c that explains the observed row sums, if one value explains them."""
    n = x.shape[1]
    p = block - n
    if p == 0 or not np.all(np.isfinite(y_obs)):
        return None
    m = x.max(axis=1)
    s = np.exp(x - m[:, None]).sum(axis=1)
    r = y_obs.sum(axis=1)
    usable = (r > 0) & (r < 1 - 1e-4)
    if usable.sum() < max(1, len(r) // 2):
        return None
    c = m[usable] + np.log(s[usable] * (1 / r[usable] - 1) / p)
    centre = float(np.median(c))
    if np.all(np.abs(c - centre) <= 1e-2 * (1 + abs(centre))):
        # the observed shape within each row must be the softmax shape (only the denominator grew)
        shape_ok = np.allclose(y_obs[usable] / r[usable, None], np.exp(x[usable] - m[usable, None]) / s[usable, None],
                               rtol=1e-3, atol=1e-6)
        return centre if shape_ok else None
    return None


def _overflow_rows(x: np.ndarray) -> list[int]:
    return [int(r) for r in np.flatnonzero(x.max(axis=1) > LN_FLT_MAX)]


def _underflow_rows(x: np.ndarray) -> list[int]:
    return [int(r) for r in np.flatnonzero(x.max(axis=1) < LN_FLT_TINY)]


def diagnose(evidence: list[CaseEvidence]) -> list[Diagnosis]:
    findings: dict[str, list[dict]] = {}

    def no_max(where: dict, x: np.ndarray) -> None:
        over, under = _overflow_rows(x), _underflow_rows(x)
        if over:
            r = over[0]
            findings.setdefault("no_max_overflow", []).append(
                {**where, "row": r, "rows": over[:12], "row_max": float(x[r].max())})
        if under:
            r = under[0]
            findings.setdefault("no_max_underflow", []).append(
                {**where, "row": r, "rows": under[:12], "row_max": float(x[r].max())})

    def padding(where: dict, x: np.ndarray, y_obs: np.ndarray, c: float, key: str) -> None:
        n, block = x.shape[1], where["BLOCK"]
        p = block - n
        m = x.max(axis=1)
        s = np.exp(x - m[:, None]).sum(axis=1)
        extra = p * np.exp(c - m)
        r = int(np.argmax(extra / s))
        findings.setdefault(key, []).append({
            **where, "padding": p, "other": c, "row": r, "row_max": float(m[r]), "S": float(s[r]),
            "extra": float(extra[r]), "predicted_row_sum": float(s[r] / (s[r] + extra[r])),
            "observed_row_sum": float(np.sum(y_obs[r])), "padding_is_max": bool(c > m[r])})

    for ev in evidence:
        if ev.passed or ev.observed is None:
            continue
        case = ev.case
        n, block = case.cols, case.block
        x = ev.inputs
        y_obs = ev.observed["y"].astype(np.float64)
        if y_obs.shape != x.shape:
            continue
        where = {"case": case.id, "N": n, "BLOCK": block, "rows": case.rows}

        if block > n and _same(y_obs, _replay(x, block, 0.0, "max")):
            padding(where, x, y_obs, 0.0, "padding_zero")
            continue
        if _same(y_obs, _replay(x, block, -np.inf, "zero")):
            no_max(where, x)
            continue
        if block > n and _same(y_obs, _replay(x, block, 0.0, "zero")):
            padding(where, x, y_obs, 0.0, "padding_zero")
            no_max(where, x)
            continue
        if _same(y_obs, _replay(x, block, -np.inf, "mean")):
            mean = x.mean(axis=1)
            gap = x.max(axis=1) - mean
            r = int(np.argmax(gap))
            findings.setdefault("shift_not_max", []).append(
                {**where, "row": r, "row_max": float(x[r].max()), "row_mean": float(mean[r]), "gap": float(gap[r])})
            continue
        c = _padding_value(x, y_obs, block)
        if c is not None:
            padding(where, x, y_obs, c, "padding_zero" if abs(c) < 1e-3 else "padding_not_neg_inf")
            continue
        if not np.all(np.isfinite(y_obs)):
            bad = [int(r) for r in np.flatnonzero(~np.all(np.isfinite(y_obs), axis=1))]
            findings.setdefault("nonfinite_output", []).append({**where, "rows_bad": bad[:12]})
            continue
        err = np.abs(y_obs - ev.expected["y"])
        r = int(np.argmax(err.max(axis=1)))
        findings.setdefault("unexplained_softmax", []).append(
            {**where, "row": r, "max_abs_err": float(err.max()), "row_sum": float(y_obs[r].sum())})

    return [Diagnosis(id=key, message=_message(key, cases), evidence={"cases": cases}) for key, cases in findings.items()]


def _message(key: str, cases: list[dict]) -> str:
    names = "、".join(d["case"] for d in cases)
    if key in ("padding_zero", "padding_not_neg_inf"):
        # the example row: one whose probabilities still sum to something (not all underflowed to 0)
        c = max(cases, key=lambda d: (d["observed_row_sum"] > 0, d["extra"] / d["S"]))
        if key == "padding_zero":
            head = f"在 {names} 上，padding lane 被填成了 0.0，而不是 −inf。"
            pad = "exp(0 − max)"
        else:
            head = f"在 {names} 上，padding lane 被填成了一个有限值（由各行的和反推约为 {c['other']:.4g}），而不是 −inf。"
            pad = f"exp({c['other']:.4g} − max)"
        max_note = (
            f"这一行的真实最大值 {c['row_max']:.4g} 比 padding 的值还小，padding lane 成了这一行的最大值；"
            if c["padding_is_max"] else ""
        )
        return (
            head + f"以 {c['case']} 第 {c['row']} 行为例（N={c['N']}，BLOCK={c['BLOCK']}，{c['padding']} 个 padding lane）："
            + max_note
            + f"每个 padding lane 都给分母加上 {pad}：以真实最大值为基准，分母多出 (BLOCK−N)·exp({c['other']:.4g} − max) = "
            f"{c['padding']} × exp({c['other']:.4g} − ({c['row_max']:.4g})) = {c['extra']:.4g}，而正确的分母只有 {c['S']:.4g}。"
            f"所以这一行的概率之和是 {c['observed_row_sum']:.4g}（预测 {c['predicted_row_sum']:.4g}），不是 1。"
            "store 的 mask 只挡住了写回，挡不住 padding 进入 max 和 sum：load 时 other 必须是 −inf，"
            "exp(−inf − max) = 0，padding lane 才对 max 和分母都没有贡献。"
        )
    if key == "no_max_overflow":
        c = cases[0]
        return (
            f"在 {names} 上输出了 NaN。以 {c['case']} 第 {c['row']} 行为例：最大的 logit 是 {c['row_max']:.4g}，"
            f"而 float32 的 exp 在 x > ln(3.4e38) ≈ {LN_FLT_MAX:.2f} 时就溢出成 inf，分子分母都是 inf，inf/inf = NaN。"
            "这与“没有减去行最大值”逐元素吻合。softmax(x) = softmax(x − c) 对任何常数 c 成立；"
            "减去行最大值后所有指数 ≤ 0，exp 的值落在 (0, 1]，最大的那一项恰好是 1，既不会溢出，分母也至少是 1。"
        )
    if key == "no_max_underflow":
        c = cases[0]
        return (
            f"在 {names} 上输出了 NaN。以 {c['case']} 第 {c['row']} 行为例：整行最大的 logit 只有 {c['row_max']:.4g}，"
            f"exp 在 float32 下全部下溢为 0（x < {LN_FLT_TINY:.1f} 时 exp(x) 小于最小的正数 1.4e−45），分母是 0，0/0 = NaN。"
            "这与“没有减去行最大值”逐元素吻合。减去行最大值后最大的一项是 exp(0) = 1，分母至少是 1，不会出现 0/0。"
        )
    if key == "shift_not_max":
        c = max(cases, key=lambda d: d["gap"])
        return (
            f"在 {names} 上输出了 NaN，与“减去行均值而不是行最大值”逐元素吻合。以 {c['case']} 第 {c['row']} 行为例："
            f"最大值 {c['row_max']:.4g} 比均值 {c['row_mean']:.4g} 大 {c['gap']:.4g} > {LN_FLT_MAX:.2f}，"
            "exp(max − mean) 仍然溢出成 inf。减去任意常数数学上都对，但只有减去最大值才能保证所有指数 ≤ 0。"
        )
    if key == "nonfinite_output":
        c = cases[0]
        return (
            f"在 {names} 上输出了 NaN 或 inf（{c['case']} 的第 {c['rows_bad']} 行），而正确结果是有限值："
            "检查是否减去了行最大值、padding 是否是 −inf，以及是否读到了这一行以外的数据。"
        )
    c = cases[0]
    return (
        f"在 {names} 上 softmax 不对（{c['case']} 第 {c['row']} 行：最大误差 {c['max_abs_err']:.4g}，这一行的和是 {c['row_sum']:.4g}），"
        "且不符合本课已知误区的特征：请逐 lane 检查 padding 的值、减去的最大值和分母。"
    )
