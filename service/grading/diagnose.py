"""Step 5: what the exercise's `diagnose()` receives, and the helper it returns findings with.

Each exercise's checks.py turns failing cases into diagnoses: a probe's *signature* (for lesson
6, `var_obs - var_true ~= (BLOCK - N) * mean^2 / N`) matched against the numbers, said in words.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from service.exercises import CaseSpec


@dataclass
class CaseEvidence:
    case: CaseSpec
    inputs: np.ndarray  # the valid data the kernel saw, as float64 (rows, cols)
    observed: dict[str, np.ndarray] | None  # None when the case did not return outputs
    expected: dict[str, np.ndarray]
    passed: bool
