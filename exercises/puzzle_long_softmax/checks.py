"""Puzzle 8 (Long Softmax), trusted side: inputs, the float64 reference, and signatures.

The signatures recompute, in float64, what each known mistake returns for the same inputs:
online softmax without rescaling the running sum when the max grows; the blog's own
`padding_option='zero'` (padding lanes enter the max and add exp(0 - m) each to the sum);
exp2 without the log2(e) factor (a base-2 softmax); only the first block; no max subtraction
(overflow on large logits); the max of the first block only (overflow past it).
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from service.exercises import kit

SENTINEL = -1234.5  # what the template's long_softmax keeps after z (B0 rows of it)

LOG2E = 1.4426950408889634
LN_FLT_MAX = float(np.log(np.finfo(np.float32).max))  # 88.72: float32 exp overflows above this


def make_inputs(case: kit.CaseSpec, seed: int) -> kit.Arrays:
    rng = np.random.default_rng(seed)
    n0, t = kit.int_param(case, "N0"), kit.int_param(case, "T")
    kind = case.params.get("kind", "normal")
    if kind == "rising":  # every row climbs along T: the running max grows block after block
        x = (np.linspace(0.0, 1.0, t)[None, :] * rng.uniform(8.0, 12.0, size=(n0, 1))
             + 0.3 * rng.standard_normal((n0, t)))
    elif kind == "negative":  # all logits negative: a zero-padded lane becomes the row max
        x = rng.uniform(-8.0, -4.0, size=(n0, t))
    elif kind == "late_max":  # the max ~100 above the first block's, every logit below 88.7
        x = np.where(np.arange(t)[None, :] < t // 2, -60.0, 40.0) + rng.standard_normal((n0, t))
    elif kind == "large":  # exp(x) overflows float32 (max ~ 3.4e38 = exp(88.7))
        x = rng.uniform(95.0, 105.0, size=(n0, 1)) + 2.0 * rng.standard_normal((n0, t))
    else:
        x = rng.uniform(-2.0, 2.0, size=(n0, 1)) + 1.5 * rng.standard_normal((n0, t))
    return {"x": x.astype(np.float32)}


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def reference(x: np.ndarray) -> kit.Arrays:
    return {"z": _softmax(np.asarray(x, dtype=np.float64))}


def _no_rescale(x: np.ndarray, b1: int) -> np.ndarray:
    n0, t = x.shape
    m = np.full(n0, -np.inf)
    s = np.zeros(n0)
    for start in range(0, t, b1):
        blk = x[:, start:start + b1]
        m = np.maximum(m, blk.max(axis=1))
        s = s + np.exp(blk - m[:, None]).sum(axis=1)
    return np.exp(x - m[:, None]) / s[:, None]


def _zero_padding(x: np.ndarray, b1: int) -> np.ndarray:
    t = x.shape[1]
    pad = -t % b1
    m = np.maximum(x.max(axis=1), 0.0) if pad else x.max(axis=1)
    e = np.exp(x - m[:, None])
    s = e.sum(axis=1) + pad * np.exp(-m)
    return e / s[:, None]


def _base2(x: np.ndarray) -> np.ndarray:
    e = np.exp2(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _exponent_scale(x: np.ndarray, z: np.ndarray) -> float | None:
    """The k for which z is softmax(k·x) row by row, if one k explains every row: log z against x is a
    line of slope k in each row (read from the rows' positive outputs)."""
    slopes = []
    for xr, zr in zip(x, z):
        keep = zr > 1e-30
        if keep.sum() < 3 or np.ptp(xr[keep]) < 1e-3:
            continue
        slopes.append(float(np.polyfit(xr[keep].astype(np.float64), np.log(zr[keep]), 1)[0]))
    if not slopes:
        return None
    k = float(np.median(slopes))
    return k if np.all(np.abs(np.array(slopes) - k) <= 1e-3 * abs(k) + 1e-6) else None


def _scaled(x: np.ndarray, k: float) -> np.ndarray:
    e = np.exp(k * (x - x.max(axis=1, keepdims=True)))
    return e / e.sum(axis=1, keepdims=True)


def _close(observed: np.ndarray, predicted: np.ndarray) -> bool:
    ok = np.isfinite(predicted)
    if not ok.any() or not np.all(np.isfinite(observed[ok])):
        return False
    return bool(np.all(np.abs(observed[ok] - predicted[ok]) <= 1e-3 * np.abs(predicted[ok]) + 1e-7))


def _half_sum(x: np.ndarray, z: np.ndarray) -> kit.Numbers | None:
    """Evidence that each row's sum s was kept in a 16-bit float (s = tl.zeros(..., tl.float16), each update
    cast back; seventh probe batch, lsm7.wrong.fp16_running_sum): every row is exp(x - max) / s_h, and the s_h
    each row implies (1 / z at the row's maximum) is a float16 (bfloat16) number to float32's rounding, off the
    true sum by more than the tolerance. A float32 value lies so close to a float16 one by chance once in a
    few hundred rows."""
    if x.shape != z.shape or x.shape[1] < 2 or not np.all(np.isfinite(z)):
        return None
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    s_true = e.sum(axis=1)
    top = np.argmax(x, axis=1)
    zt = z[np.arange(z.shape[0]), top]
    if np.any(zt <= 0):
        return None
    s_h = 1.0 / zt
    if not np.all(np.abs(z - e / s_h[:, None]) <= 1e-5 * np.abs(z) + 1e-7):  # one factor per row
        return None
    for dtype, rnd, bits in (("float16", lambda a: a.astype(np.float16).astype(np.float64), 11),
                             ("bfloat16", lambda a: kit._to_bfloat16(a).astype(np.float64), 8)):
        with np.errstate(over="ignore"):
            near = np.abs(rnd(s_h.astype(np.float32)) - s_h) <= 4e-6 * s_h
        off = np.abs(s_h - s_true) > 1e-4 * s_true
        if np.all(near) and np.any(off):
            r = int(np.argmax(np.abs(s_h - s_true)))
            return {"dtype": dtype, "bits": bits, "sum_row": r, "sum_true": float(s_true[r]), "sum_kept": float(s_h[r])}
    return None


def _classify(ev: kit.CaseEvidence) -> Iterator[kit.Found]:
    where = kit.case_numbers(ev.case, params=("N0", "T"), kwargs={"B0": 4, "B1": 32})
    n0, t, b0, b1 = where["N0"], where["T"], where["B0"], where["B1"]
    if ev.observed is None:
        for key, numbers in kit.store_out_of_bounds(ev, {**where, "rows_past_end": -n0 % b0, "pad": -t % b1},
                                                    data_len=n0 * t, total_len=(n0 + b0) * t, sentinel=SENTINEL):
            # No row of this case lies past N0: what went past z came from the last row's columns
            # past T (the store's column mask), or, with none either, from the addresses.
            if numbers["rows_past_end"] == 0:
                key = "store_cols_out_of_bounds" if numbers["pad"] else "store_address_out_of_bounds"
            yield key, numbers
        return
    x = ev.arrays["x"]
    z = ev.observed["z"].astype(np.float64)
    ref = ev.expected["z"]
    xmax = float(x.max())
    correct = np.all(np.abs(z - ref) <= 1e-3 * np.abs(ref) + 1e-6, axis=1)
    ignored = kit.row_block_ignored(correct, np.all(np.isnan(z), axis=1), rows=n0, block=b0)
    if ignored is not None:
        yield kit.ROW_BLOCK_IGNORED, {**where, **ignored}
        return
    if xmax <= LN_FLT_MAX:  # a failed case that no overflow explains: seen by _across
        yield kit.ACROSS, {**where, "overflows": False}
    if not np.all(np.isfinite(z)):
        bad = ~np.isfinite(z)
        written = ~bad
        right_elsewhere = bool(np.all(np.abs(z[written] - ref[written]) <= 1e-3 * np.abs(ref[written]) + 1e-6))
        # Each signature holds only where its whole pattern does: NaN exactly where the mistake puts
        # it (an inverted rescale is NaN everywhere, a tail mask one column short is NaN in one column).
        overflow = x > LN_FLT_MAX  # exp(x) is inf there without a max subtracted; inf/inf = NaN
        near = np.abs(x - LN_FLT_MAX) < 0.5  # float32 rounding at the threshold: either way
        tail = int(t - np.flatnonzero(~bad.all(axis=0)).max() - 1) if not bad.all() else t
        first_max = x[:, :min(b1, t)].max(axis=1, keepdims=True)
        past_first = x - first_max > LN_FLT_MAX  # exp(x - m) is inf there when m is the first block's max
        near_first = np.abs(x - first_max - LN_FLT_MAX) < 0.5
        if t > b1 and past_first.any() and not overflow.any() and not np.any((bad != past_first) & ~near_first):
            hit = int(np.flatnonzero(past_first.any(axis=1))[0])
            yield "max_of_first_block", {**where, "nonfinite": int(bad.sum()), "row": hit,
                                         "first_max": float(first_max[hit, 0]), "row_max": float(x[hit].max())}
        elif overflow.any() and not np.any((bad != overflow) & ~near):
            # so far it fits; the other cases decide (_across): without a max subtracted, every
            # case whose logits stay below 88.7 is right
            yield kit.ACROSS, {**where, "x_max": xmax, "nonfinite": int(bad.sum()), "overflows": True}
        elif t > b1 and bad[:, b1:].all() and not bad[:, :b1].any():
            yield "first_block_only", {**where, "first_unwritten_col": b1}
        elif 0 < tail < min(t, b1) and bad[:, t - tail:].all() and not bad[:, :t - tail].any() and right_elsewhere:
            yield "tail_columns_unwritten", {**where, "tail": tail, "first_unwritten_col": t - tail}
        else:
            yield "nonfinite_output", {**where, "nonfinite": int(bad.sum())}
        return
    row_sums = z.sum(axis=1)
    half = kit.half_rounded(z, ref)
    if half is not None:  # every value a float16 (bfloat16) number: the result went through it (kit.half_rounded)
        r, c = np.unravel_index(int(np.argmax(np.abs(z - ref))), z.shape)
        yield "half_precision_output", {**where, "row": int(r), "col": int(c), "observed": float(z[r, c]),
                                        "expected": float(ref[r, c]), **half}
        return
    sum_half = _half_sum(x, z)
    if sum_half is not None:
        r, c = np.unravel_index(int(np.argmax(np.abs(z - ref))), z.shape)
        yield "half_precision_sum", {**where, "row": int(r), "col": int(c), "observed": float(z[r, c]),
                                     "expected": float(ref[r, c]), "row_sum": float(row_sums[r]), **sum_half}
        return
    candidates = {
        "no_rescale": (_no_rescale(x, b1), t > b1),
        "zero_padding": (_zero_padding(x, b1), -t % b1 != 0),
        "exp2_without_log2e": (_base2(x), True),
        # x read column-major (element (i, j) at i + j * N0; eighth probe batch, lsm8.wrong.x_column_major),
        # z stored row-major: each row is the softmax of a column-major walk of x
        "column_major": (_softmax(np.asarray(x, dtype=np.float64).ravel().reshape(t, n0).T), n0 > 1 and t > 1),
    }
    for key, (pred, applies) in candidates.items():
        if applies and _close(z, pred):
            r, c = np.unravel_index(int(np.argmax(np.abs(z - ref))), z.shape)
            yield key, {**where, "row": int(r), "col": int(c), "observed": float(z[r, c]), "expected": float(ref[r, c]),
                        "predicted": float(pred[r, c]), "row_sum": float(row_sums[r]), "pad": -t % b1,
                        "row_max": float(x[r].max())}
            return
    k = _exponent_scale(x, z)
    if k is not None and abs(k - 1.0) > 1e-5:
        pred = _scaled(x, k)
        if _close(z, pred) and not _close(ref, pred):  # the scale told apart from 1 by the outputs themselves
            r, c = np.unravel_index(int(np.argmax(np.abs(z - ref))), z.shape)
            yield "exponent_scaled", {**where, "row": int(r), "col": int(c), "observed": float(z[r, c]),
                                      "expected": float(ref[r, c]), "predicted": float(pred[r, c]), "scale": k,
                                      "log2e_used": k * LOG2E}
            return
    r, c = np.unravel_index(int(np.argmax(np.abs(z - ref))), z.shape)
    yield "unexplained_softmax", {**where, "row": int(r), "col": int(c), "observed": float(z[r, c]),
                                  "expected": float(ref[r, c]), "row_sum": float(row_sums[r])}


def _across(pending: list[kit.Numbers]) -> Iterator[kit.Found]:
    """No max subtracted explains NaN on large logits only if it explains every failed case: the
    same kernel is right wherever the logits stay below 88.7 (an inverted rescale is not)."""
    overflowing = [numbers for numbers in pending if numbers["overflows"]]
    elsewhere = len(overflowing) < len(pending)
    for numbers in overflowing:
        yield ("nonfinite_output" if elsewhere else "overflow_no_max"), numbers


def _words(key: str, cases: list[kit.Numbers]) -> kit.Say:
    if key in ("store_out_of_bounds", "store_cols_out_of_bounds", "store_address_out_of_bounds"):
        return kit.say_about(key, cases, position=cases[0]["first_past_end"] + 1)
    return kit.say_about(key, cases)


diagnose = kit.make_diagnose(_classify, _words, with_outputs=False, across=_across)
