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
           delta_term: str = "chan", stride: int | None = None, center: str = "chunk",
           chunk_m2: str = "sum") -> tuple[np.ndarray, np.ndarray]:
    """Chunked merge in float64, with one of the known mistakes switched on. count: n_b as the
    valid lanes, "block" (BLOCK), "stride" (the lanes below the row `stride`), "remaining"
    (N − start), "row" (N) or "plus_one" (the valid lanes + 1). center: M2_b's deviations about mean_b ("chunk"), about the running
    mean before this merge ("running") or about 0 ("zero": Σx² of the valid lanes). chunk_m2:
    "mean" divides M2_b by n_b (the chunk's variance). delta_term: Chan's, "none", "no_division"
    (delta²·n·n_b), "linear" (delta·n·n_b/n', not squared), "updated" (delta taken again after
    the mean was updated: (mean_b − mean')²·n·n_b/n'), "n_b_only" (delta²·n_b)."""
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
        elif count == "remaining":
            n_b = float(n_total - start)
        elif count == "row":
            n_b = float(n_total)
        elif count == "plus_one":
            n_b = float(valid + 1)
        else:
            n_b = float(block if count == "block" else valid)
        mean_b = chunk.sum(axis=1) / n_b
        about = {"chunk": mean_b, "running": mean, "zero": np.zeros(rows)}[center]
        m2_b = ((chunk - about[:, None]) ** 2).sum(axis=1)
        if not remask:
            m2_b = m2_b + (block - valid) * mean_b**2  # padding lanes: 0 − mean_b, squared
        if chunk_m2 == "mean":
            m2_b = m2_b / n_b
        n_new = n + n_b
        delta = mean_b - mean
        mean = mean + delta * n_b / n_new
        if delta_term == "chan":
            m2 = m2 + m2_b + delta * delta * n * n_b / n_new
        elif delta_term == "none":
            m2 = m2 + m2_b
        elif delta_term == "no_division":
            m2 = m2 + m2_b + delta * delta * n * n_b
        elif delta_term == "linear":
            m2 = m2 + m2_b + delta * n * n_b / n_new
        elif delta_term == "updated":
            m2 = m2 + m2_b + (mean_b - mean) * (mean_b - mean) * n * n_b / n_new
        elif delta_term == "n_b_only":
            m2 = m2 + m2_b + delta * delta * n_b
        n = n_new
    return mean, m2 / n


_CANDIDATES: dict[str, dict[str, Any]] = {
    "last_chunk_counted_as_block": {"count": "block"},
    "chunk_m2_not_remasked": {"remask": False},
    "delta_term_missing": {"delta_term": "none"},
    "delta_weight_wrong": {"delta_term": "no_division"},
}

# Mistakes found in kernels written otherwise (issue 15): each names a case only when it explains
# every failed case that no mistake above explains (_across), and none of the cases that passed
# refutes it (its replay is off there). On a single chunk "about the running mean" (0 before the
# first merge) and "not centred" give the same numbers: the other cases tell them apart.
_ACROSS_CANDIDATES: dict[str, dict[str, Any]] = {
    "chunk_count_remaining": {"count": "remaining"},
    "chunk_count_is_row": {"count": "row"},
    "chunk_count_plus_one": {"count": "plus_one"},
    "chunk_m2_about_running_mean": {"center": "running"},
    "chunk_m2_not_centred": {"center": "zero"},
    "chunk_m2_divided_by_count": {"chunk_m2": "mean"},
    "delta_not_squared": {"delta_term": "linear"},
    "delta_after_mean_update": {"delta_term": "updated"},
    "delta_weight_n_b_only": {"delta_term": "n_b_only"},
}


def _close(observed: np.ndarray, predicted: np.ndarray, floor: np.ndarray | float, rel: float = 1e-4) -> bool:
    return bool(np.all(np.abs(observed - predicted) <= rel * (np.abs(observed) + np.abs(predicted)) + floor))


