"""Fused mean/variance with two atomics, trusted side: inputs, the float64 reference, diagnoses.

The kernel's only cross-program state is two scratch buffers (Σx and Σx² per row) that the
caller owns. Every wrong answer we know leaves a signature in the two statistics the host
returns, computed here in float64 from the case's input:

- scratch not zeroed, after k calls on the same buffers: Σx and Σx² are k times too large
  (mean·k, var = k·E[x²] − k²·mean²); only Σx² not zeroed: mean right, var = k·E[x²] − mean²;
- the nonlinear step applied per program and atomic-added: each program's own variance
  (about its chunk mean) summed over the G programs, or the identity applied to the partial
  sums (Σ_p [S2_p/N − (S1_p/N)²]), whose error is about mean²·(1 − 1/G);
- host combine mistakes: mean not squared (E[x²] − mean), Bessel (N − 1).

A candidate explains a case when it reproduces every row's mean and variance to float32
accuracy (relative 1e-3, with a floor of 1e-5·E[x²] for the cancellation in E[x²] − mean²).
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from service.exercises import kit

DEFAULT_BLOCK = 128  # mean_var_atomic's default `block`


def make_inputs(case: kit.CaseSpec, seed: int) -> kit.Arrays:
    """x as the case's data says; both scratch buffers start zeroed (as a fresh caller gives them)."""
    x = kit.draw_rows(case, seed)
    return {"x": x, "sums": np.zeros(case.rows, np.float32), "sumsqs": np.zeros(case.rows, np.float32)}


def reference(x: np.ndarray, sums: np.ndarray, sumsqs: np.ndarray) -> dict[str, np.ndarray]:
    """Population mean and variance per row, in float64 (the scratch buffers are not outputs)."""
    x = np.asarray(x, dtype=np.float64)
    return {"mean": x.mean(axis=1), "var": x.var(axis=1)}


def _chunks(x: np.ndarray, block: int) -> list[np.ndarray]:
    return [x[:, start:start + block] for start in range(0, x.shape[1], block)]


