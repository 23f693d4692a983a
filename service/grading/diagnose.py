"""Step 5: what the exercise's `diagnose()` receives, and the helper it returns findings with.

Each exercise's checks.py turns failing cases into diagnoses: a probe's *signature* (for lesson
6, `var_obs - var_true ~= (BLOCK - N) * mean^2 / N`) matched against the numbers, said in words.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from service.exercises import CaseSpec


@dataclass
class CaseEvidence:
    case: CaseSpec
    inputs: np.ndarray  # the first argument's valid data, as float64 (for row exercises: rows x cols)
    observed: dict[str, np.ndarray] | None  # None when the case did not return outputs
    expected: dict[str, np.ndarray]
    passed: bool
    arrays: dict[str, np.ndarray] = field(default_factory=dict)  # every input by name, float ones as float64
