"""Long Sum's rows addressed with a wrong stride (third-party kernels, fifth batch): a CUDA habit reads
x as [N0, N1] and writes `rows * N1` (the launch passes N1 = 1), or the block sizes stand for the row
length. Each row then sums T elements from row * stride on, which the report called "matches none of
the known misconceptions"; the signature predicts every row (reads past x left out) and names the
stride. The kernel's arithmetic is simulated in numpy; the right sums and the other mistakes are not
called this."""
from __future__ import annotations

import numpy as np
import pytest

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog

LONG_SUM = ExerciseCatalog(REPO_ROOT / "exercises").get("puzzle_long_sum")
checks = LONG_SUM.checks


def _x(n0: int, t: int, seed: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.uniform(-2.0, 2.0, size=(n0, 1)) + rng.standard_normal((n0, t))).astype(np.float32).astype(np.float64)


def _kernel(x: np.ndarray, b1: int, stride: int) -> np.ndarray:
    """sum_kernel with x_ptr + rows[:, None] * stride + cols[None, :], masks right (float32 block sums)."""
    n0, t = x.shape
    flat = x.ravel().astype(np.float32)
    z = np.zeros(n0, dtype=np.float32)
    for start in range(0, t, b1):
        cols = start + np.arange(b1)
        index = np.arange(n0)[:, None] * stride + cols[None, :]
        ok = (cols[None, :] < t) & (index < flat.size)
        z += np.where(ok, flat[np.minimum(index, flat.size - 1)], np.float32(0.0)).sum(axis=1, dtype=np.float32)
    return z.astype(np.float64)


def _keys(x: np.ndarray, z: np.ndarray, b0: int, b1: int) -> list[tuple[str, dict]]:
    n0, t = x.shape
    where = {"case": "c", "N0": n0, "T": t, "B0": b0, "B1": b1}
    return [(key, numbers) for _, key, numbers in checks._matches(x, z, x.sum(axis=1), where)[0]]


@pytest.mark.parametrize(("n0", "t", "b0", "b1", "stride", "name"), [
    (4, 200, 1, 32, 1, "N1"), (8, 128, 4, 32, 1, "N1"), (9, 64, 4, 32, 1, "N1"),
    (8, 200, 4, 32, 32, "B1"), (8, 128, 2, 64, 2, "B0"),
])
def test_a_wrong_row_stride_is_named_with_its_stride(n0, t, b0, b1, stride, name):
    x = _x(n0, t)
    found = _keys(x, _kernel(x, b1, stride), b0, b1)
    assert [key for key, _ in found] == ["row_stride_wrong"], found
    assert found[0][1]["stride"] == stride and found[0][1]["stride_name"] == name


def test_the_right_sums_and_other_mistakes_are_not_a_row_stride():
    x = _x(8, 200)
    assert _keys(x, _kernel(x, 32, 200), 4, 32) == []  # rows * T: right
    dropped = x[:, :192].sum(axis=1)  # T // B1 blocks
    assert "row_stride_wrong" not in [key for key, _ in _keys(x, dropped, 4, 32)]
    leak = np.array([x.ravel()[r * 200: r * 200 + 224].sum() if r < 7 else np.nan for r in range(8)])
    assert "row_stride_wrong" not in [key for key, _ in _keys(x, leak, 4, 32)]
