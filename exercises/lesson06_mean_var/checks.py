"""Lesson 6, trusted side: the float64 reference and the signatures of the lesson's misconceptions.

Most wrong fills of the re-mask change *which lanes* the second sum counts. So the main signature
reads, from the observed variance, how many lanes were counted: with `S = var_obs * N` the
observed sum of squares and `mu` the row mean, a kernel that counts lanes `[0, k)` gives
`S = sum_{i<min(k,N)} (x_i - mu)^2 + max(0, min(k,BLOCK) - N) * mu^2` (padding lanes hold 0.0,
which becomes -mu, then mu^2). Solving for k names the bug: k = BLOCK is the missing re-mask,
k = N + 1 is `cols <= N`, k = N - 1 drops the last valid lane, and the same k across different N
is a hard-coded width, and k = stride_m on a strided case (a view x[:, :N] of a wider buffer, with
N < stride < BLOCK) while the contiguous cases pass is a mask built from the row stride: the extra
lanes are padding lanes the load already masked to 0.0 (its mask stays cols < N), so they add mu^2
each, like the missing re-mask. Masks that depend on values (`values != 0`, `values > 0`) are recognised
by recomputing S over the lanes such a mask keeps.
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from service.exercises import kit


def reference(x: np.ndarray) -> dict[str, np.ndarray]:
    """Population mean and variance per row, in float64."""
    x = np.asarray(x, dtype=np.float64)
    return {"mean": x.mean(axis=1), "var": x.var(axis=1)}


def _matches(observed: np.ndarray, predicted: np.ndarray, floor: np.ndarray | float = 0.0) -> bool:
    """observed ≈ predicted in every row, relative to their own size (fp32 kernels: ~1e-6)."""
    scale = np.abs(observed) + np.abs(predicted) + floor
    return bool(np.all(np.abs(observed - predicted) <= 1e-3 * scale + 1e-9))


def _lanes_counted(x: np.ndarray, mean: np.ndarray, var_obs: np.ndarray, block: int) -> int | None:
    """The k for which 'lanes [0, k) were counted' explains every row best, if it explains them."""
    rows, n = x.shape
    sq = (x - mean[:, None]) ** 2
    prefix = np.concatenate([np.zeros((rows, 1)), np.cumsum(sq, axis=1)], axis=1)  # prefix[:, k]
    s_obs = var_obs * n
    best, best_residual = None, np.inf
    for k in range(block + 1):
        predicted = prefix[:, min(k, n)] + max(0, min(k, block) - n) * mean**2
        residual = float(np.max(np.abs(s_obs - predicted) / (np.abs(s_obs) + np.abs(predicted) + 1e-12)))
        if residual < best_residual:
            best, best_residual = k, residual
    if best is None or best == n:
        return None
    predicted = prefix[:, min(best, n)] + max(0, min(best, block) - n) * mean**2
    return best if _matches(s_obs, predicted, 1e-6 * prefix[:, -1]) else None


def _value_mask(x: np.ndarray, mean: np.ndarray, var_obs: np.ndarray, block: int) -> str | None:
    n = x.shape[1]
    sq = (x - mean[:, None]) ** 2
    s_obs = var_obs * n
    pad = (block - n) * mean**2
    candidates = {
        "values != 0": (x != 0, False),
        "values > 0": (x > 0, False),
        "values >= 0": (x >= 0, True),
        "values < 0": (x < 0, False),
    }
    for label, (keep, pads_kept) in candidates.items():
        predicted = np.where(keep, sq, 0.0).sum(axis=1) + (pad if pads_kept else 0.0)
        if np.all(keep) and not pads_kept:
            continue  # keeps exactly the valid lanes here: indistinguishable from the right mask
        if _matches(s_obs, predicted, 1e-6 * sq.sum(axis=1)):
            return label
    return None


def _lanes_per_row(x: np.ndarray, mean: np.ndarray, var_obs: np.ndarray, block: int) -> list[int] | None:
    """Each row's own count of lanes counted ([0, k), as _lanes_counted, one k per row), where every row is
    explained so and the counts differ between rows: a mask that changes with the row (eighth probe batch:
    `row * stride_m + cols < N`, a CUDA global index compared with the row length, keeps row 0 alone;
    `... < (row + 1) * N` keeps N − r·(stride_m − N) lanes of row r on a strided view)."""
    rows, n = x.shape
    if rows < 2:
        return None
    sq = (x - mean[:, None]) ** 2
    prefix = np.concatenate([np.zeros((rows, 1)), np.cumsum(sq, axis=1)], axis=1)
    ks = np.arange(block + 1)
    table = prefix[:, np.minimum(ks, n)] + np.maximum(0, np.minimum(ks, block) - n)[None, :] * (mean**2)[:, None]
    s_obs = (var_obs * n)[:, None]
    residual = np.abs(s_obs - table) / (np.abs(s_obs) + np.abs(table) + 1e-12)
    counts = [int(k) for k in np.argmin(residual, axis=1)]
    best = table[np.arange(rows), counts]
    # held tighter than _matches (1e-3): on a wide row one lane moves the sum by about 1/N of it, and a
    # loose match would find some count for any variance below the right one
    s = var_obs * n
    if len(set(counts)) < 2 or not np.all(np.abs(s - best) <= 2e-5 * (np.abs(s) + np.abs(best)) + 1e-6 * prefix[:, -1]):
        return None
    return counts


def _classify(ev: kit.CaseEvidence) -> Iterator[kit.Found]:
    """One failed case's finding; a case explained by a count of lanes waits under kit.ACROSS (what
    that count means depends on the other cases: the same count across widths is a hard-coded width)."""
    assert ev.observed is not None
    case = ev.case
    n, block = case.cols, case.block
    x = ev.inputs
    mean_true, var_true = ev.expected["mean"], ev.expected["var"]
    mean_obs = ev.observed["mean"].astype(np.float64)
    var_obs = ev.observed["var"].astype(np.float64)
    where = {"case": case.id, "N": n, "BLOCK": block, "rows": case.rows}

    if not (np.all(np.isfinite(mean_obs)) and np.all(np.isfinite(var_obs))):
        yield "nonfinite_output", where
        return
    if not _matches(mean_obs, mean_true, 1e-3):
        if block != n and _matches(mean_obs, mean_true * n / block, 1e-3):
            yield "divide_by_block", {**where, "ratio": n / block}
        return
    if _matches(var_obs, var_true, 1e-6):
        return
    if n > 1 and _matches(var_obs, var_true * n / (n - 1)):
        yield "bessel", {**where, "ratio": n / (n - 1)}
        return
    if block != n and _matches(var_obs, var_true * n / block):
        yield "divide_by_block", {**where, "ratio": n / block}
        return
    # Position first: on all-positive rows, "all BLOCK lanes" and "values >= 0" are the same set.
    k = _lanes_counted(x, mean_obs, var_obs, block)
    if k == 0 and (label := _value_mask(x, mean_obs, var_obs, block)) is not None:
        # no lane counted (variance 0) says nothing about positions: a value mask that no lane
        # meets (values > 0 on all-negative rows) gives it too, and names what the code does
        yield "value_based_mask", {**where, "mask": label}
        return
    if k is not None:
        excess = var_obs - var_true
        worst = int(np.argmax(np.abs(excess)))
        numbers = {"case": case.id, "N": n, "BLOCK": block, "lanes_counted": k, "row": worst,
                   "mean": float(mean_obs[worst]), "excess": float(excess[worst])}
        if case.stride is not None:
            numbers["stride"] = case.stride
        yield kit.ACROSS, numbers
        return
    label = _value_mask(x, mean_obs, var_obs, block)
    if label is not None:
        yield "value_based_mask", {**where, "mask": label}
        return
    counts = _lanes_per_row(x, mean_obs, var_obs, block)
    if counts is not None:
        shown = ", ".join(f"row {r}: {k}" for r, k in enumerate(counts[:4]))
        yield "row_dependent_mask", {**where, "counts": shown, "stride": case.stride if case.stride is not None else n}
        return
    yield "unexplained_variance", {**where, "max_abs_err": float(np.max(np.abs(var_obs - var_true)))}


def _counts_to_stride(d: kit.Numbers) -> bool:
    """The case's lane count is what `cols < stride_m` gives there: min(stride, BLOCK) lanes."""
    stride = d.get("stride")
    return stride is not None and d["lanes_counted"] == min(stride, d["BLOCK"])


