"""Out-of-bounds writes, decided on the trusted side: the guards' bytes against their pattern.

The harness places each input of a case, and each tensor the entry point allocates with a torch
factory, between two guard regions filled with a known pattern (sandbox/harness.py, `_Guards`),
and sends every guard's raw bytes back with the outputs. Here they are compared with the pattern
computed anew, so no code in the student's process decides whether a guard changed: a submission
that disables the harness's guarding sends no evidence for its inputs, and its case fails.
"""
from __future__ import annotations

import functools
import re
import zlib
from typing import Any

import numpy as np

from sandbox.text import clean_text

GUARD_ELEMENTS = 64  # the least guard on either side (the harness's GUARD_ELEMENTS)
MAX_BUFFERS = 80  # the case's inputs and at most 64 guarded allocations
MAX_REPORTED = 16
_NAN_BITS = {"float32": (np.int32, 0x7FEB0000), "float64": (np.int64, 0x7FFBAD0000000000),
             "float16": (np.int16, 0x7E00), "bfloat16": (np.int16, 0x7FC0)}
_INTS: dict[str, type[np.signedinteger[Any]]] = {"int8": np.int8, "int16": np.int16, "int32": np.int32,
                                                 "int64": np.int64}
ITEMSIZE = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2, "int8": 1, "int16": 2, "int32": 4, "int64": 8,
            "uint8": 1, "bool": 1}  # of the dtypes with a pattern of their own (others: the record's itemsize)
GUARD_KEY = re.compile(r"__guardz?__\.(\d{1,3})\.(before|after)")
GUARD_PREFIXES = ("__guard__.", "__guardz__.")  # raw bytes; zlib-compressed (what the harness sends)
MAX_SIDE_BYTES = 16 << 20  # the most one guard side inflates to (the harness widens one to 8 MiB + alignment)
MAX_CASE_BYTES = 96 << 20  # the most a case's guards inflate to together (the harness's budget: 64 MiB + least guards)
# The harness's POISON_BITS of the float dtypes the outputs come back in: the fill of every tensor the
# entry point allocated uninitialised (torch.empty & co.). Distinct from the guards' payloads and from
# the NaN a CPU or a GPU makes itself; the same value in every float width (it converts exactly).
POISON_BITS: dict[str, tuple[str, int]] = {
    "float32": ("uint32", 0x7FFE0000), "float64": ("uint64", 0x7FFFC00000000000), "float16": ("uint16", 0x7FF0)}


def poisoned(array: np.ndarray) -> np.ndarray | None:
    """The elements of an output that hold the harness's poison, of either sign (a negation flips
    only the sign bit); None for a dtype without one. An element there was never stored, or was
    computed from memory nothing wrote (x86 keeps a NaN operand's payload through arithmetic; a GPU
    returns its own NaN instead, so there only values copied unchanged still show it)."""
    known = POISON_BITS.get(array.dtype.name)
    if known is None:
        return None
    kind = np.dtype(known[0])
    magnitude = np.array((1 << (8 * kind.itemsize - 1)) - 1, dtype=kind)
    bits: np.ndarray = np.ascontiguousarray(array).view(kind) & magnitude
    return bits == np.array(known[1], dtype=kind)


PERIOD = 61  # the pattern repeats every PERIOD elements (k = 1..61)


