"""Puzzle 8 (Long Softmax), trusted side: inputs, the float64 reference, and signatures.

The signatures recompute, in float64, what each known mistake returns for the same inputs:
online softmax without rescaling the running sum when the max grows; the blog's own
`padding_option='zero'` (padding lanes enter the max and add exp(0 - m) each to the sum);
exp2 without the log2(e) factor (a base-2 softmax); only the first block; no max subtraction
(overflow on large logits).
"""
from __future__ import annotations

import numpy as np

from service.grading.diagnose import (
    ROW_BLOCK_IGNORED, out_of_bounds_en, row_block_ignored, row_block_messages, sentinel_breach,
)
from service.report import Diagnosis

SENTINEL = -1234.5  # what the template's long_softmax keeps after z (B0 rows of it)

LOG2E = 1.4426950408889634


def make_inputs(case, seed):
    rng = np.random.default_rng(seed)
    n0, t = int(case.params["N0"]), int(case.params["T"])
    kind = case.params.get("kind", "normal")
    if kind == "rising":  # every row climbs along T: the running max grows block after block
        x = np.linspace(0.0, 1.0, t)[None, :] * rng.uniform(8.0, 12.0, size=(n0, 1)) + 0.3 * rng.standard_normal((n0, t))
    elif kind == "negative":  # all logits negative: a zero-padded lane becomes the row max
        x = rng.uniform(-8.0, -4.0, size=(n0, t))
    elif kind == "large":  # exp(x) overflows float32 (max ~ 3.4e38 = exp(88.7))
        x = rng.uniform(95.0, 105.0, size=(n0, 1)) + 2.0 * rng.standard_normal((n0, t))
    else:
        x = rng.uniform(-2.0, 2.0, size=(n0, 1)) + 1.5 * rng.standard_normal((n0, t))
    return {"x": x.astype(np.float32)}


def _softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def reference(x):
    return {"z": _softmax(np.asarray(x, dtype=np.float64))}


def _no_rescale(x, b1):
    n0, t = x.shape
    m = np.full(n0, -np.inf)
    s = np.zeros(n0)
    for start in range(0, t, b1):
        blk = x[:, start:start + b1]
        m = np.maximum(m, blk.max(axis=1))
        s = s + np.exp(blk - m[:, None]).sum(axis=1)
    return np.exp(x - m[:, None]) / s[:, None]


def _zero_padding(x, b1):
    t = x.shape[1]
    pad = -t % b1
    m = np.maximum(x.max(axis=1), 0.0) if pad else x.max(axis=1)
    e = np.exp(x - m[:, None])
    s = e.sum(axis=1) + pad * np.exp(-m)
    return e / s[:, None]


