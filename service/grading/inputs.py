"""Step 3a: the trusted side draws every input from recorded seeds, so any run can be replayed."""
from __future__ import annotations

import hashlib

import numpy as np

from service.exercises import CaseSpec, ShapeDraw


def case_seed(case: CaseSpec, secret_seed: int) -> int:
    """The seed the case's data is drawn from: its public seed, mixed with the secret one if asked."""
    if not case.secret:
        return case.seed
    digest = hashlib.sha256(f"{case.seed}:{secret_seed}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def draw_rows(case: CaseSpec, seed: int) -> np.ndarray:
    """The case's valid data, float32 (what the kernel sees), shape (rows, cols)."""
    rng = np.random.default_rng(seed)
    data = case.data
    loc = rng.uniform(*data.loc, size=(case.rows, 1))
    scale = rng.uniform(*data.scale, size=(case.rows, 1))
    x = loc + scale * rng.standard_normal((case.rows, case.cols))
    if data.sign == "negative":
        x = -np.abs(x)
    elif data.sign == "positive":
        x = np.abs(x)
    if data.zeros_fraction > 0:
        count = max(1, round(data.zeros_fraction * case.cols))
        for row in x:
            row[rng.choice(case.cols, size=min(count, case.cols), replace=False)] = 0.0
    return x.astype(np.float32)


def storage(case: CaseSpec, rows: np.ndarray) -> np.ndarray:
    """What goes to the sandbox: the rows inside a wider buffer when the case has a row stride.

    The columns past `cols` hold NaN, so a kernel that reads past the end of a row shows it.
    """
    if case.stride is None:
        return rows
    wide = np.full((case.rows, case.stride), np.nan, dtype=np.float32)
    wide[:, : case.cols] = rows
    return wide


def _is_prime(n: int) -> bool:
    if n < 2:
        return False
    return all(n % d for d in range(2, int(n ** 0.5) + 1))


def _past_pow2(n: int) -> bool:
    if n < 3:
        return False
    p = 1 << (n - 1).bit_length() - 1  # the largest power of two below n
    return p < n <= p + max(1, p // 8)


def shape_candidates(draw: ShapeDraw, fixed: frozenset[int] | set[int]) -> list[int]:
    """Every width the family allows in its range, less the fixed cases' widths."""
    keep = {
        "ragged": lambda n: n & (n - 1) != 0,
        "wide": lambda n: n & (n - 1) != 0,
        "prime": _is_prime,
        "past_pow2": _past_pow2,
    }[draw.family]
    lo, hi = draw.cols
    return [n for n in range(lo, hi + 1) if keep(n) and n not in fixed]


def shape_seed(case: CaseSpec, secret_seed: int) -> int:
    """The seed a drawn case's shape comes from: separate from its data's, same recorded inputs."""
    digest = hashlib.sha256(f"shape:{case.id}:{case.seed}:{secret_seed}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def resolve_case(case: CaseSpec, secret_seed: int, fixed: frozenset[int] | set[int]) -> CaseSpec:
    """`case` with its drawn shape filled in (a case without `draw`, or not secret, as it is)."""
    draw = case.draw
    if draw is None or not case.secret:
        return case
    rng = np.random.default_rng(shape_seed(case, secret_seed))
    candidates = shape_candidates(draw, fixed)
    cols = int(candidates[int(rng.integers(len(candidates)))])
    rows = int(rng.integers(draw.rows[0], draw.rows[1] + 1)) if draw.rows else case.rows
    params = dict(case.params)
    for name, source in draw.params.items():
        params[name] = cols if source == "cols" else rows
    block = 1 << max(0, (cols - 1).bit_length())
    description = case.description.replace("{cols}", str(cols)).replace("{rows}", str(rows)).replace("{block}", str(block))
    return case.model_copy(update={"cols": cols, "rows": rows, "params": params, "description": description})
