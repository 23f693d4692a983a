"""Trusted side of the test-only exercise adv_sleep: y = 2x, nothing to diagnose."""
from __future__ import annotations

import numpy as np


def reference(x: np.ndarray) -> dict[str, np.ndarray]:
    return {"y": 2 * np.asarray(x, dtype=np.float64)}


def diagnose(evidence) -> list:
    return []