def _stride_extra(n: int, block: int, stride: int | None) -> int:
    """How many lanes `cols < stride_m` counts beyond the valid ones (all in the last chunk)."""
    if stride is None:
        return 0
    start = ((n - 1) // block) * block
    return min(block, stride - start) - (n - start)


def _unchanged(mean_pred: np.ndarray, var_pred: np.ndarray, mean_true: np.ndarray, var_true: np.ndarray) -> bool:
    """On this input the mistake changes nothing: it cannot explain a failure."""
    return _close(mean_pred, mean_true, 0.0, rel=1e-7) and _close(var_pred, var_true, 0.0, rel=1e-7)


def _refuted(evidence: list[kit.CaseEvidence]) -> set[str]:
    """The across candidates a passed case rules out: their replay is off there by ten times the
    exercise's declared tolerances (`outputs:` in exercise.yaml) or more, yet the kernel passed it."""
    out = set()
    for ev in evidence:
        outputs = kit.outputs(ev, "mean", "var") if ev.passed else None
        if outputs is None:
            continue
        _, (mean_true, var_true) = outputs
        block = int(ev.case.kwargs.get("block", DEFAULT_BLOCK))
        for name, switches in _ACROSS_CANDIDATES.items():
            mean_pred, var_pred = _merge(ev.inputs, block, **switches)
            if kit.off_by_tolerances(ev, "mean", mean_pred, mean_true, 10) or \
                    kit.off_by_tolerances(ev, "var", var_pred, var_true, 10):
                out.add(name)
    return out


def _contradicted(evidence: list[kit.CaseEvidence]) -> set[str]:
    """The catalogue's mistakes (_CANDIDATES) a failed case contradicts: the mistake changes that case's
    outputs, and they miss its replay by ten times the exercise's declared tolerances or more (as
    _refuted holds a passed case to; the match itself is tighter, and a kernel's own float32 rounding can
    leave a large-mean case outside it, as the catalogue's wrong.delta_weight_no_division on
    probe.large_mean). A mistake is one kernel's behaviour on every input: Welford's one-element
    correction delta * (mean_b - mean_new) applied to a chunk is the right term over n_b, within the
    match's slack of "no correction" where BLOCK = 128 (regular.n1000), 72 tolerances from it on
    probe.chunk_steps; "the correction term missing" was named on the first cases alone (seventh probe
    batch, wf7.wrong.per_element_welford_correction)."""
    out = set()
    for ev in evidence:
        outputs = None if ev.passed else kit.outputs(ev, "mean", "var")
        if outputs is None:
            continue
        (mean_obs, var_obs), (mean_true, var_true) = outputs
        if not (np.all(np.isfinite(mean_obs)) and np.all(np.isfinite(var_obs))):
            continue
        block = int(ev.case.kwargs.get("block", DEFAULT_BLOCK))
        for name, switches in _CANDIDATES.items():
            mean_pred, var_pred = _merge(ev.inputs, block, **switches)
            if not _unchanged(mean_pred, var_pred, mean_true, var_true) and \
                    (kit.off_by_tolerances(ev, "mean", mean_pred, mean_obs, 10)
                     or kit.off_by_tolerances(ev, "var", var_pred, var_obs, 10)):
                out.add(name)
    return out


def _classify(ev: kit.CaseEvidence, *, block_count_refuted: bool = False,
              refuted: frozenset[str] = frozenset()) -> Iterator[kit.Found]:
    """One failed case's finding. `block_count_refuted`: a contiguous case with a partial last
    chunk passed, so "every chunk counted as BLOCK" is not the bug (it would have failed there).
    `refuted`: the across candidates a passed case rules out, and the catalogue's mistakes a failed
    case contradicts (_contradicted)."""
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
        if name in refuted:
            continue
        mean_pred, var_pred = _merge(x, block, **switches)
        if _unchanged(mean_pred, var_pred, mean_true, var_true):
            continue
        if _close(mean_obs, mean_pred, floor_mean) and _close(var_obs, var_pred, floor_var):
            found = name
            numbers["var_pred"] = float(var_pred[row])
            numbers["mean_pred"] = float(mean_pred[row])
            break
    if found is not None:
        yield found, numbers
        return
    matches: dict[str, dict[str, float]] = {}  # every across candidate that reproduces every row
    for name, switches in _ACROSS_CANDIDATES.items():
        if name in refuted:
            continue
        mean_pred, var_pred = _merge(x, block, **switches)
        if not _unchanged(mean_pred, var_pred, mean_true, var_true) and \
                _close(mean_obs, mean_pred, floor_mean) and _close(var_obs, var_pred, floor_var):
            matches[name] = {"mean_pred": float(mean_pred[row]), "var_pred": float(var_pred[row])}
    if matches:
        yield kit.ACROSS, {**numbers, "matches": matches}
        return
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
    if found is None:  # seen by _across too: a case no mistake explains keeps the others from being named
        yield kit.ACROSS, {**numbers, "matches": {}}
    else:
        yield found, numbers


def _across(pending: list[kit.Numbers]) -> Iterator[kit.Found]:
    """Each case under the first across candidate (in _ACROSS_CANDIDATES's order) that explains
    every pending case, with its replay's numbers; a case no such candidate explains is unexplained."""
    explains_all = [m for m in _ACROSS_CANDIDATES if all(m in n["matches"] for n in pending)]
    for numbers in pending:
        out = {k: v for k, v in numbers.items() if k != "matches"}
        if explains_all:
            yield explains_all[0], {**out, **numbers["matches"][explains_all[0]]}
        else:
            yield "unexplained", out


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
    block_refuted = any(ev.passed and ev.case.stride is None
                        and ev.case.cols % int(ev.case.kwargs.get("block", DEFAULT_BLOCK)) for ev in evidence)
    refuted = frozenset(_refuted(evidence) | _contradicted(evidence))
    return kit.report(kit.collect(evidence, lambda ev: _classify(ev, block_count_refuted=block_refuted,
                                                                 refuted=refuted),
                                  across=_across, causes=tuple(_ACROSS_CANDIDATES)), _words)
