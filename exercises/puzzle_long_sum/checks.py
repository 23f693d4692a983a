"""Puzzle 7 (Long Sum), trusted side: inputs, the float64 reference, and the signatures of the
usual mistakes. Each signature predicts the whole output vector from the inputs, so a match is
evidence, not a guess: a kernel that drops the tail block, reads the next row through a missing
column mask, sums only the first or only the last block, and so on.
"""
from __future__ import annotations

import numpy as np

from service.grading.diagnose import (
    ROW_BLOCK_IGNORED, out_of_bounds_en, row_block_ignored, row_block_messages, sentinel_breach,
)
from service.report import Diagnosis

SENTINEL = -1234.5  # what the template's long_sum keeps after z (buf[N0:])


def make_inputs(case, seed):
    rng = np.random.default_rng(seed)
    n0, t = int(case.params["N0"]), int(case.params["T"])
    loc = rng.uniform(-2.0, 2.0, size=(n0, 1))
    x = loc + rng.standard_normal((n0, t))
    return {"x": x.astype(np.float32)}


def reference(x):
    return {"z": np.asarray(x, dtype=np.float64).sum(axis=1)}


def _close(observed, predicted, rows):
    if not rows.any():
        return False
    o, p = observed[rows], predicted[rows]
    return bool(np.all(np.abs(o - p) <= 1e-3 * (np.abs(p) + 1.0)))


def _candidates(x, b1):
    """What each known mistake returns, row by row (float64)."""
    n0, t = x.shape
    full = (t // b1) * b1
    last_start = ((t - 1) // b1) * b1
    pad = -t % b1
    # No column mask: the row's last block runs on into the next rows (x is row-major).
    flat, span = x.ravel(), t + pad
    leak = np.array([flat[r * t: r * t + span].sum() if r * t + span <= flat.size else np.nan for r in range(n0)])
    return {
        "dropped_tail": (x[:, :full].sum(axis=1), full < t),
        "first_block_only": (x[:, :b1].sum(axis=1), b1 < t),
        "last_block_only": (x[:, last_start:].sum(axis=1), last_start > 0),
        "next_row_leak": (leak, pad > 0 and n0 > 1),
    }


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
            breach = sentinel_breach(ev, data_len=n0, total_len=n0 + b0, sentinel=SENTINEL)
            if breach is not None:  # evidence in the bytes, not in the error's text
                findings.setdefault("store_out_of_bounds", []).append({**where, "rows_past_end": -n0 % b0, **breach})
            continue
        x = ev.arrays["x"]
        z = ev.observed["z"].astype(np.float64)
        ref = ev.expected["z"]
        correct = np.abs(z - ref) <= 1e-3 * (np.abs(ref) + 1.0)
        ignored = row_block_ignored(correct, np.isnan(z), rows=n0, block=b0)
        if ignored is not None:
            findings.setdefault(ROW_BLOCK_IGNORED, []).append({**where, **ignored})
            continue
        if not np.any(np.isfinite(z)):
            findings.setdefault("nonfinite_output", []).append(where)
            continue
        matched = False
        for key, (pred, applies) in _candidates(x, b1).items():
            rows = np.ones(n0, dtype=bool)
            if key == "next_row_leak":
                rows = np.isfinite(pred)  # rows that read past the end of x: garbage there
            if applies and _close(z, pred, rows):
                worst = int(np.argmax(np.where(rows, np.abs(z - ref), -1)))
                findings.setdefault(key, []).append({**where, "row": worst, "observed": float(z[worst]),
                                                     "expected": float(ref[worst]), "predicted": float(pred[worst]),
                                                     "pad": -t % b1})
                matched = True
                break
        if not matched:
            worst = int(np.argmax(np.abs(z - ref)))
            findings.setdefault("unexplained_sum", []).append({**where, "row": worst, "observed": float(z[worst]),
                                                               "expected": float(ref[worst])})
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
    if key == "dropped_tail":
        return (f"在 {names} 上行和偏差。以 {c['case']} 为例（T={c['T']}，B1={c['B1']}）：第 {c['row']} 行得到 {c['observed']:.6g}，"
                f"正确是 {c['expected']:.6g}，恰好等于只加前 {c['T'] // c['B1'] * c['B1']} 列的结果 {c['predicted']:.6g}。"
                "循环上界用了向下取整（T // B1）：最后一个不满 B1 的块（T 不是 B1 的整数倍时）没有被加进去。"
                "应当循环 tl.cdiv(T, B1) 次（或 range(0, T, B1)），最后一块用 mask 截断。")
    if key == "first_block_only":
        return (f"在 {names} 上，结果等于每行只加前 B1={c['B1']} 个元素（{c['case']} 第 {c['row']} 行：{c['observed']:.6g}，"
                f"正确 {c['expected']:.6g}）：T={c['T']} > B1，一行放不进一个块，必须用 for 循环沿第二维逐块累加。")
    if key == "last_block_only":
        return (f"在 {names} 上，结果等于每行只有最后一块的和（{c['case']} 第 {c['row']} 行：{c['observed']:.6g}，正确 {c['expected']:.6g}）："
                "累加器在循环里被覆盖（写成了 acc = ... 而不是 acc += ...，或在循环内重新置零）。累加器要在循环外初始化一次。")
    if key == "next_row_leak":
        return (f"在 {names} 上行和偏大或偏小，与“多加了下一行开头 {c['pad']} 个元素”完全吻合（{c['case']}：T={c['T']}，"
                f"B1={c['B1']}，第 {c['row']} 行得到 {c['observed']:.6g}，正确 {c['expected']:.6g}，预测 {c['predicted']:.6g}）。"
                "最后一块的列下标超过了 T，却没有用 cols < T 屏蔽：x 是按行连续存放的，越过行尾读到的正是下一行的数据。"
                "load 时要带上列方向的 mask，并用 other=0.0（加法单位元）。")
    if key == "store_out_of_bounds":
        return (f"{names} 上 kernel 写到了 z 的末尾之外：z 之后的 {c['changed']} 个元素被改写（评分方逐位比较了 z 之后的哨兵区，"
                f"第一个在 z 末尾之后第 {c['first_past_end'] + 1} 个位置，写入值 {c['value']}）。这个用例 N0={c['N0']} 不是 "
                f"B0={c['B0']} 的整数倍，最后一个 program 有 {c['rows_past_end']} 行越过了 z 的末尾：tl.store 缺少行方向的 "
                "mask（rows < N0），越界写会破坏紧挨着 z 的其他数据。")
    if key == "nonfinite_output":
        return f"在 {names} 上输出了 NaN/inf，而正确结果是有限值：检查是否读到了 x 之外的内存，或有些行从未写入。"
    return (f"在 {names} 上行和不对（{c['case']} 第 {c['row']} 行：得到 {c['observed']:.6g}，正确 {c['expected']:.6g}），"
            "不符合已知误区的特征：逐块检查行下标、列下标、mask 与累加。")
