"""Step 4: compare outputs with the float64 reference on the trusted side."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from service.exercises import Tolerance
from service.messages import render
from service.report import Mismatch


@dataclass
class Comparison:
    passed: bool
    max_abs_err: float | None
    max_rel_err: float | None
    error_ratio: float | None
    first_mismatch: Mismatch | None
    error: str | None


def compare_outputs(observed: dict[str, np.ndarray], expected: dict[str, np.ndarray],
                    tolerances: dict[str, Tolerance], *, language: str = "zh") -> Comparison:
    """`|obs - ref| <= atol + rtol * |ref|` elementwise (torch.testing.assert_close's rule);
    a non-finite output where the reference is finite always fails."""
    max_abs = max_rel = ratio = 0.0
    first: Mismatch | None = None
    for name, ref in expected.items():
        if name not in observed:
            return Comparison(False, None, None, None, None, render("compare.missing", language, name=name))
        obs = observed[name]
        if obs.shape != ref.shape:
            return Comparison(False, None, None, None, None,
                              render("compare.shape", language, name=name, shape=str(tuple(obs.shape)),
                                     expected=str(tuple(ref.shape))))
        if obs.dtype.kind != "f":
            return Comparison(False, None, None, None, None,
                              render("compare.dtype", language, name=name, dtype=obs.dtype))
        obs64 = obs.astype(np.float64)
        tol = tolerances[name]
        finite_ref = np.isfinite(ref)
        # rtol of an infinite reference would allow anything (inf <= inf): there only the same
        # value passes (inf of the same sign; NaN where the reference is NaN).
        allowed = tol.atol + tol.rtol * np.abs(np.where(finite_ref, ref, 0.0))
        with np.errstate(invalid="ignore"):  # inf - inf: replaced below
            err = np.where(np.isfinite(obs64), np.abs(obs64 - ref), np.inf)
        same = (np.isnan(ref) & np.isnan(obs64)) | (np.isinf(ref) & (obs64 == ref))
        err = np.where(finite_ref, err, np.where(same, 0.0, np.inf))
        bad = err > allowed
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = np.where(np.abs(ref) > 0, err / np.abs(ref), np.where(err > 0, np.inf, 0.0))
            ratios = err / allowed
        max_abs = max(max_abs, float(np.max(err)) if err.size else 0.0)
        max_rel = max(max_rel, float(np.max(rel)) if rel.size else 0.0)
        ratio = max(ratio, float(np.max(ratios)) if ratios.size else 0.0)
        if first is None and bad.any():
            index = tuple(int(i) for i in np.argwhere(bad)[0])
            value = float(obs64[index])
            first = Mismatch(output=name, index=list(index), observed=value if np.isfinite(value) else None,
                             expected=float(ref[index]), allowed_error=float(allowed[index]))
    return Comparison(first is None, max_abs, max_rel, ratio, first, None)