def _candidates(x: np.ndarray, block: int, calls: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """(mean, var) per row that each known wrong answer would return, in float64."""
    n = x.shape[1]
    s1, s2 = x.sum(axis=1), (x * x).sum(axis=1)
    mean, ex2 = s1 / n, s2 / n
    chunks = _chunks(x, block)
    found: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    if calls > 1:
        k = float(calls)
        found["scratch_not_zeroed"] = (k * mean, k * ex2 - (k * mean) ** 2)
        found["sumsq_not_zeroed"] = (mean, k * ex2 - mean**2)
        found["sum_not_zeroed"] = (k * mean, ex2 - (k * mean) ** 2)
    if len(chunks) > 1:
        found["variances_summed"] = (mean, sum(c.var(axis=1) for c in chunks))
        found["nonlinear_per_program"] = (mean, sum((c * c).sum(axis=1) / n - (c.sum(axis=1) / n) ** 2 for c in chunks))
    found["mean_not_squared"] = (mean, ex2 - mean)
    if n > 1:
        found["bessel"] = (mean, (ex2 - mean**2) * n / (n - 1))
    return found


# Mistakes found in kernels written otherwise (issue 15), (mean, var) per row in float64. Each names
# a case only when it explains every failed case that nothing above explains (_across), and none of
# the cases that passed refutes it. The four host combines that divide by N a wrong number of
# times are one diagnosis, combine_scale_wrong, told apart by `form` (after the colon).


def _across_candidates(x: np.ndarray, block: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    n = x.shape[1]
    s1, s2 = x.sum(axis=1), (x * x).sum(axis=1)
    mean, ex2 = s1 / n, s2 / n
    return {
        "sumsq_accumulates_sum": (mean, mean - mean**2),  # the second atomic adds Σx again
        "sum_squared_per_program": (mean, sum(c.sum(axis=1) ** 2 for c in _chunks(x, block)) / n - mean**2),
        "std_not_var": (mean, np.sqrt(np.maximum(ex2 - mean**2, 0.0))),
        "combine_scale_wrong:sums_not_divided": (mean, ex2 - s1**2),  # sumsqs / N - sums * sums
        "combine_scale_wrong:squared_sum_divided_once": (mean, ex2 - s1**2 / n),  # (sumsqs - sums * sums) / N
        "combine_scale_wrong:mean_sq_divided": (mean, ex2 - mean**2 / n),  # (sumsqs - mean * mean) / N
        "combine_scale_wrong:sumsq_divided_twice": (mean, ex2 / n - mean**2),  # Σx²/N added, divided by N again
    }


_ACROSS_NAMES = tuple(_across_candidates(np.ones((1, 1)), 1))  # in the order _across prefers them


def _refuted(evidence: list[kit.CaseEvidence]) -> set[str]:
    """The across candidates a passed case rules out: off there by ten times the exercise's
    declared tolerances (`outputs:` in exercise.yaml) or more, yet the kernel passed it."""
    out = set()
    for ev in evidence:
        outputs = kit.outputs(ev, "mean", "var") if ev.passed else None
        if outputs is None:
            continue
        _, (mean_true, var_true) = outputs
        block = int(ev.case.kwargs.get("block", DEFAULT_BLOCK))
        for name, (mean_pred, var_pred) in _across_candidates(ev.inputs, block).items():
            if kit.off_by_tolerances(ev, "mean", mean_pred, mean_true, 10) or \
                    kit.off_by_tolerances(ev, "var", var_pred, var_true, 10):
                out.add(name)
    return out


FP16_MAX = 65504.0  # the largest finite float16


def _half_overflow(x: np.ndarray, block: int, mean_obs: np.ndarray, var_obs: np.ndarray) -> kit.Numbers | None:
    """Evidence that a program's partial sums went through float16 (a `.to(tl.float16)` of the block's Σx²,
    or of the squares before tl.sum) and overflowed: every row with a non-finite variance has some program
    whose Σx² (or one square) passes 65504, the largest float16, and every row with a non-finite mean one
    whose |Σx| does (seventh and eighth probe batches, fused7.wrong.fp16_squares, fused8.wrong.fp16_block_sum:
    256 squares near 1600 sum past it on probe.large_mean). None where a non-finite row has no such program."""
    chunks = _chunks(np.asarray(x, dtype=np.float64), block)
    sumsq = np.max([(c * c).sum(axis=1) for c in chunks], axis=0)
    sums = np.max([np.abs(c.sum(axis=1)) for c in chunks], axis=0)
    bad_var, bad_mean = ~np.isfinite(var_obs), ~np.isfinite(mean_obs)
    if not (bad_var.any() or bad_mean.any()) or np.any(bad_var & (sumsq <= FP16_MAX)) \
            or np.any(bad_mean & (sums <= FP16_MAX)):
        return None
    row = int(np.flatnonzero(bad_var | bad_mean)[0])
    return {"row": row, "chunk_sumsq": float(sumsq[row]), "chunk_sum": float(sums[row]),
            "square_max": float(np.max(np.asarray(x, dtype=np.float64)[row] ** 2)), "fp16_max": FP16_MAX,
            "rows_bad": int((bad_var | bad_mean).sum())}


def _close(observed: np.ndarray, predicted: np.ndarray, floor: np.ndarray) -> bool:
    return bool(np.all(np.abs(observed - predicted) <= 1e-3 * (np.abs(observed) + np.abs(predicted)) + floor))


def _overflow_explains_all(evidence: list[kit.CaseEvidence]) -> bool:
    """Whether every failed case with a NaN or inf output shows a float16 overflow (_half_overflow): a
    non-finite case it does not explain says the inf came from elsewhere, and none is named so."""
    for ev in evidence:
        outputs = None if ev.passed else kit.outputs(ev, "mean", "var")
        if outputs is None:
            continue
        (mean_obs, var_obs), _ = outputs
        if not (np.all(np.isfinite(mean_obs)) and np.all(np.isfinite(var_obs))) and \
                _half_overflow(ev.inputs, int(ev.case.kwargs.get("block", DEFAULT_BLOCK)), mean_obs, var_obs) is None:
            return False
    return True


def _classify(ev: kit.CaseEvidence, refuted: frozenset[str] = frozenset(), overflow: bool = True) -> Iterator[kit.Found]:
    """One failed case's findings; `refuted`: the across candidates a passed case rules out; `overflow`:
    whether a float16 overflow may be named (_overflow_explains_all)."""
    outputs = kit.outputs(ev, "mean", "var")
    if outputs is None:
        return
    (mean_obs, var_obs), (mean_true, var_true) = outputs
    case, x, block = ev.case, ev.inputs, int(ev.case.kwargs.get("block", DEFAULT_BLOCK))
    n = x.shape[1]  # the row width (x: rows x cols)
    where = {"case": case.id, "N": n, "BLOCK": block, "programs_per_row": -(-n // block), "calls": case.calls}
    if not (np.all(np.isfinite(mean_obs)) and np.all(np.isfinite(var_obs))):
        over = _half_overflow(x, block, mean_obs, var_obs) if overflow else None
        yield ("half_overflow", {**where, **over}) if over else ("nonfinite_output", where)
        return
    ex2 = (x * x).mean(axis=1)
    floor_mean = 1e-5 * np.sqrt(ex2) + 1e-6
    floor_var = 1e-5 * ex2 + 1e-6
    best = None
    for name, (mean_pred, var_pred) in _candidates(x, block, case.calls).items():
        if _close(mean_obs, mean_pred, floor_mean) and _close(var_obs, var_pred, floor_var):
            best = name
            break
    err_var = var_obs - var_true
    row = int(np.argmax(np.abs(err_var) + np.abs(mean_obs - mean_true)))
    numbers = {
        **where, "row": row, "mean": float(mean_true[row]), "mean_obs": float(mean_obs[row]),
        "var": float(var_true[row]), "var_obs": float(var_obs[row]), "ex2": float(ex2[row]),
        "mean_ratio": float(mean_obs[row] / mean_true[row]) if mean_true[row] else float("nan")}
    # Σx and Σx² k times too large after ONE call: every chunk was added k times in that call (a
    # second launch, or a grid that covers a chunk twice), whatever the buffers held before.
    times = next((k for k in (2, 3, 4) if _close(mean_obs, k * mean_true, floor_mean)
                  and _close(var_obs, k * ex2 - (k * mean_true) ** 2, floor_var)), None)
    if case.calls == 1 and best is None and times is not None:
        yield "added_k_times", {**numbers, "k": times}
        yield kit.ACROSS, {**numbers, "single_call_k": times}
    elif best == "scratch_not_zeroed":  # k calls' sums: unless one call alone already adds k times (_across)
        yield kit.ACROSS, {**numbers, "candidate": best, "k": case.calls}
    elif best is not None:
        yield best, numbers
    else:  # seen by _across: named by a mistake that explains every such case, or unexplained
        matches = {}
        for name, (mean_pred, var_pred) in _across_candidates(x, block).items():
            changes = not (_close(mean_pred, mean_true, 0.0 * ex2) and _close(var_pred, var_true, 0.0 * ex2))
            if name not in refuted and changes and _close(mean_obs, mean_pred, floor_mean) \
                    and _close(var_obs, var_pred, floor_var):
                matches[name] = float(var_pred[row])
        yield kit.ACROSS, {**numbers, "matches": matches}


def _across(pending: list[kit.Numbers]) -> Iterator[kit.Found]:
    """A case called k times on unzeroed buffers and a kernel launched k times per call give the
    same k-fold sums on that case; the single-call cases tell them apart."""
    once = {numbers["single_call_k"] for numbers in pending if "single_call_k" in numbers}
    for numbers in pending:
        if "candidate" in numbers:
            yield ("added_k_times" if numbers["k"] in once else numbers["candidate"]), numbers
    # The cases nothing else explains: under the first candidate that explains every one of them.
    rest = [numbers for numbers in pending if "matches" in numbers]
    explains_all = [m for m in _ACROSS_NAMES if all(m in n["matches"] for n in rest)]
    for numbers in rest:
        out = {k: v for k, v in numbers.items() if k != "matches"}
        if not explains_all:
            yield "unexplained", out
            continue
        name, _, form = explains_all[0].partition(":")
        yield name, {**out, "var_pred": numbers["matches"][explains_all[0]], **({"form": form} if form else {})}


def _words(key: str, cases: list[kit.Numbers]) -> kit.Say:
    """The message of `key`, about the case whose variance is furthest off."""
    c = max(cases, key=lambda d: abs(d.get("var_obs", 0.0) - d.get("var", 0.0)))
    more = {"form_said": kit.Say(f"part.scale.{c['form']}", c)} if key == "combine_scale_wrong" else {}
    return kit.say_about(key, cases, c, at=kit.Say("part.at_row" if "row" in c else "part.at", c), **more)


# The ids _across names a case under only when they explain every case it saw: they lead the report.
CAUSES = ("sumsq_accumulates_sum", "sum_squared_per_program", "std_not_var", "combine_scale_wrong")


def diagnose(evidence: list[kit.CaseEvidence]) -> list[kit.Finding]:
    """The kit's skeleton, with the across candidates that a passed case refutes left out."""
    evidence = list(evidence)
    refuted = frozenset(_refuted(evidence))
    overflow = _overflow_explains_all(evidence)
    return kit.report(kit.collect(evidence, lambda ev: _classify(ev, refuted, overflow), across=_across, causes=CAUSES),
                      _words)
