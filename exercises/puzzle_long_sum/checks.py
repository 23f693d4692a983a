"""Puzzle 7 (Long Sum), trusted side: inputs, the float64 reference, and the signatures of the
usual mistakes. Each signature predicts the whole output vector from the inputs, so a match is
evidence, not a guess: a kernel that drops the tail block, reads the next row through a missing
column mask, sums only the first or only the last block, and so on.
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from service.exercises import kit

SENTINEL = -1234.5  # what the template's long_sum keeps after z (buf[N0:])


def make_inputs(case: kit.CaseSpec, seed: int) -> kit.Arrays:
    rng = np.random.default_rng(seed)
    n0, t = kit.int_param(case, "N0"), kit.int_param(case, "T")
    loc = rng.uniform(-2.0, 2.0, size=(n0, 1))
    x = loc + rng.standard_normal((n0, t))
    return {"x": x.astype(np.float32)}


def reference(x: np.ndarray) -> kit.Arrays:
    return {"z": np.asarray(x, dtype=np.float64).sum(axis=1)}


def _close(observed: np.ndarray, predicted: np.ndarray, rows: np.ndarray) -> bool:
    if not rows.any():
        return False
    o, p = observed[rows], predicted[rows]
    return bool(np.all(np.abs(o - p) <= 1e-3 * (np.abs(p) + 1.0)))


def _candidates(x: np.ndarray, b1: int) -> dict[str, tuple[np.ndarray, bool]]:
    """What each known mistake returns, row by row (float64)."""
    n0, t = x.shape
    full = (t // b1) * b1
    last_start = ((t - 1) // b1) * b1
    pad = -t % b1
    # No column mask: the row's last block runs on into the next rows (x is row-major).
    flat, span = x.ravel(), t + pad
    leak = np.array([flat[r * t: r * t + span].sum() if r * t + span <= flat.size else np.nan for r in range(n0)])
    return {
        "dropped_tail": (x[:, :full].sum(axis=1), full < t),
        "first_block_only": (x[:, :b1].sum(axis=1), b1 < t),
        "last_block_only": (x[:, last_start:].sum(axis=1), last_start > 0),
        "next_row_leak": (leak, pad > 0 and n0 > 1),
    }


def _classify(ev: kit.CaseEvidence) -> Iterator[kit.Found]:
    where = kit.case_numbers(ev.case, params=("N0", "T"), kwargs={"B0": 4, "B1": 32})
    n0, t, b0, b1 = where["N0"], where["T"], where["B0"], where["B1"]
    if ev.observed is None:
        yield from kit.store_out_of_bounds(ev, {**where, "rows_past_end": -n0 % b0}, data_len=n0, total_len=n0 + b0,
                                           sentinel=SENTINEL)
        return
    x = ev.arrays["x"]
    z = ev.observed["z"].astype(np.float64)
    ref = ev.expected["z"]
    correct = np.abs(z - ref) <= 1e-3 * (np.abs(ref) + 1.0)
    ignored = kit.row_block_ignored(correct, np.isnan(z), rows=n0, block=b0)
    if ignored is not None:
        yield kit.ROW_BLOCK_IGNORED, {**where, **ignored}
        return
    if not np.any(np.isfinite(z)):
        yield "nonfinite_output", where
        return
    for key, (pred, applies) in _candidates(x, b1).items():
        rows = np.ones(n0, dtype=bool)
        if key == "next_row_leak":
            rows = np.isfinite(pred)  # rows that read past the end of x: garbage there
        if applies and _close(z, pred, rows):
            worst = int(np.argmax(np.where(rows, np.abs(z - ref), -1)))
            yield key, {**where, "row": worst, "observed": float(z[worst]), "expected": float(ref[worst]),
                        "predicted": float(pred[worst]), "pad": -t % b1}
            return
    blocks = -(-t // b1)
    for kept in range(blocks - 1, 0, -1):  # whole blocks from the start, the loop ending early (the cases above aside)
        pred = x[:, :kept * b1].sum(axis=1)
        if _close(z, pred, np.ones(n0, dtype=bool)):
            worst = int(np.argmax(np.abs(z - ref)))
            yield "loop_stops_early", {**where, "row": worst, "observed": float(z[worst]), "expected": float(ref[worst]),
                                       "predicted": float(pred[worst]), "kept": kept, "blocks": blocks,
                                       "kept_cols": kept * b1, "missing": blocks - kept}
            return
    worst = int(np.argmax(np.abs(z - ref)))
    yield "unexplained_sum", {**where, "row": worst, "observed": float(z[worst]), "expected": float(ref[worst])}


def _words(key: str, cases: list[kit.Numbers]) -> kit.Say:
    c = cases[0]
    if key == "dropped_tail":
        return kit.say_about(key, cases, full_cols=c["T"] // c["B1"] * c["B1"])
    if key == "store_out_of_bounds":
        return kit.say_about(key, cases, position=c["first_past_end"] + 1)
    return kit.say_about(key, cases)


diagnose = kit.make_diagnose(_classify, _words, with_outputs=False)