def _uses_row_stride(cases: list[kit.Numbers]) -> bool:
    """Every case explained by a lane count counted up to its row stride, and one of them tells
    that apart from the missing re-mask (N < stride < BLOCK). Contiguous cases (stride = N) pass
    with such a mask, so a contiguous case among these, or one whose count is not its stride (the
    same count on other widths: a hard-coded width), means it is something else."""
    return all(_counts_to_stride(d) for d in cases) and \
        any(d["N"] < d["stride"] < d["BLOCK"] for d in cases)


def _lane_counts(cases: list[kit.Numbers]) -> Iterator[kit.Found]:
    """Name each count of lanes counted, knowing every case's: k = BLOCK is the missing re-mask,
    k = stride_m on every failed case (all strided) a mask built from the row stride."""
    if _uses_row_stride(cases):
        for where in cases:
            extra = where["lanes_counted"] - where["N"]
            yield "mask_uses_row_stride", {**where, "extra_lanes": extra,
                                           "predicted_excess": extra * where["mean"] ** 2 / where["N"]}
        return
    for where in cases:
        n, block, k, mean = where["N"], where["BLOCK"], where["lanes_counted"], where["mean"]
        other_ns = {d["N"] for d in cases if d["lanes_counted"] == k}
        if k == block:
            yield "missing_remask", {**where, "predicted_excess": (block - n) * mean**2 / n}
        elif len(other_ns) >= 2 and k not in (n + 1, n - 1):
            yield "hardcoded_width", where
        elif k == n + 1:
            yield "off_by_one_le", {**where, "predicted_excess": mean**2 / n}
        elif k == n - 1:
            yield "drops_last_lane", where
        else:
            yield "wrong_lane_count", where


def _words(key: str, cases: list[kit.Numbers]) -> kit.Say:
    """The message of `key`, about the case with the largest excess variance (for the row stride:
    among the cases whose stride lies below BLOCK, the ones that show it)."""
    shown = [d for d in cases if d["N"] < d["stride"] < d["BLOCK"]] if key == "mask_uses_row_stride" else cases
    return kit.say_about(key, cases, max(shown, key=lambda d: abs(d.get("excess", 0.0))))


diagnose = kit.make_diagnose(_classify, _words, across=_lane_counts)
