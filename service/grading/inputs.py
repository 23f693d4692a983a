"""Step 3a: the trusted side draws every input from recorded seeds, so any run can be replayed."""
from __future__ import annotations

import hashlib

import numpy as np

from service.exercises import CaseSpec


def case_seed(case: CaseSpec, secret_seed: int) -> int:
    """The seed the case's data is drawn from: its public seed, mixed with the secret one if asked."""
    if not case.secret:
        return case.seed
    digest = hashlib.sha256(f"{case.seed}:{secret_seed}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def storage(case: CaseSpec, rows: np.ndarray) -> np.ndarray:
    """What goes to the sandbox: the rows inside a wider buffer when the case has a row stride.

    The columns past `cols` hold NaN, so a kernel that reads past the end of a row shows it.
    """
    if case.stride is None:
        return rows
    wide = np.full((case.rows, case.stride), np.nan, dtype=np.float32)
    wide[:, : case.cols] = rows
    return wide
