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
    past_end = [b for b in ev.out_of_bounds if b.get("side") == "after" and b.get("kind") == "allocated"]
    if past_end:  # written past the whole buffer: past the sentinel tail too
        first = past_end[0]
        return {"changed": int(first.get("changed", 0)), "first_past_end": int(first.get("distance", 0)),
                "value": first.get("value"), "source": "guard", "buffer": first.get("output") or first.get("buffer")}
    return None


ROW_BLOCK_IGNORED = "one_row_per_program"


def row_block_ignored(correct: np.ndarray, unwritten: np.ndarray, *, rows: int, block: int) -> dict | None:
    """Evidence that a kernel handles one row per program and ignores the block of `block` rows
    each program owns: with cdiv(rows, block) programs, exactly the rows one program per row would
    reach (row = pid, or row = pid * block) are right, and every other row was never written.
    `correct` and `unwritten` are per-row booleans from the trusted comparison."""
    if block <= 1 or rows <= 1:
        return None
    programs = -(-rows // block)
    for form, reached in (("row = pid", np.arange(programs)), ("row = pid * B0", np.arange(programs) * block)):
        hit = np.zeros(rows, dtype=bool)
        hit[reached[reached < rows]] = True
        if hit.all():
            continue
        if np.array_equal(correct, hit) and bool(np.all(unwritten[~hit])):
            return {"form": form, "programs": programs, "rows_written": int(hit.sum()),
                    "rows_unwritten": int((~hit).sum()), "first_unwritten": int(np.flatnonzero(~hit)[0])}
    return None


def row_block_messages(c: dict, names: str) -> dict[str, str]:
    """The zh and en words for `one_row_per_program` (c: one case's evidence, with N0 and B0)."""
    zh = (f"在 {names} 上，每个 program 只处理了一行，忽略了它负责的 B0 行：以 {c['case']} 为例（N0={c['N0']}，B0={c['B0']}，"
          f"共 {c['programs']} 个 program），只有 {c['rows_written']} 行（{c['form']} 能到达的行）是对的，其余 {c['rows_unwritten']} 行"
          f"从未写入（第一行是第 {c['first_unwritten']} 行，仍是初始的 NaN）。grid 是 cdiv(N0, B0)，所以每个 program 必须处理 "
          "B0 行：rows = pid * B0 + tl.arange(0, B0)，并用 rows < N0 做 mask。给定检查用 B0 = 1，所以这个错误在那里看不出来。")
    en = (f"On {names}, each program handled one row and ignored the block of B0 rows it owns: on {c['case']} (N0={c['N0']}, "
          f"B0={c['B0']}, {c['programs']} programs) only the {c['rows_written']} rows that {c['form']} reaches are right, and "
          f"the other {c['rows_unwritten']} rows were never written (the first is row {c['first_unwritten']}, still the "
          "initial NaN). The grid is cdiv(N0, B0), so each program must handle B0 rows: rows = pid * B0 + tl.arange(0, B0), "
          "masked with rows < N0. The given check uses B0 = 1, which is why it passes there.")
    return {"zh": zh, "en": en}


def out_of_bounds_en(c: dict, names: str, why: str) -> str:
    """The en words for an out-of-bounds store found by `sentinel_breach` (c: one case's evidence)."""
    where = ("the sentinel region the wrapper keeps after z, compared bit for bit by the grader"
             if c.get("source") == "sentinel" else "the guard region after the buffer, compared bit for bit by the grader")
    return (f"On {names} the kernel wrote past the end of z: {c['changed']} element(s) of {where} changed (the first "
            f"{c['first_past_end'] + 1} past the end, value written {c['value']}). {why}")
