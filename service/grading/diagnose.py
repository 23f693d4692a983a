"""Step 5: what the exercise's `diagnose()` receives, and the helper it returns findings with.

Each exercise's checks.py turns failing cases into diagnoses: a probe's *signature* (for lesson
6, `var_obs - var_true ~= (BLOCK - N) * mean^2 / N`) matched against the numbers, said in words.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from service.exercises import CaseSpec


@dataclass
class CaseEvidence:
    case: CaseSpec
    inputs: np.ndarray  # the first argument's valid data, as float64 (for row exercises: rows x cols)
    observed: dict[str, np.ndarray] | None  # None when the case did not return outputs
    expected: dict[str, np.ndarray]
    passed: bool
    arrays: dict[str, np.ndarray] = field(default_factory=dict)  # every input by name, float ones as float64
    # A case that raised: its error text (never evidence by itself: any error reads the same), the
    # guard regions it changed (compared on the trusted side: the only evidence of an out-of-bounds
    # write) and the data of the buffers its entry point allocated (sandbox.contract.CaseRun).
    error: str | None = None
    out_of_bounds: list[dict] = field(default_factory=list)
    allocations: list[dict] = field(default_factory=list)


def sentinel_breach(ev: CaseEvidence, *, data_len: int, total_len: int, sentinel: float) -> dict | None:
    """Out-of-bounds evidence for a wrapper that keeps `sentinel` values after its output inside one
    allocated float32 buffer of `total_len` elements (the puzzles' `buf`, output `buf[:data_len]`):
    the sentinel tail of that buffer as the sandbox returned it, compared bit for bit here, or a
    guard region the trusted side found changed. None when neither changed: then the case's error
    was something else (a NameError, a shape error, ...) and no out-of-bounds diagnosis is true."""
    want = np.array([sentinel], dtype=np.float32).view(np.int32)[0]
    for alloc in ev.allocations:
        data = alloc.get("data")
        if alloc.get("dtype") != "float32" or data is None or data.size != total_len:
            continue
        tail = np.asarray(data[data_len:], dtype=np.float32)
        changed = tail.view(np.int32) != want
        if changed.any():
            first = int(np.flatnonzero(changed)[0])
            return {"changed": int(changed.sum()), "first_past_end": first, "value": float(tail[first]),
                    "source": "sentinel"}
    if ev.out_of_bounds:
        first = ev.out_of_bounds[0]
        return {"changed": int(first.get("changed", 0)), "first_past_end": int(first.get("distance", 0)),
                "value": first.get("value"), "source": "guard", "buffer": first.get("output") or first.get("buffer")}
    return None
