"""Welford/Chan chunk merge (lesson 6, Q3 extension), trusted side: inputs, reference, diagnoses.

One program walks its row in BLOCK-sized chunks; each chunk gives (n_b, mean_b, M2_b) and is
merged into the running (n, mean, M2) with Chan's formula

    n' = n + n_b,  delta = mean_b − mean,  mean' = mean + delta·n_b/n',
    M2' = M2 + M2_b + delta²·n·n_b/n'.

The known wrong answers are replayed here in float64 on the case's input, chunk by chunk, so a
diagnosis can say which one the observed numbers match: the last chunk counted as BLOCK lanes,
padding lanes left in the chunk's M2 (each adds mean_b², lesson 6's re-mask), the delta term
dropped or weighted n·n_b (not divided by n'), and, on a strided case (a view x[:, :N] of a wider
buffer), the chunk counted up to the row stride (`cols < stride_m`): the last chunk then counts
min(BLOCK, stride − s) lanes instead of N − s (s its start), the extra ones padding lanes the load
masked to 0.0, so the mean is pulled to mean·N/(N + extra). The naive chunk formula Σx² − n_b·mean_b² cannot
be replayed in float64 (its error *is* float32 rounding): its signature is a mean that is right
and a variance whose error is of the order of float32's spacing at mean², on a row whose
variance is many orders of magnitude below mean².
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from service.exercises import kit

DEFAULT_BLOCK = 64  # welford_mean_var's default `block`


def make_inputs(case: kit.CaseSpec, seed: int) -> kit.Arrays:
    """Rows as the case's data says; `params.chunk_offsets: [lo, hi]` adds one offset per BLOCK chunk
    (a staircase), so the chunk means differ and the merge's delta term carries most of the variance."""
    x = kit.draw_rows(case, seed).astype(np.float64)
    offsets = case.params.get("chunk_offsets")
    if offsets is not None:
        assert isinstance(offsets, list), "params.chunk_offsets is [low, high]"
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
           delta_term: str = "chan", stride: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Chunked merge in float64, with one of the known mistakes switched on (count="stride":
    n_b counts the lanes below the row `stride`)."""
    rows, n_total = x.shape
    n = np.zeros(rows)
    mean = np.zeros(rows)
    m2 = np.zeros(rows)
    for start in range(0, n_total, block):
        chunk = x[:, start:start + block]
        valid = chunk.shape[1]
        if count == "stride":
            assert stride is not None and stride >= n_total
            n_b = float(min(block, stride - start))
        else:
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


_CANDIDATES: dict[str, dict[str, Any]] = {
    "last_chunk_counted_as_block": {"count": "block"},
    "chunk_m2_not_remasked": {"remask": False},
    "delta_term_missing": {"delta_term": "none"},
    "delta_weight_wrong": {"delta_term": "no_division"},
}


def _close(observed: np.ndarray, predicted: np.ndarray, floor: np.ndarray | float, rel: float = 1e-4) -> bool:
    return bool(np.all(np.abs(observed - predicted) <= rel * (np.abs(observed) + np.abs(predicted)) + floor))


def _stride_extra(n: int, block: int, stride: int | None) -> int:
    """How many lanes `cols < stride_m` counts beyond the valid ones (all in the last chunk)."""
    if stride is None:
        return 0
    start = ((n - 1) // block) * block
    return min(block, stride - start) - (n - start)


def _classify(ev: kit.CaseEvidence, *, block_count_refuted: bool = False) -> Iterator[kit.Found]:
    """One failed case's finding. `block_count_refuted`: a contiguous case with a partial last
    chunk passed, so "every chunk counted as BLOCK" is not the bug (it would have failed there)."""
    outputs = kit.outputs(ev, "mean", "var")
    if outputs is None:
        return
    (mean_obs, var_obs), (mean_true, var_true) = outputs
    case, x = ev.case, ev.inputs
    block = int(case.kwargs.get("block", DEFAULT_BLOCK))
    n = x.shape[1]
    chunks = -(-n // block)
    where = {"case": case.id, "N": n, "BLOCK": block, "chunks": chunks, "last_chunk": n - (chunks - 1) * block}
    if not (np.all(np.isfinite(mean_obs)) and np.all(np.isfinite(var_obs))):
        yield "nonfinite_output", where
        return
    ex2 = (x * x).mean(axis=1)
    row = int(np.argmax(np.abs(var_obs - var_true) / (np.abs(var_true) + 1e-30)))
    numbers = {**where, "row": row, "mean": float(mean_true[row]), "mean_obs": float(mean_obs[row]),
               "var": float(var_true[row]), "var_obs": float(var_obs[row])}
    # float32 noise of a chunked two-pass kernel: the mean is rounded to ~1e-6 of its size, and
    # the variance inherits that rounding squared.
    floor_mean = 1e-6 * np.sqrt(ex2) + 1e-7
    floor_var = 1e-13 * ex2 + 1e-9
    found = None
    extra = _stride_extra(n, block, case.stride)
    if extra > 0 and _close(mean_obs, mean_true * n / (n + extra), floor_mean):
        mean_pred, var_pred = _merge(x, block, count="stride", stride=case.stride)
        # stride - s >= BLOCK counts the whole last chunk: the same numbers as the block count
        same_as_block = min(block, case.stride - (n - where["last_chunk"])) == block
        if _close(var_obs, var_pred, floor_var) and (block_count_refuted or not same_as_block):
            yield "count_uses_row_stride", {**numbers, "stride": case.stride, "extra": extra,
                                            "counted": where["last_chunk"] + extra,
                                            "mean_pred": float(mean_pred[row]), "var_pred": float(var_pred[row])}
            return
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
    yield found or "unexplained", numbers


def _words(key: str, cases: list[kit.Numbers]) -> kit.Say:
    """The message of `key`, about the case whose variance is furthest off."""
    c = max(cases, key=lambda d: abs(d.get("var_obs", 0.0) - d.get("var", 0.0)))
    if key == "nonfinite_output":
        return kit.say_about(key, cases, c)
    return kit.say_about(key, cases, c, at=kit.Say("part.at", c), got=kit.Say("part.got", c))


def diagnose(evidence: list[kit.CaseEvidence]) -> list[kit.Finding]:
    """The kit's skeleton, with one fact from the passed cases: a contiguous case whose last chunk
    is partial passed, which the block count would have failed (on a strided case whose stride
    reaches past the last chunk, counting to the stride and counting BLOCK give the same numbers)."""
    refuted = any(ev.passed and ev.case.stride is None
                  and ev.case.cols % int(ev.case.kwargs.get("block", DEFAULT_BLOCK)) for ev in evidence)
    return kit.report(kit.collect(evidence, lambda ev: _classify(ev, block_count_refuted=refuted)), _words)
