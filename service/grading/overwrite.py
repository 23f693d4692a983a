"""Inputs compared bit for bit after the call, on every exercise (issue 15.5, "input overwritten").

The harness sends every input of a case back as it found it after the entry point returned
(`__input__.<key>`, sandbox/harness.py); here it is compared with the bytes the trusted side sent.
An input the exercise does not declare as written (`written_args`: caller-owned scratch buffers)
that changed is a diagnosis: what changed, on which input, by how much, and the misconception.
"""
from __future__ import annotations

import numpy as np

from service.report import Diagnosis

DIAGNOSIS_ID = "input_overwritten"


def changed_input(case_id: str, name: str, sent: np.ndarray, after: object, *, columns: int | None = None) -> dict | None:
    """The evidence that input `name` of case `case_id` changed, or None when it is bit-identical
    (or when the sandbox sent nothing for it: no evidence, no diagnosis)."""
    if not isinstance(after, np.ndarray):
        return None
    base = {"case": case_id, "input": name, "shape": list(sent.shape)}
    if after.dtype != sent.dtype or after.shape != sent.shape:
        return {**base, "changed": int(sent.size), "total": int(sent.size),
                "note": f"returned as {after.dtype} {list(after.shape)}"}
    size = sent.dtype.itemsize
    a = np.ascontiguousarray(sent).view(np.uint8).reshape(-1, size)
    b = np.ascontiguousarray(after).view(np.uint8).reshape(-1, size)
    differs = (a != b).any(axis=1)
    if columns is not None and sent.ndim == 2:  # a strided case's view: only the columns the kernel sees count
        differs = differs.reshape(sent.shape)[:, :columns].reshape(-1)
        sent, after = sent[:, :columns], after[:, :columns]
        base["shape"] = list(sent.shape)
    count = int(differs.sum())
    if not count:
        return None
    first = int(np.flatnonzero(differs)[0])
    index = [int(i) for i in np.unravel_index(first, sent.shape)]
    before_v, after_v = sent.reshape(-1)[first].item(), after.reshape(-1)[first].item()
    diff = np.abs(after.astype(np.float64) - sent.astype(np.float64)) if sent.dtype.kind == "f" else None
    worst = float(np.nanmax(diff)) if diff is not None and np.isfinite(diff).any() else None
    return {**base, "changed": count, "total": int(differs.size), "index": index,
            "before": repr(before_v)[:40], "after": repr(after_v)[:40], "max_abs_change": worst}


def diagnosis(found: list[dict], *, language: str) -> Diagnosis | None:
    if not found:
        return None
    messages = {"zh": _zh(found), "en": _en(found)}
    return Diagnosis(id=DIAGNOSIS_ID, message=messages.get(language, messages["en"]),
                     evidence={"cases": found, "messages": messages})


def _where(c: dict) -> str:
    return "[" + ", ".join(str(i) for i in c.get("index", [])) + "]"


def _zh(found: list[dict]) -> str:
    c = max(found, key=lambda d: d["changed"])
    names = "、".join(sorted({f"{d['case']}（{d['input']}）" for d in found}))
    detail = (f"第一个在 {c['input']}{_where(c)}：原值 {c['before']}，调用后 {c['after']}"
              + (f"，最大改变量 {c['max_abs_change']:.4g}" if c.get("max_abs_change") is not None else "")
              if "index" in c else c.get("note", ""))
    return (f"入口函数改写了它的输入：在 {names} 上，调用之后输入与评分方传入的数据逐位比较不再相同。"
            f"以 {c['case']} 为例，{c['input']}（形状 {c['shape']}）的 {c['total']} 个元素里有 {c['changed']} 个被改写，{detail}。"
            "输入只能读，不能写：调用方之后还要用它，同一输入再算一次会得到不同结果。"
            "常见原因：tl.store 用错了指针（写回了输入的指针，例如 x_ptr 而不是输出的指针），"
            "或在 host 代码里对输入做了原地操作（x -= …、x.sub_(…)、x.copy_(…)）。")


def _en(found: list[dict]) -> str:
    c = max(found, key=lambda d: d["changed"])
    names = ", ".join(sorted({f"{d['case']} ({d['input']})" for d in found}))
    detail = (f"the first at {c['input']}{_where(c)}: {c['before']} before the call, {c['after']} after"
              + (f", largest change {c['max_abs_change']:.4g}" if c.get("max_abs_change") is not None else "")
              if "index" in c else c.get("note", ""))
    return (f"The entry point overwrote its input: on {names}, the input compared bit for bit after the call no longer "
            f"matches what the grader passed in. On {c['case']}, {c['changed']} of the {c['total']} elements of "
            f"{c['input']} (shape {c['shape']}) changed, {detail}. Inputs are read-only: the caller still needs them, "
            "and computing again on the same input gives a different answer. Usual causes: a tl.store through the "
            "wrong pointer (the input's, e.g. x_ptr, instead of the output's), or an in-place operation on the input "
            "in the host code (x -= …, x.sub_(…), x.copy_(…)).")