def pattern(dtype: str, salt: int, count: int, itemsize: int = 1) -> bytes:
    """The guard bytes of `count` elements of `dtype` (the harness's `_Guards._fill`); any other
    dtype (bool, complex, float8, wider unsigned) has all bits set. Made by repeating one period
    (`_period`), which is what the element-wise formula gives, at a copy's speed."""
    period = _period(dtype, salt % PERIOD, itemsize)
    return (period * -(-count // PERIOD))[: count * (len(period) // PERIOD)]


@functools.lru_cache(maxsize=1024)
def _period(dtype: str, salt: int, itemsize: int) -> bytes:
    """PERIOD elements of the pattern from element 0 with `salt`, by the element-wise formula."""
    return _pattern_elementwise(dtype, salt, PERIOD, itemsize)


def _pattern_elementwise(dtype: str, salt: int, count: int, itemsize: int = 1) -> bytes:
    k = (np.arange(count, dtype=np.int64) + salt) % PERIOD + 1
    if dtype in _NAN_BITS:
        int_dtype, base = _NAN_BITS[dtype]
        return (k | base).astype(int_dtype).tobytes()
    if dtype in _INTS:
        kind = _INTS[dtype]
        return (k + np.iinfo(kind).min).astype(kind).tobytes()
    if dtype == "uint8":
        return (255 - k).astype(np.uint8).tobytes()
    return b"\xff" * count * itemsize


def _value(dtype: str, raw: bytes) -> str:
    """The element the kernel wrote there, as the report shows it."""
    if dtype == "bfloat16":  # numpy has no bfloat16: its bits are the high half of a float32's
        bits = int.from_bytes(raw, "little") << 16
        return repr(np.array([bits], dtype=np.uint32).view(np.float32)[0].item())[:40]
    kinds: dict[str, type[np.generic[Any]]] = {"float32": np.float32, "float64": np.float64, "float16": np.float16,
                                               **_INTS, "uint8": np.uint8, "bool": np.bool_}
    if dtype in kinds:
        item = np.frombuffer(raw, dtype=kinds[dtype])[0].item()
        return repr(item)[:40]
    return raw.hex()[:40]


def _inflate(array: object, budget: int) -> np.ndarray | None:
    """A `__guardz__` side's bytes, inflated here within MAX_SIDE_BYTES and `budget`; None when it
    is no zlib stream of at most that many bytes (then the guard counts as missing)."""
    if not isinstance(array, np.ndarray) or array.dtype != np.uint8 or array.ndim != 1:
        return None
    inflater = zlib.decompressobj()
    limit = max(0, min(MAX_SIDE_BYTES, budget))
    try:
        data = inflater.decompress(array.tobytes(), limit + 1)
    except zlib.error:
        return None
    if len(data) > limit or inflater.unconsumed_tail or not inflater.eof:
        return None
    return np.frombuffer(data, dtype=np.uint8)


def check(records: object, raw: dict[str, np.ndarray], *, required: set[str]) -> tuple[list[dict], str | None]:
    """(out-of-bounds evidence, what is missing) for one case: `records` as the harness sent them,
    `raw` the `__guard__.*` (raw) or `__guardz__.*` (zlib) arrays of its blob, `required` the inputs
    that must have guards."""
    if not isinstance(records, list) or len(records) > MAX_BUFFERS:
        return [], "the guard records are missing or malformed"
    found, inputs = [], set()
    budget = MAX_CASE_BYTES
    for position, record in enumerate(records):
        if not isinstance(record, dict):
            return [], "a guard record is malformed"
        dtype, span, kind = record.get("dtype"), record.get("span"), record.get("kind")
        shape, name, output = record.get("shape"), record.get("buffer"), record.get("output")
        size = record.get("itemsize")
        if not (record.get("index") == position and record.get("salt") == 23 * position
                and isinstance(dtype, str) and re.fullmatch(r"[a-z0-9_]{1,24}", dtype) is not None
                and type(size) is int and size == ITEMSIZE.get(dtype, size) and 0 < size <= 16
                and type(span) is int and 0 < span < 1 << 40 and kind in ("input", "allocated")
                and isinstance(name, str) and (output is None or isinstance(output, str))
                and isinstance(shape, list) and len(shape) <= 8
                and all(type(n) is int and 0 <= n < 1 << 40 for n in shape)):
            return [], f"guard record {position} is malformed"
        sides = {}
        for side in ("before", "after"):
            array = raw.get(f"__guard__.{position}.{side}")
            if array is None and f"__guardz__.{position}.{side}" in raw:
                array = _inflate(raw[f"__guardz__.{position}.{side}"], budget)
                if array is None:
                    return [], f"the {side} guard of buffer {position} does not inflate within its bounds"
            if isinstance(array, np.ndarray):
                budget -= array.size
            if array is None or array.dtype != np.uint8 or array.ndim != 1 or array.size % size:
                return [], f"the {side} guard of buffer {position} is missing"
            if array.size // size < GUARD_ELEMENTS:
                return [], f"the {side} guard of buffer {position} is shorter than {GUARD_ELEMENTS} elements"
            sides[side] = array
        if kind == "input":
            inputs.add(name)
        for side, array in sides.items():
            count = array.size // size
            expected_bytes = pattern(dtype, 23 * position, count, size)
            if array.tobytes() == expected_bytes:  # unchanged (the usual case): one comparison of the bytes
                continue
            expected = np.frombuffer(expected_bytes, dtype=np.uint8)
            changed = (array != expected).reshape(count, size).any(axis=1)
            changes = int(changed.sum())
            if not changes:
                continue
            where = np.flatnonzero(changed)
            nearest = int(where[0]) if side == "after" else int(where[-1])
            distance = nearest if side == "after" else count - 1 - nearest
            found.append({
                "buffer": clean_text(name, 200), "kind": kind,
                "output": clean_text(output, 100) if output is not None else None,
                "side": side, "changed": changes, "distance": distance,
                "index": span + distance if side == "after" else -1 - distance, "guard": count,
                "value": _value(dtype, array[nearest * size:(nearest + 1) * size].tobytes()),
                "shape": shape, "dtype": dtype,
            })
    missing = sorted(required - inputs)
    if missing:
        return found[:MAX_REPORTED], f"no guard evidence for input {', '.join(missing)}"
    return found[:MAX_REPORTED], None
