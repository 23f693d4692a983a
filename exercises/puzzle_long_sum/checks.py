"""Puzzle 7 (Long Sum), trusted side: inputs, the float64 reference, and the signatures of the
usual mistakes. Each signature predicts the whole output vector from the inputs, so a match is
evidence, not a guess: a kernel that drops the tail block, reads the next row through a missing
column mask, sums only the first or only the last block, and so on.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextvars import ContextVar

import numpy as np

from service.exercises import kit

SENTINEL = -1234.5  # what the template's long_sum keeps after z (buf[N0:])
N1_PASSED = 1  # the template's long_sum passes N1 = 1 (x is [N0, T]; a [N0, N1] habit reads N1 as the row length)


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


def _to_bfloat16(a: np.ndarray) -> np.ndarray:
    """float32 values rounded to bfloat16 (to nearest, ties to even), as float32 (numpy has no bfloat16)."""
    bits = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return np.asarray(rounded, dtype=np.uint64).astype(np.uint32).view(np.float32)


HALF = {"float16": lambda a: np.asarray(a, dtype=np.float32).astype(np.float16).astype(np.float32),
        "bfloat16": _to_bfloat16}


def _half_accumulator(x: np.ndarray, b1: int, dtype: str) -> np.ndarray:
    """Row sums kept in a 16-bit accumulator: each block's float32 sum rounded to `dtype`, then added
    to the accumulator and the result rounded again (acc += tl.sum(x, axis=1).to(tl.float16))."""
    rnd = HALF[dtype]
    acc = np.zeros(x.shape[0], dtype=np.float32)
    for start in range(0, x.shape[1], b1):
        block = x[:, start:start + b1].astype(np.float32).sum(axis=1, dtype=np.float32)
        acc = rnd(acc + rnd(block))
    return acc.astype(np.float64)


def _spacing(value: float, dtype: str) -> float:
    """The distance between neighbouring `dtype` numbers near `value` (11 significant bits for float16, 8 for bfloat16)."""
    bits = 11 if dtype == "float16" else 8
    return float(2.0 ** (np.floor(np.log2(max(abs(value), 2.0 ** -14))) - (bits - 1)))


def _rounded_like(z: np.ndarray, pred: np.ndarray, ref: np.ndarray, dtype: str) -> bool:
    """z is the 16-bit accumulator's output: _close's slack (1e-3 of a row sum) is wider than the rounding
    itself, so the match is held to the rounding's own scale: every row within one `dtype` step of the
    simulation (a float32 block sum in another order can round the other way at a tie), most of them
    exactly, and some row that is exact there and wrong by more than float32's rounding."""
    steps = np.array([_spacing(float(p), dtype) for p in pred])
    exact = np.abs(z - pred) <= 1e-6 * (np.abs(pred) + 1.0)
    off = np.abs(z - ref) > 1e-5 * (np.abs(ref) + 1.0)
    return bool(z.size and np.all(np.abs(z - pred) <= 1.01 * steps) and exact.mean() >= 0.75 and np.any(exact & off))


