"""GPU only: a fill compiled into the shared cache by the trusted side compiles nothing when a
student submits it again; a new fill still compiles in its own sandbox, and nothing it compiled
reaches the shared cache until the trusted side's own compile run of it. Under each sandbox
backend: both mount the cache read-only in grading sandboxes.

Skipped where no NVIDIA GPU is present (CI); run on the H200 with `pytest tests/gpu`.
"""
from __future__ import annotations

import json

import pytest

from service.config import gpu_present
from service.submission import Submission
from tests.support.backends import grader_for

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not gpu_present(), reason="needs an NVIDIA GPU")]

EXERCISE = "lesson06_mean_var"


def _submission(grader, fill: str) -> Submission:
    exercise = grader.catalog.get(EXERCISE)
    example = json.loads((exercise.root / "example_submission.json").read_text(encoding="utf-8"))
    return Submission(exercise=EXERCISE, code=exercise.template.replace("______", fill, 1), answers=example["answers"],
                      explanation=example["explanation"], claimed_output=example.get("claimed_output", ""))


def test_a_fill_compiled_by_the_trusted_side_compiles_nothing_in_the_sandbox(tmp_path, sandbox_backend_name, compile_cache_dir):
    grader = grader_for(sandbox_backend_name, device="gpu", data_dir=tmp_path, compile_cache_dir=compile_cache_dir, warm_pool=0,
                        compile_cache_prewarm=False)
    warmer = grader.compile_cache
    assert warmer is not None, f"GPU mode with {sandbox_backend_name} must have the shared compile cache"
    warmer.start()
    try:
        first = grader.grade(_submission(grader, "mask"), secret_seed=1)
        assert first.status == "graded" and first.program.ran
        assert first.timing.get("kernels_compiled", 0) > 0 and first.timing.get("kernels_shared_hits", 0) == 0, first.timing
        # The grading queued the program for the trusted compile run; wait for it to publish.
        assert warmer.wait_idle(300) and warmer.stats.compiled == 1 and warmer.stats.published > 0, warmer.stats
        assert warmer.cache.entries() > 0

        again = grader.grade(_submission(grader, "mask"), secret_seed=1)  # the same drawn shapes
        assert again.timing.get("kernels_compiled") == 0, again.timing
        assert again.timing.get("kernels_shared_hits", 0) >= first.timing["kernels_compiled"], again.timing
        assert [c.passed for c in again.cases] == [c.passed for c in first.cases]
        # Another seed draws other widths for the drawn cases: only what those need compiles in the sandbox.
        drawn = sum(1 for c in grader.catalog.get("lesson06_mean_var").spec.cases if c.draw is not None)
        other = grader.grade(_submission(grader, "mask"), secret_seed=2)
        assert 0 < other.timing.get("kernels_shared_hits", 0), other.timing
        assert other.timing.get("kernels_compiled", 0) <= 2 * drawn < first.timing["kernels_compiled"] + 2 * drawn, other.timing

        entries = warmer.cache.entries()
        new = grader.grade(_submission(grader, "cols < N"), secret_seed=3)
        assert new.timing.get("kernels_compiled", 0) > 0, new.timing
        # Only the trusted compile run (queued by that grading) may add to the cache.
        assert warmer.wait_idle(300) and warmer.cache.entries() > entries
    finally:
        grader.close()
