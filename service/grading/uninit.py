"""Uninitialised memory read, decided from the outputs' bits, on every exercise.

The harness fills every tensor the entry point allocates uninitialised (torch.empty, empty_like,
empty_strided, new_empty, new_empty_strided) with a poison value before the student's code sees it
(sandbox/harness.py, `POISON_BITS`): a NaN whose payload nothing else makes. A failing case whose
outputs still hold that payload read memory nothing wrote: an output element never stored, or a
value computed from a buffer read before it was written (an accumulator not zeroed, or "zeroed" with
arithmetic, which keeps a NaN). The case fails on its values alone; this module only says why.
"""
from __future__ import annotations

import numpy as np

from sandbox.contract import RunResult
from sandbox.guards import POISON_BITS, poisoned
from service.messages import render
from service.report import CaseReport, Diagnosis

DIAGNOSIS_ID = "uninitialised_read"
MAX_REPORTED = 16


def found_in(case_id: str, outputs: dict[str, np.ndarray]) -> list[dict]:
    """The evidence of one case: per output that holds the poison, how many elements, the first."""
    found = []
    for name, array in outputs.items():
        mask = poisoned(array) if isinstance(array, np.ndarray) else None
        if mask is None or not mask.any():
            continue
        first = int(np.flatnonzero(mask.reshape(-1))[0])
        found.append({"case": case_id, "output": name, "shape": list(array.shape), "dtype": array.dtype.name,
                      "count": int(mask.sum()), "total": int(mask.size),
                      "index": [int(i) for i in np.unravel_index(first, array.shape)],
                      "bits": f"0x{POISON_BITS[array.dtype.name][1]:X}"})
    return found


def uninitialised_reads(cases: list[CaseReport], run: RunResult, *, language: str) -> Diagnosis | None:
    """The `uninitialised_read` diagnosis when a failed case's outputs hold the poison; None otherwise."""
    failed = {c.id for c in cases if c.kind != "given" and not c.passed}
    found: list[dict] = []
    for outcome in run.cases:
        if outcome.id in failed and outcome.status == "ok":
            found += found_in(outcome.id, outcome.outputs)
    if not found:
        return None
    found = found[:MAX_REPORTED]
    messages = {lang: _message(found, lang) for lang in ("zh", "en")}
    return Diagnosis(id=DIAGNOSIS_ID, message=messages.get(language, messages["en"]),
                     evidence={"cases": found, "messages": messages})


def _message(found: list[dict], lang: str) -> str:
    c = max(found, key=lambda d: d["count"])
    names = sorted({render("uninit.case_output", lang, case=d["case"], output=d["output"]) for d in found})
    where = "[" + ", ".join(str(i) for i in c["index"]) + "]"
    return render("uninit.message", lang, names=render("passrule.separator", lang).join(names), case=c["case"],
                  output=c["output"], shape=str(c["shape"]), total=c["total"], count=c["count"], where=where,
                  dtype=c["dtype"], bits=c["bits"])