def _base2(x):
    e = np.exp2(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _close(observed, predicted):
    ok = np.isfinite(predicted)
    if not ok.any() or not np.all(np.isfinite(observed[ok])):
        return False
    return bool(np.all(np.abs(observed[ok] - predicted[ok]) <= 1e-3 * np.abs(predicted[ok]) + 1e-7))


def diagnose(evidence):
    findings: dict[str, list[dict]] = {}
    for ev in evidence:
        if ev.passed:
            continue
        case = ev.case
        n0, t = int(case.params["N0"]), int(case.params["T"])
        b0, b1 = int(case.kwargs.get("B0", 4)), int(case.kwargs.get("B1", 32))
        where = {"case": case.id, "N0": n0, "T": t, "B0": b0, "B1": b1}
        if ev.observed is None:
            breach = sentinel_breach(ev, data_len=n0 * t, total_len=(n0 + b0) * t, sentinel=SENTINEL)
            if breach is not None:  # evidence in the bytes, not in the error's text
                findings.setdefault("store_out_of_bounds", []).append({**where, "rows_past_end": -n0 % b0, **breach})
            continue
        x = ev.arrays["x"]
        z = ev.observed["z"].astype(np.float64)
        ref = ev.expected["z"]
        xmax = float(x.max())
        correct = np.all(np.abs(z - ref) <= 1e-3 * np.abs(ref) + 1e-6, axis=1)
        ignored = row_block_ignored(correct, np.all(np.isnan(z), axis=1), rows=n0, block=b0)
        if ignored is not None:
            findings.setdefault(ROW_BLOCK_IGNORED, []).append({**where, **ignored})
            continue
        if not np.all(np.isfinite(z)):
            bad = ~np.isfinite(z)
            cols = np.where(bad.any(axis=0))[0]
            if xmax > 88.0 and bad.mean() > 0.5:
                findings.setdefault("overflow_no_max", []).append({**where, "x_max": xmax, "nonfinite": int(bad.sum())})
            elif t > b1 and cols.size and cols.min() >= b1:
                findings.setdefault("first_block_only", []).append({**where, "first_unwritten_col": int(cols.min())})
            else:
                findings.setdefault("nonfinite_output", []).append({**where, "nonfinite": int(bad.sum())})
            continue
        row_sums = z.sum(axis=1)
        candidates = {
            "no_rescale": (_no_rescale(x, b1), t > b1),
            "zero_padding": (_zero_padding(x, b1), -t % b1 != 0),
            "exp2_without_log2e": (_base2(x), True),
        }
        for key, (pred, applies) in candidates.items():
            if applies and _close(z, pred):
                r, c = np.unravel_index(int(np.argmax(np.abs(z - ref))), z.shape)
                findings.setdefault(key, []).append({
                    **where, "row": int(r), "col": int(c), "observed": float(z[r, c]), "expected": float(ref[r, c]),
                    "predicted": float(pred[r, c]), "row_sum": float(row_sums[r]), "pad": -t % b1,
                    "row_max": float(x[r].max())})
                break
        else:
            r, c = np.unravel_index(int(np.argmax(np.abs(z - ref))), z.shape)
            findings.setdefault("unexplained_softmax", []).append({
                **where, "row": int(r), "col": int(c), "observed": float(z[r, c]), "expected": float(ref[r, c]),
                "row_sum": float(row_sums[r])})
    return [Diagnosis(id=k, message=_message(k, v), evidence=_evidence(k, v)) for k, v in findings.items()]


def _evidence(key, cases):
    names = "、".join(d["case"] for d in cases)
    if key == ROW_BLOCK_IGNORED:  # zh and en words, the report shows the exercise's language
        return {"cases": cases, "messages": row_block_messages(cases[0], names)}
    if key == "store_out_of_bounds":
        c = cases[0]
        why = (f"N0={c['N0']} is not a multiple of B0={c['B0']}, so the last program has {c['rows_past_end']} row(s) past "
               "the end of z: the tl.store needs the row mask (rows < N0), or it overwrites whatever lies after z.")
        return {"cases": cases, "messages": {"zh": _message(key, cases), "en": out_of_bounds_en(c, names, why)}}
    return {"cases": cases}


def _message(key, cases):
    c = cases[0]
    names = "、".join(d["case"] for d in cases)
    if key == ROW_BLOCK_IGNORED:
        return row_block_messages(c, names)["zh"]
    if key == "no_rescale":
        return (f"在 {names} 上 softmax 偏小，每行之和只有 {c['row_sum']:.4g}（应为 1）。以 {c['case']} 为例（T={c['T']}，B1={c['B1']}）："
                f"z[{c['row']},{c['col']}] = {c['observed']:.4g}，正确 {c['expected']:.4g}，与“最大值变大时没有把旧的 sum 乘以 "
                f"exp(m_old − m_new)”的预测 {c['predicted']:.4g} 吻合。Online Softmax 里，前面块的 exp(x − m_old) 是相对旧最大值算的，"
                "m 增大后必须先缩放：sum' = sum · exp(m_old − m_new) + Σ exp(x − m_new)。")
    if key == "zero_padding":
        return (f"在 {names} 上结果与“padding lane 按 0 读入”完全吻合（{c['case']}：T={c['T']}，最后一块有 {c['pad']} 个 padding lane，"
                f"第 {c['row']} 行最大值 {c['row_max']:.4g}，z[{c['row']},{c['col']}] = {c['observed']:.4g}，正确 {c['expected']:.4g}，"
                f"预测 {c['predicted']:.4g}）。0 不是 max 与 exp-求和 的单位元：padding 的 0 会参与求最大值，且每个贡献 exp(0 − m)。"
                "对 softmax，越界 lane 要读成 −inf（other=float('-inf')），exp(−inf − m) = 0 才不影响结果。"
                "博客代码用的 padding_option='zero' 正是这个问题（logits 全为负数时最明显）。")
    if key == "exp2_without_log2e":
        return (f"在 {names} 上结果等于以 2 为底的 softmax（{c['case']}：z[{c['row']},{c['col']}] = {c['observed']:.4g}，"
                f"正确 {c['expected']:.4g}，预测 {c['predicted']:.4g}）：用了 tl.exp2(x − m) 却没有乘 log2(e)。"
                "exp(x) = 2^(log2(e)·x)，所以应写 tl.exp2(log2_e * (x − m))，每个用到 exp 的地方都要乘。")
    if key == "overflow_no_max":
        return (f"在 {names} 上输出了 {c['nonfinite']} 个 NaN/inf（{c['case']}：logits 最大值 {c['x_max']:.4g} > 88.7）："
                "float32 的 exp(x) 在 x > 88.7 时溢出为 inf，inf/inf = NaN。数值稳定的 softmax 必须先减去每行最大值：exp(x − max)。")
    if key == "first_block_only":
        return (f"在 {names} 上，从第 {c['first_unwritten_col']} 列起的输出从未写入（仍是 NaN）：T={c['T']} > B1={c['B1']}，"
                "只处理了第一块。两遍都要沿 T 循环 cdiv(T, B1) 次。")
    if key == "store_out_of_bounds":
        return (f"{names} 上 kernel 写到了 z 的末尾之外：z 之后的 {c['changed']} 个元素被改写（评分方逐位比较了 z 之后的哨兵区，"
                f"第一个在 z 末尾之后第 {c['first_past_end'] + 1} 个位置，写入值 {c['value']}）。这个用例 N0={c['N0']} 不是 "
                f"B0={c['B0']} 的整数倍，最后一个 program 有 {c['rows_past_end']} 行越过了 z 的末尾：tl.store 的 mask "
                "缺少行方向（rows < N0）。")
    if key == "nonfinite_output":
        return f"在 {names} 上输出了 {c['nonfinite']} 个 NaN/inf，而正确结果是有限值：检查 mask、-inf 的处理以及是否有元素从未写入。"
    return (f"在 {names} 上结果不对（{c['case']}：z[{c['row']},{c['col']}] = {c['observed']:.4g}，正确 {c['expected']:.4g}，"
            f"该行之和 {c['row_sum']:.4g}），不符合已知误区的特征：逐块检查 max、sum 的更新与两遍循环。")