def _matches(x: np.ndarray, z: np.ndarray, ref: np.ndarray,
             where: kit.Numbers) -> tuple[list[tuple[str, str, kit.Numbers]], set[str]]:
    """Every known mistake this case's output matches, most specific first: (label, id, numbers).
    The label tells mistakes apart across cases (a loop that stops one block early is the same
    mistake on every case, whatever the number of blocks). With them, the labels of the mistakes
    this case tests (the first blocks' candidates and the 16-bit accumulators, whose replay here is
    told apart from the right sums): a failed case that tests a mistake and does not match it
    contradicts it (_across)."""
    n0, t, b1 = where["N0"], where["T"], where["B1"]
    pad = -t % b1

    def numbers(pred: np.ndarray, rows: np.ndarray, **more: object) -> kit.Numbers:
        worst = int(np.argmax(np.where(rows, np.abs(z - ref), -1)))
        return {**where, "row": worst, "observed": float(z[worst]), "expected": float(ref[worst]),
                "predicted": float(pred[worst]), "pad": pad, **more}

    found: list[tuple[str, str, kit.Numbers]] = []
    every = np.ones(n0, dtype=bool)
    tested: set[str] = set()  # the mistakes this case could show: their replay is told apart from the right sums

    def _fits(pred: np.ndarray, rows: np.ndarray) -> bool:
        """The output matches the mistake, and the mistake is told apart from the right sum: a prediction
        within the match's own slack of the reference is no evidence (an fp16 accumulator's rounding,
        about 0.1 on a row sum of 400, "matched" other=-0.00135 over 7 padding lanes, though other=0.0)."""
        return _close(z, pred, rows) and not _close(ref, pred, rows)

    for key, (pred, applies) in _candidates(x, b1).items():
        rows = np.isfinite(pred) if key == "next_row_leak" else every  # past the end of x: garbage there
        if applies and rows.any() and not _close(ref, pred, rows):
            tested.add(key)
        if applies and _fits(pred, rows):
            found.append((key, key, numbers(pred, rows)))
    for dtype in HALF:  # a 16-bit accumulator: right on every lane, rounded at every block's addition
        pred = _half_accumulator(x, b1, dtype)
        off = np.abs(pred - ref) > 1e-5 * (np.abs(ref) + 1.0)
        if off.any():
            tested.add(f"half_precision_accumulator:{dtype}")
        if _rounded_like(z, pred, ref, dtype):
            # the row shown is one the simulation gives exactly (the match allows a step elsewhere)
            shown = (np.abs(z - pred) <= 1e-6 * (np.abs(pred) + 1.0)) & off
            worst = int(np.argmax(np.where(shown, np.abs(z - ref), -1)))
            found.append((f"half_precision_accumulator:{dtype}", "half_precision_accumulator",
                          numbers(pred, shown, dtype=dtype, bits=11 if dtype == "float16" else 8,
                                  spacing=_spacing(float(ref[worst]), dtype))))
            break
    flat = x.ravel()
    for k in range(1, pad):  # a column mask k lanes too wide (cols <= T: k = 1) reads k of the next row
        pred = np.array([flat[r * t: r * t + t + k].sum() if (r + 1) * t + k <= flat.size else np.nan for r in range(n0)])
        rows = np.isfinite(pred)
        if n0 > 1 and _fits(pred, rows):
            found.append((f"col_mask_too_wide:{k}", "col_mask_too_wide", numbers(pred, rows, extra=k)))
    for name, stride in (("N1", N1_PASSED), ("B1", b1), ("B0", where["B0"])):  # rows addressed r * stride, not r * T
        if stride == t or n0 < 2:
            continue
        pred = np.array([flat[r * stride: r * stride + t].sum() if r * stride + t <= flat.size else np.nan
                         for r in range(n0)])
        rows = np.isfinite(pred)  # a read past the end of x: garbage there
        if rows.sum() >= 2 and _fits(pred, rows):
            found.append((f"row_stride_wrong:{name}", "row_stride_wrong",
                          numbers(pred, rows, stride=stride, stride_name=name)))
            break
    if pad and n0:  # every padding lane added as the same value v: other=v, not 0
        v = (z - ref) / pad
        if np.all(np.isfinite(v)) and abs(float(np.median(v))) > 1e-3:
            pred = ref + pad * float(np.median(v))
            if _fits(pred, every):
                found.append(("padding_not_zero", "padding_not_zero", numbers(pred, every, value=float(np.median(v)))))
    if n0 > 1 and t > 1:  # x read column-major (a Fortran habit): element (i, j) at i + j * N0, not i * T + j
        pred = flat.reshape(t, n0).sum(axis=0)
        if _fits(pred, every):
            found.append(("column_major", "column_major", numbers(pred, every)))
    for shift in (1, -1):  # row r's sum in z[r + 1] (the store one row off), or z[r] = row r + 1's (the next row read)
        pred = np.full(n0, np.nan)
        if shift == 1:
            pred[1:] = ref[:-1]
        else:
            pred[:-1] = ref[1:]
        rows = np.isfinite(pred)
        if rows.sum() >= 2 and _fits(pred, rows):
            found.append((f"rows_shifted:{shift}", "rows_shifted", numbers(pred, rows, shift=shift)))
    blocks = -(-t // b1)
    for kept in range(blocks - 1, -1, -1):  # whole blocks from the start, the loop ending early
        pred = x[:, :kept * b1].sum(axis=1)
        if _fits(pred, every):
            found.append((f"loop_stops_early:{blocks - kept}", "loop_stops_early",
                          numbers(pred, every, kept=kept, blocks=blocks, kept_cols=kept * b1, missing=blocks - kept)))
    ruled_out = _RULED_OUT.get()
    return [f for f in found if f[0] not in ruled_out], tested - ruled_out


# The mistakes (by label) that a case which passed rules out: its own inputs, replayed with the mistake,
# give sums far from the right ones. Set by diagnose() for the cases at hand.
_RULED_OUT: ContextVar[frozenset[str]] = ContextVar("long_sum_ruled_out", default=frozenset())


def _ruled_out(evidence: list[kit.CaseEvidence]) -> frozenset[str]:
    """A mistake is named only if the cases that passed could have passed with it: `range(0, T - 1, B1)`
    loses T = 1's only block, which alone reads as "T // B1" (dropped_tail) or "the loop stops one block
    early", while boundary.t_short (T = 20 < B1) passed, which neither mistake could (sixth probe batch,
    lsum6.wrong.range_t_minus_one). The claims so tested are about the loop's count (dropped_tail's T // B1,
    a loop k blocks short, the first or the last block alone); next_row_leak is about the last block's mask,
    which a passed one-block row does not test (a column mask computed once, before the loop, masks the first
    block only: lsum5.wrong.col_mask_hoisted)."""
    out: set[str] = set()
    for ev in evidence:
        if not ev.passed or "x" not in ev.arrays or "z" not in ev.expected:
            continue
        x, ref = ev.arrays["x"], np.asarray(ev.expected["z"], dtype=np.float64)
        if x.ndim != 2 or ref.shape != (x.shape[0],):
            continue
        b1 = kit.case_numbers(ev.case, kwargs={"B1": 32})["B1"]
        every = np.ones(x.shape[0], dtype=bool)
        for key, (pred, applies) in _candidates(x, b1).items():
            if applies and key != "next_row_leak" and not _close(pred, ref, every):
                out.add(key)
        blocks = -(-x.shape[1] // b1)
        for missing in range(1, blocks + 1):
            if not _close(x[:, :(blocks - missing) * b1].sum(axis=1), ref, every):
                out.add(f"loop_stops_early:{missing}")
    return frozenset(out)


# Whether NaN rows may be named rows_not_written: every failed case with outputs has each row right or NaN.
# A case whose other rows are wrong says the NaN came from elsewhere: an unmasked load with T = 1 < B1 reads
# past x, into the NaN around it, on every row (lsum7.wrong.store_mask_only, next_row_leak on its other cases).
_UNWRITTEN: ContextVar[bool] = ContextVar("long_sum_unwritten", default=True)


# Whether an infinite padding may be named: no failed case without padding lanes is all infinite (an
# accumulator started at -inf is -inf on every case, padded or not).
_PADDING_INF: ContextVar[bool] = ContextVar("long_sum_padding_inf", default=True)


def _infinite_only_with_padding(evidence: list[kit.CaseEvidence]) -> bool:
    for ev in evidence:
        if ev.passed or ev.observed is None or "z" not in ev.observed or "x" not in ev.arrays:
            continue
        b1 = kit.case_numbers(ev.case, kwargs={"B1": 32})["B1"]
        if ev.arrays["x"].shape[1] % b1 == 0 and np.all(np.isinf(ev.observed["z"].astype(np.float64))):
            return False
    return True


def _right_or_nan(evidence: list[kit.CaseEvidence]) -> bool:
    for ev in evidence:
        if ev.passed or ev.observed is None or "z" not in ev.observed or "z" not in ev.expected:
            continue
        z, ref = ev.observed["z"].astype(np.float64), np.asarray(ev.expected["z"], dtype=np.float64)
        if z.shape != ref.shape or not np.all(np.isnan(z) | (np.abs(z - ref) <= 1e-3 * (np.abs(ref) + 1.0))):
            return False
    return True


def _classify(ev: kit.CaseEvidence) -> Iterator[kit.Found]:
    where = kit.case_numbers(ev.case, params=("N0", "T"), kwargs={"B0": 4, "B1": 32})
    n0, t, b0 = where["N0"], where["T"], where["B0"]
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
    pad = -t % where["B1"]
    if pad and np.all(np.isinf(z)) and len(set(np.sign(z).tolist())) == 1 and _PADDING_INF.get():
        # every row's last block has `pad` padding lanes, and every sum is the same infinity: the
        # padding was filled with it (other=float("-inf"), copied from a softmax; eighth probe batch)
        yield "padding_infinite", {**where, "pad": pad, "value": float(z[0]), "row": 0, "expected": float(ref[0])}
        return
    nan = np.isnan(z)
    if nan.any() and np.all(correct | nan) and _UNWRITTEN.get():
        # the rows that are not NaN are right: the NaN rows hold what the host filled z with before the
        # launch, never stored (rows = pid + tl.arange(0, B0) leaves rows past cdiv(N0, B0) + B0 - 1; seventh
        # batch) or added to without being written first (tl.atomic_add into z, which the host does not zero)
        unwritten = np.flatnonzero(nan)
        yield "rows_not_written", {**where, "rows_unwritten": int(unwritten.size), "first_unwritten": int(unwritten[0]),
                                   "rows_right": int(n0 - unwritten.size)}
        return
    if not np.any(np.isfinite(z)):
        yield "nonfinite_output", where
        return
    worst = int(np.argmax(np.abs(z - ref)))
    matches, tested = _matches(x, z, ref, where)
    yield kit.ACROSS, {**where, "matches": matches, "tested": tested,
                       "row": worst, "observed": float(z[worst]), "expected": float(ref[worst])}


def _across(pending: list[kit.Numbers]) -> Iterator[kit.Found]:
    """Each case under the first mistake (in its own order) that every failed case with outputs
    matches: a loop one block short sums only the first block when a row has two, and nothing when
    it has one, which read alone are "first block only" and "T // B1". A case without such a
    mistake gets its own first match that no other failed case contradicts (tests it, with outputs
    that do not match it: values rounded to bfloat16 at the load give, on T = 1 alone, the numbers of
    a bfloat16 accumulator, which every longer row refutes; seventh probe batch, lsum7.wrong.bf16_loads),
    or unexplained_sum."""
    shared = set.intersection(*({label for label, _, _ in n["matches"]} for n in pending)) if pending else set()
    contradicted = set().union(*(n["tested"] - {label for label, _, _ in n["matches"]} for n in pending))
    for n in pending:
        mine = [(key, numbers) for label, key, numbers in n["matches"] if label in shared] or \
            [(key, numbers) for label, key, numbers in n["matches"] if label not in contradicted]
        if mine:
            yield mine[0]
        else:
            yield "unexplained_sum", {k: v for k, v in n.items() if k not in ("matches", "tested")}


def _words(key: str, cases: list[kit.Numbers]) -> kit.Say:
    c = cases[0]
    if key == "dropped_tail":
        return kit.say_about(key, cases, full_cols=c["T"] // c["B1"] * c["B1"])
    if key == "store_out_of_bounds":
        return kit.say_about(key, cases, position=c["first_past_end"] + 1)
    if key == "rows_shifted":
        return kit.say_about(key, cases, shift_said=kit.Say(f"part.shift.{'store' if c['shift'] == 1 else 'read'}", c))
    if key == "rows_not_written":
        every = all(n["rows_right"] == 0 for n in cases)
        return kit.say_about(key, cases, which_said=kit.Say("part.unwritten.all" if every else "part.unwritten.some", c))
    return kit.say_about(key, cases)


# The mistakes _matches names: one that _across gives every failed case with outputs leads the
# report, before a case's own finding (a write past z, a row of NaN).
CAUSES = ("dropped_tail", "first_block_only", "last_block_only", "next_row_leak", "col_mask_too_wide",
          "padding_not_zero", "loop_stops_early", "half_precision_accumulator", "row_stride_wrong", "column_major",
          "rows_shifted")



def diagnose(evidence: list[kit.CaseEvidence]) -> list[kit.Finding]:
    """kit.make_diagnose's, less the mistakes a passed case rules out (_ruled_out)."""
    evidence = list(evidence)
    token = _RULED_OUT.set(_ruled_out(evidence))
    unwritten = _UNWRITTEN.set(_right_or_nan(evidence))
    padding_inf = _PADDING_INF.set(_infinite_only_with_padding(evidence))
    try:
        return kit.report(kit.collect(evidence, _classify, with_outputs=False, across=_across, causes=CAUSES), _words)
    finally:
        _PADDING_INF.reset(padding_inf)
        _UNWRITTEN.reset(unwritten)
        _RULED_OUT.reset(token)
