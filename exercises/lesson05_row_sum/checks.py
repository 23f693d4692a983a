"""Lesson 5, trusted side: the float64 reference and the signatures of the lesson's misconceptions.

A row-sum kernel can only go wrong in three places, one per blank, and each leaves its own
fingerprint in the observed sums `s`:

- padding value `other = c` (not the additive identity 0): every row is off by exactly
  `(BLOCK - N) * c`, the same amount in every row; `c = (s - ref) / (BLOCK - N)` names the fill
  (1.0, a huge negative "max identity", ...). An infinite fill makes every sum ±inf.
- mask: lanes `[0, k)` are summed, `s = prefix_k(x)`; k = N - 1 drops the last lane, a fixed k
  across different N is a hard-coded width.
- row address: on a strided case (a view of a wider buffer whose extra columns hold NaN) the
  kernel's reads are replayed on that buffer: row r read from `r * N` instead of `r * stride`
  hits the NaN columns in every row but row 0; a mask of `cols < stride` reads them in every row.
"""
from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from service.exercises import kit


def reference(x: np.ndarray) -> dict[str, np.ndarray]:
    """Row sums in float64."""
    return {"sums": np.asarray(x, dtype=np.float64).sum(axis=1)}


def _close(observed: np.ndarray, predicted: np.ndarray, scale: np.ndarray | float) -> bool:
    """observed ≈ predicted in every row (fp32 kernels: ~1e-6 relative to the row's magnitude)."""
    both_nan = np.isnan(observed) & np.isnan(predicted)
    same_inf = np.isinf(observed) & (observed == predicted)
    finite = np.isfinite(observed) & np.isfinite(predicted)
    ok = np.zeros(observed.shape, dtype=bool)
    bound = 1e-3 * np.broadcast_to(scale, observed.shape)[finite] + 1e-6
    ok[finite] = np.abs(observed[finite] - predicted[finite]) <= bound
    return bool(np.all(ok | both_nan | same_inf))


def _replay(buffer: np.ndarray, rows: int, step: int, lanes: int) -> tuple[np.ndarray, np.ndarray]:
    """Sums a kernel gets that reads `lanes` elements from `row * step` of the flat buffer;
    NaN marks rows whose read would leave the buffer (not predictable: skipped when comparing)."""
    out = np.full(rows, np.nan)
    known = np.zeros(rows, dtype=bool)
    for r in range(rows):
        start = r * step
        if start + lanes <= buffer.size:
            out[r] = buffer[start:start + lanes].sum()
            known[r] = True
    return out, known


def _strided_reading(ev: kit.CaseEvidence, s_obs: np.ndarray) -> kit.Found | None:
    """Which wrong way of addressing the wider buffer explains the observed sums."""
    case = ev.case
    rows, n, stride, block = case.rows, case.cols, case.row_stride, case.block
    wide = np.full((rows, stride), np.nan)
    wide[:, :n] = ev.inputs
    flat = wide.ravel()
    candidates = [
        ("row_stride_is_n", n, n),
        ("row_stride_is_block", block, n),
        ("mask_too_wide", stride, min(stride, block)),  # cols < stride (cols < BLOCK reads the same NaN)
    ]
    for key, step, lanes in candidates:
        if step == stride and lanes == n:
            continue
        predicted, known = _replay(flat, rows, step, lanes)
        if known.sum() < 2:
            continue
        scale = np.abs(ev.inputs).sum(axis=1)[known] + 1.0
        if _close(s_obs[known], predicted[known], scale):
            nan_rows = [int(r) for r in np.flatnonzero(np.isnan(s_obs))]
            return key, {"step": step, "lanes": lanes, "nan_rows": nan_rows[:12], "nan_row_count": len(nan_rows),
                         _NAN_ONLY: bool(np.all(np.isnan(predicted[known])))}
    return None


