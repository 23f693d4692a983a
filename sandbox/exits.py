"""The harness's exit statuses, which the runner reads: one definition for both sides of the sandbox.

Copied into each job folder next to the harness (pool.HARNESS_FILES), which imports it as `exits`.
"""
from __future__ import annotations

from enum import IntEnum


class HarnessExit(IntEnum):
    ok = 0
    bad_job = 3  # the job the trusted side wrote is malformed (our bug)
    gpu_poisoned = 4  # a CUDA fault left the context unusable: the rest needs a fresh sandbox
