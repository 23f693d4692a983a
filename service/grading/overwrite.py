"""Inputs compared bit for bit after the call, on every exercise (issue 15.5, "input overwritten").

The harness sends every input of a case back as it found it after the entry point returned
(`__input__.<key>`, sandbox/harness.py); here it is compared with the bytes the trusted side sent.
An input the exercise does not declare as written (`written_args`: caller-owned scratch buffers)
that changed is a diagnosis: what changed, on which input, by how much, and the misconception.
"""
from __future__ import annotations

import numpy as np

from service.grading.inputs import view_of
from service.messages import render
from service.report import Diagnosis

DIAGNOSIS_ID = "input_overwritten"


def changed_input(case_id: str, name: str, sent: np.ndarray, after: object, *,
                  columns: int | None = None, view: dict | None = None) -> dict | None:
    """The evidence that input `name` of case `case_id` changed, or None when it is bit-identical
    (or when the sandbox sent nothing for it: no evidence, no diagnosis). `view` (a case's layout:
    shape, strides, offset of the view in the 1-D storage sent): only the view's elements count."""
    if not isinstance(after, np.ndarray):
        return None
    if view is not None and after.dtype == sent.dtype and after.shape == sent.shape:
        sent, after = (np.ascontiguousarray(view_of(np.ascontiguousarray(a), view["shape"], view["strides"],
                                                    view["offset"])) for a in (sent, after))
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
    messages = {lang: _message(found, lang) for lang in ("zh", "en")}
    return Diagnosis(id=DIAGNOSIS_ID, message=messages.get(language, messages["en"]),
                     evidence={"cases": found, "messages": messages})


def _where(c: dict) -> str:
    return "[" + ", ".join(str(i) for i in c.get("index", [])) + "]"


def _message(found: list[dict], lang: str) -> str:
    c = max(found, key=lambda d: d["changed"])
    names = sorted({render("overwrite.case_input", lang, case=d["case"], input=d["input"]) for d in found})
    detail = (render("overwrite.first", lang, input=c["input"], where=_where(c), before=c["before"], after=c["after"])
              + (render("overwrite.largest", lang, change=c["max_abs_change"])
                 if c.get("max_abs_change") is not None else "")
              if "index" in c else c.get("note", ""))
    return render("overwrite.message", lang, names=names, case=c["case"], input=c["input"], shape=str(c["shape"]),
                  total=c["total"], changed=c["changed"], detail=detail)
