"""Lesson 7, trusted side: the float64 reference and the signatures of the lesson's misconceptions.

The kernel has two blanks, the padding value `other = c` and the shift `s` subtracted before exp.
Each named misconception is replayed in float32 numpy on the case's own rows (padding lanes
appended, the same overflow to inf and underflow to 0 as the kernel) and compared with what the
kernel returned, NaN for NaN:

- padding 0.0 with the max subtracted: the max becomes max(m, 0), and every padding lane adds
  exp(0 - max) to the denominator; relative to the true max m the denominator grows by exactly
  (BLOCK - N) * exp(-m), so every row's probabilities sum to S / (S + (BLOCK - N) * exp(-m)),
  where S = sum_i exp(x_i - m).
- no max subtracted (padding -inf): exp(x) overflows to inf above ln(FLT_MAX) ≈ 88.72
  (inf / inf = NaN) and underflows to 0 for a whole row below ≈ -103.3 (0 / 0 = NaN).
- the row mean subtracted instead of the max: exp(x - mean) still overflows once max - mean > 88.72.

A finite padding value c other than 0 leaves the same fingerprint as 0 with c in its place: the
denominator grows by (BLOCK - N) * exp(c - m), so c = m + ln(extra / (BLOCK - N)) is read off the
observed row sums.
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from service.exercises import kit

LN_FLT_MAX = float(np.log(np.finfo(np.float32).max))  # 88.72: exp overflows to inf above this
LN_FLT_TINY = float(np.log(np.float32(1.4e-45)))  # -103.28: exp is 0 below this (−87.3 with flush-to-zero)


def reference(x: np.ndarray) -> dict[str, np.ndarray]:
    """Row softmax in float64."""
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return {"y": e / e.sum(axis=1, keepdims=True)}


def _replay(x: np.ndarray, block: int, pad: float, shift: str) -> np.ndarray:
    """The kernel with padding value `pad` and shift `max` / `zero` / `mean`, in float32."""
    rows, n = x.shape
    x32 = x.astype(np.float32)
    full = np.concatenate([x32, np.full((rows, block - n), pad, dtype=np.float32)], axis=1)
    with np.errstate(all="ignore"):
        if shift == "max":
            s = full.max(axis=1, keepdims=True)
        elif shift == "mean":
            s = (x32.sum(axis=1, keepdims=True, dtype=np.float32) / np.float32(n)).astype(np.float32)
        else:
            s = np.zeros((rows, 1), dtype=np.float32)
        e = np.exp(full - s)
        y = e[:, :n] / e.sum(axis=1, keepdims=True, dtype=np.float32)
    return y.astype(np.float64)


def _same(observed: np.ndarray, predicted: np.ndarray) -> bool:
    """NaN where the replay has NaN, inf where it has inf, and close values elsewhere."""
    if not np.array_equal(np.isnan(observed), np.isnan(predicted)):
        return False
    if not np.array_equal(np.isinf(observed), np.isinf(predicted)):
        return False
    finite = np.isfinite(predicted)
    # relative: a replay that gives 0 must not match an output of 1e-24 (tiny, but not underflowed);
    # the floor only absorbs denormals, which a GPU flushes to zero
    return bool(np.all(np.abs(observed[finite] - predicted[finite]) <= 1e-3 * np.abs(predicted[finite]) + 1e-36))


def _padding_value(x: np.ndarray, y_obs: np.ndarray, block: int) -> float | None:
    """The finite padding value c that explains the observed row sums, if one value explains them."""
    n = x.shape[1]
    p = block - n
    if p == 0 or not np.all(np.isfinite(y_obs)):
        return None
    m = x.max(axis=1)
    s = np.exp(x - m[:, None]).sum(axis=1)
    r = y_obs.sum(axis=1)
    usable = (r > 0) & (r < 1 - 1e-4)
    if usable.sum() < max(1, len(r) // 2):
        return None
    c = m[usable] + np.log(s[usable] * (1 / r[usable] - 1) / p)
    centre = float(np.median(c))
    if np.all(np.abs(c - centre) <= 1e-2 * (1 + abs(centre))):
        # the observed shape within each row must be the softmax shape (only the denominator grew)
        shape_ok = np.allclose(y_obs[usable] / r[usable, None], np.exp(x[usable] - m[usable, None]) / s[usable, None],
                               rtol=1e-3, atol=1e-6)
        return centre if shape_ok else None
    return None


def _overflow_rows(x: np.ndarray) -> list[int]:
    return [int(r) for r in np.flatnonzero(x.max(axis=1) > LN_FLT_MAX)]


def _underflow_rows(x: np.ndarray) -> list[int]:
    return [int(r) for r in np.flatnonzero(x.max(axis=1) < LN_FLT_TINY)]


def _no_max(where: kit.Numbers, x: np.ndarray) -> Iterator[kit.Found]:
    over, under = _overflow_rows(x), _underflow_rows(x)
    if over:
        yield "no_max_overflow", {**where, "row": over[0], "rows": over[:12], "row_max": float(x[over[0]].max())}
    if under:
        yield "no_max_underflow", {**where, "row": under[0], "rows": under[:12], "row_max": float(x[under[0]].max())}


def _padding(where: kit.Numbers, x: np.ndarray, y_obs: np.ndarray, c: float, key: str) -> kit.Found:
    n, block = x.shape[1], where["BLOCK"]
    p = block - n
    m = x.max(axis=1)
    s = np.exp(x - m[:, None]).sum(axis=1)
    extra = p * np.exp(c - m)
    r = int(np.argmax(extra / s))
    return key, {**where, "padding": p, "other": c, "row": r, "row_max": float(m[r]), "S": float(s[r]),
                 "extra": float(extra[r]), "predicted_row_sum": float(s[r] / (s[r] + extra[r])),
                 "observed_row_sum": float(np.sum(y_obs[r])), "padding_is_max": bool(c > m[r])}


# A case whose output cannot tell a padding of 0 from another finite value: every row's probabilities
# sum to 0 or 1 (rows far below 0, where every valid lane underflows once a padding lane is the max).
_UNTOLD = "padding_value_untold"


def _zero_padding(where: kit.Numbers, x: np.ndarray, y_obs: np.ndarray) -> kit.Found:
    key, numbers = _padding(where, x, y_obs, 0.0, "padding_zero")
    sums = y_obs.sum(axis=1)
    if not np.any((sums > 0) & (sums < 1 - 1e-4)):
        numbers[_UNTOLD] = True
    return key, numbers


def _classify(ev: kit.CaseEvidence) -> Iterator[kit.Found]:
    assert ev.observed is not None
    case = ev.case
    n, block = case.cols, case.block
    x = ev.inputs
    y_obs = ev.observed["y"].astype(np.float64)
    if y_obs.shape != x.shape:
        return
    where = {"case": case.id, "N": n, "BLOCK": block, "rows": case.rows}

    if block > n and _same(y_obs, _replay(x, block, 0.0, "max")):
        yield _zero_padding(where, x, y_obs)
        return
    if _same(y_obs, _replay(x, block, -np.inf, "zero")):
        yield from _no_max(where, x)
        return
    if block > n and _same(y_obs, _replay(x, block, 0.0, "zero")):
        yield _zero_padding(where, x, y_obs)
        yield from _no_max(where, x)
        return
    if _same(y_obs, _replay(x, block, -np.inf, "mean")):
        mean = x.mean(axis=1)
        gap = x.max(axis=1) - mean
        r = int(np.argmax(gap))
        yield "shift_not_max", {**where, "row": r, "row_max": float(x[r].max()), "row_mean": float(mean[r]),
                                "gap": float(gap[r])}
        return
    c = _padding_value(x, y_obs, block)
    if c is not None:
        yield _padding(where, x, y_obs, c, "padding_zero" if abs(c) < 1e-3 else "padding_not_neg_inf")
        return
    if not np.all(np.isfinite(y_obs)):
        bad = [int(r) for r in np.flatnonzero(~np.all(np.isfinite(y_obs), axis=1))]
        yield "nonfinite_output", {**where, "rows_bad": bad[:12]}
        return
    err = np.abs(y_obs - ev.expected["y"])
    r = int(np.argmax(err.max(axis=1)))
    yield "unexplained_softmax", {**where, "row": r, "max_abs_err": float(err.max()), "row_sum": float(y_obs[r].sum())}


def _words(key: str, cases: list[kit.Numbers]) -> kit.Say:
    limits = {"ln_flt_max": LN_FLT_MAX, "ln_flt_tiny": LN_FLT_TINY}
    if key in ("padding_zero", "padding_not_neg_inf"):
        # the example row: one whose probabilities still sum to something (not all underflowed to 0)
        c = max(cases, key=lambda d: (d["observed_row_sum"] > 0, d["extra"] / d["S"]))
        note = kit.Say("padding.max_note", c) if c["padding_is_max"] else ""
        explained = kit.Say("padding.explained", {**c, "pad": kit.Say(f"{key}.pad", c), "max_note": note})
        return kit.say_about(key, cases, c, explained=explained)
    if key == "shift_not_max":
        return kit.say_about(key, cases, max(cases, key=lambda d: d["gap"]), **limits)
    return kit.say_about(key, cases, **limits)


def _told_padding(findings: dict[str, list[kit.Numbers]], evidence: list[kit.CaseEvidence]) -> None:
    """A case matched "padding 0" whose output cannot tell 0 from another value (_UNTOLD) goes under the
    finite padding value the other cases showed, when a replay with that value gives its output too
    (other=-1.0 read as "filled with 0.0" on probe.very_negative, beside "about -1" on four cases)."""
    shown = [w["other"] for w in findings.get("padding_not_neg_inf", [])]
    kept = []
    for where in findings.get("padding_zero", []):
        untold = where.pop(_UNTOLD, False)
        ev = next((e for e in evidence if e.case.id == where["case"]), None)
        if untold and shown and ev is not None and ev.observed is not None:
            c = float(np.median(shown))
            y_obs = ev.observed["y"].astype(np.float64)
            if _same(y_obs, _replay(ev.inputs, where["BLOCK"], c, "max")):
                base = {k: where[k] for k in ("case", "N", "BLOCK", "rows")}
                findings["padding_not_neg_inf"].append(_padding(base, ev.inputs, y_obs, c, "padding_not_neg_inf")[1])
                continue
        kept.append(where)
    if "padding_zero" in findings:
        if kept:
            findings["padding_zero"] = kept
        else:
            del findings["padding_zero"]


def _no_max_contradicted(findings: dict[str, list[kit.Numbers]], evidence: list[kit.CaseEvidence]) -> None:
    """"The row maximum was not subtracted" predicts NaN on every row beyond exp's range, in every case: a
    case that passed with such a row (probe.large_logits passing) says the kernel does shift, by something
    other than the max (`tl.max(tl.abs(x))`: right on rows near +500, 0/0 on rows near -150, sixth probe
    batch, l7_6.wrong.shift_max_abs). Its NaN cases go under nonfinite_output, which names the shift among
    the causes without claiming it is missing."""
    if not any(ev.passed and (_overflow_rows(ev.inputs) or _underflow_rows(ev.inputs)) for ev in evidence):
        return
    cases = {ev.case.id: ev for ev in evidence}
    for key in ("no_max_overflow", "no_max_underflow"):
        for where in findings.pop(key, []):
            ev = cases.get(where["case"])
            if ev is None or ev.observed is None:
                continue
            if any(w["case"] == where["case"] for w in findings.get("nonfinite_output", [])):
                continue
            y_obs = ev.observed["y"].astype(np.float64)
            bad = [int(r) for r in np.flatnonzero(~np.all(np.isfinite(y_obs), axis=1))]
            base: kit.Numbers = {k: where[k] for k in ("case", "N", "BLOCK") if k in where}
            findings.setdefault("nonfinite_output", []).append({**base, "rows": ev.case.rows, "rows_bad": bad[:12]})


def diagnose(evidence: list[kit.CaseEvidence]) -> list[kit.Finding]:
    """kit.make_diagnose's, with two rules across cases (_told_padding, _no_max_contradicted)."""
    evidence = list(evidence)
    findings = kit.collect(evidence, _classify)
    _told_padding(findings, evidence)
    _no_max_contradicted(findings, evidence)
    return kit.report(findings, _words)