def _lanes_counted(x: np.ndarray, s_obs: np.ndarray) -> int | None:
    """The k < N for which 'lanes [0, k) were summed' explains every row, if one does: of those
    within the tolerance, the closest (on a wide row the tolerance, relative to the row's size, spans
    several lanes: the first within it said 5607 lanes where cols < N - 1 had summed 5612)."""
    rows, n = x.shape
    prefix = np.concatenate([np.zeros((rows, 1)), np.cumsum(x, axis=1)], axis=1)
    scale = np.abs(x).sum(axis=1) + 1.0
    with np.errstate(invalid="ignore"):
        worst = np.max(np.abs(s_obs[:, None] - prefix[:, :n]) / scale[:, None], axis=0)  # per k, NaN if any row is
    for k in (int(k) for k in np.argsort(worst, kind="stable")):  # the closest first; NaN last
        if not np.isfinite(worst[k]):
            break
        if _close(s_obs, prefix[:, k], scale):
            return k
    return None


def _classify(ev: kit.CaseEvidence) -> Iterator[kit.Found]:
    """One failed case's finding; a case explained by a count of lanes waits under kit.ACROSS (the
    same count across widths is a hard-coded width)."""
    assert ev.observed is not None
    case = ev.case
    n, block = case.cols, case.block
    x = ev.inputs
    s_true = ev.expected["sums"]
    s_obs = ev.observed["sums"].astype(np.float64)
    where: kit.Numbers = {"case": case.id, "N": n, "BLOCK": block, "rows": case.rows}
    if case.stride is not None:
        where["stride"] = case.stride
        reading = _strided_reading(ev, s_obs)
        if reading is not None:
            key, numbers = reading
            yield key, {**where, **numbers}
            return
    if not np.all(np.isfinite(s_obs)):
        if block > n and np.all(np.isinf(s_obs)) and len(set(np.sign(s_obs))) == 1:
            yield "padding_infinite", {**where, "value": float(s_obs[0]), "padding": block - n}
        else:
            bad = [int(r) for r in np.flatnonzero(~np.isfinite(s_obs))]
            yield "nonfinite_output", {**where, "rows_bad": bad[:12]}
        return

    diff = s_obs - s_true
    worst = int(np.argmax(np.abs(diff)))
    if block > n:
        per_lane = diff / (block - n)
        c = float(np.median(per_lane))
        slack = (1e-3 * (np.abs(x).sum(axis=1) + np.abs(s_obs)) + 1e-4) / (block - n)
        # A per-lane value inside the comparison's own slack is no evidence of a padding value: on a
        # wide case with few rows, a sum one lane short (cols < N - 1) is off by so little per padding
        # lane that any two rows "agree" on it.
        if abs(c) > float(slack.max()) and np.all(np.abs(per_lane - c) <= 1e-3 * abs(c) + slack):
            yield "padding_not_identity", {**where, "padding": block - n, "other": c, "row": worst,
                                           "offset": float(diff[worst]), "predicted_offset": (block - n) * c}
            return
    k = _lanes_counted(x, s_obs)
    if k is not None:
        yield kit.ACROSS, {"case": case.id, "N": n, "BLOCK": block, "lanes_counted": k, "row": worst,
                           "missing": float(-diff[worst])}
        return
    unexplained: kit.Numbers = {**where, "row": worst, "max_abs_err": float(abs(diff[worst]))}
    if block > n:
        # Each row's offset per padding lane, and the float32 rounding it carries (~√N·ε·Σ|x|): a wide
        # row's few padding lanes are inside the comparison's slack above, yet may show the padding
        # value another case proved (diagnose, below).
        per_lane = diff / (block - n)
        rounding = (np.sqrt(n) * 2.0 ** -23 * (np.abs(x).sum(axis=1) + np.abs(s_obs)) + 1e-6) / (block - n)
        unexplained[_PER_LANE] = (float(per_lane.min()), float(per_lane.max()), float(rounding.max()),
                                  float(diff[worst]), block - n)
    yield "unexplained_sum", unexplained


