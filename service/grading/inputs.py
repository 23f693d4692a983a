"""Step 3a: the trusted side draws every input from recorded seeds, so any run can be replayed."""
from __future__ import annotations

import hashlib

import numpy as np

from service.exercises import CaseSpec, Layout


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


def fill_value(dtype: np.dtype) -> float | int | bool:
    """What a layout's storage holds outside the view: NaN, or the integer dtype's minimum."""
    if dtype.kind == "f":
        return np.nan
    if dtype.kind in "iu":
        return int(np.iinfo(dtype).min)
    return True


def laid_out(layout: Layout, array: np.ndarray) -> tuple[np.ndarray, dict]:
    """(the 1-D storage that goes to the sandbox, the view the entry point gets of it: shape,
    strides and offset in elements). The storage's other elements hold `fill_value`."""
    view = layout_view(layout, array.shape)
    shape, strides = view["shape"], view["strides"]
    size = layout.offset + 1 + sum((n - 1) * s for n, s in zip(shape, strides)) if array.size else layout.offset
    flat = np.full(size, fill_value(array.dtype), dtype=array.dtype)
    if array.size:
        view_of(flat, shape, strides, layout.offset)[...] = array
    return flat, view


def layout_view(layout: Layout, shape: tuple[int, ...]) -> dict:
    """The view an input of `shape` is given as under `layout`: shape, strides and offset in elements."""
    dims = tuple(int(n) for n in shape)
    return {"shape": list(dims), "strides": list(layout.check(dims)), "offset": layout.offset}


def view_of(flat: np.ndarray, shape, strides, offset: int) -> np.ndarray:
    """The strided view (elements) of a 1-D contiguous `flat`, checked to lie inside it."""
    if flat.ndim != 1 or not flat.flags.c_contiguous:
        raise ValueError("a layout's storage is one contiguous dimension")
    last = offset + sum((int(n) - 1) * int(s) for n, s in zip(shape, strides)) if all(shape) else offset - 1
    if offset < 0 or any(s < 0 for s in strides) or last >= flat.size:
        raise ValueError("the view does not lie inside its storage")
    item = flat.dtype.itemsize
    return np.lib.stride_tricks.as_strided(flat[offset:], shape=tuple(shape), strides=tuple(item * s for s in strides))