def _lane_counts(cases: list[kit.Numbers]) -> Iterator[kit.Found]:
    """Name each count of lanes summed, knowing every case's."""
    for where in cases:
        n, k = where["N"], where["lanes_counted"]
        other_ns = {d["N"] for d in cases if d["lanes_counted"] == k}
        if len(other_ns) >= 2 and k != n - 1:
            yield "hardcoded_width", where
        elif k == n - 1:
            yield "drops_last_lane", where
        else:
            yield "wrong_lane_count", where


def _words(key: str, cases: list[kit.Numbers]) -> kit.Say:
    if key == "padding_not_identity":
        c = max(cases, key=lambda d: d["padding"])
        # a huge negative fill is the max reduction's idea (its identity is −inf)
        note = kit.say("padding_not_identity.max_note") if c["other"] < -1e6 else ""
        return kit.say_about(key, cases, c, max_note=note)
    if key in ("row_stride_is_n", "mask_too_wide"):
        return kit.say_about(key, cases, extra_cols=cases[0]["stride"] - cases[0]["N"])
    return kit.say_about(key, cases)


# A strided reading confirmed only by rows that are NaN (the gap after each row is NaN) is also what a
# NaN padding value gives (other=float("nan")): the cases decide together (diagnose, below).
_NAN_ONLY = "nan_only"
_READINGS = ("row_stride_is_n", "row_stride_is_block", "mask_too_wide")


# An unexplained case's offsets per padding lane: (lowest, highest, rounding, worst row's offset, padding).
_PER_LANE = "per_padding_lane"


def _same_padding_value(findings: dict[str, list[kit.Numbers]]) -> None:
    """A case left unexplained whose every row is off by (BLOCK − N) times the padding value the other
    cases showed, within float32 rounding, is that padding value too (a wide row's 8 padding lanes
    filled with 1.0, beside a diagnosis that said other=1 on the others, was "matches none of the
    lesson's known misconceptions"); the per-lane figures leave the evidence either way."""
    unexplained = findings.get("unexplained_sum", [])
    shown = [w["other"] for w in findings.get("padding_not_identity", [])]
    kept = []
    for where in unexplained:
        low, high, rounding, offset, padding = where.pop(_PER_LANE, (0.0, 0.0, math.inf, 0.0, 0))
        other = float(np.median(shown)) if shown else math.nan
        if (shown and abs(other) > 3 * rounding and max(abs(low - other), abs(high - other)) <= 1e-3 * abs(other) + rounding):
            moved: kit.Numbers = {k: where[k] for k in ("case", "N", "BLOCK", "rows", "stride") if k in where}
            findings.setdefault("padding_not_identity", []).append(
                {**moved, "padding": padding, "other": (low + high) / 2, "row": where["row"], "offset": offset,
                 "predicted_offset": padding * other})
        else:
            kept.append(where)
    if unexplained:
        if kept:
            findings["unexplained_sum"] = kept
        else:
            del findings["unexplained_sum"]


def diagnose(evidence: list[kit.CaseEvidence]) -> list[kit.Finding]:
    """kit.make_diagnose's, with one rule across cases: when a contiguous case's sums are not finite
    too, the padding is the cause, and a strided case matched on NaN rows alone says nothing about the
    row address or the mask (it is reported as non-finite, as the other cases are)."""
    findings = kit.collect(evidence, _classify, across=_lane_counts)
    _same_padding_value(findings)
    padding_nonfinite = any("stride" not in where for key in ("nonfinite_output", "padding_infinite")
                            for where in findings.get(key, []))
    named: dict[str, list[kit.Numbers]] = {}
    for key, cases in findings.items():  # in the order found
        for where in cases:
            if key in _READINGS and where.pop(_NAN_ONLY, False) and padding_nonfinite:
                key_now, where = "nonfinite_output", {k: where[k] for k in ("case", "N", "BLOCK", "rows", "stride")
                                                      if k in where} | {"rows_bad": where["nan_rows"]}
            else:
                key_now = key
            named.setdefault(key_now, []).append(where)
    return kit.report(named, _words)
