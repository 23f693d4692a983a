"""GPU only: a new fill's specialisations, compiled in parallel by the trusted side before its
grading run (service/grading/compile_parallel.py), land in the shared cache, and the grading
sandbox compiles (almost) nothing itself: only the speed phase's large shape, which the compile
runs leave out. A fill that does not compile is graded as without them. Under each sandbox
backend that mounts the cache.

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
RUNS = 3
READY_S = 300


def _submission(grader, fill: str) -> Submission:
    exercise = grader.catalog.get(EXERCISE)
    example = json.loads((exercise.root / "example_submission.json").read_text(encoding="utf-8"))
    return Submission(exercise=EXERCISE, code=exercise.template.replace("______", fill, 1), answers=example["answers"],
                      explanation=example["explanation"], claimed_output=example.get("claimed_output", ""))


def test_a_new_fill_compiled_in_parallel_first_compiles_nothing_in_its_grading_sandbox(tmp_path, sandbox_backend_name, compile_cache_dir):
    grader = grader_for(sandbox_backend_name, device="gpu", data_dir=tmp_path, compile_cache_dir=compile_cache_dir, warm_pool=1, verdict_memo=False,
                        compile_cache_prewarm=False, compile_cache_parallel=RUNS,
                        compile_cache_parallel_wait_s=READY_S)
    warmer = grader.compile_cache
    assert warmer is not None, f"GPU mode with {sandbox_backend_name} must have the shared compile cache"
    grader.start()
    try:
        assert warmer.wait_parallel_ready(READY_S), "the warm compile sandboxes never said hello"
        report = grader.grade(_submission(grader, "cols < N + 3 - 3"), secret_seed=5)  # in no cache
        job = warmer.last_parallel
        assert job is not None and job.done() and job.failed == 0 and job.published > 0, job
        assert report.timing["parallel_compile_runs"] == RUNS, report.timing
        assert report.status == "graded" and all(c.passed for c in report.cases), report.cases
        # Every case's and the given check's kernels were in the cache; the speed phase's shape is not compiled there.
        assert report.timing.get("kernels_compiled", 0) <= 1, report.timing
        # Its kernels came from the cache (distinct shapes are not distinct kernels, so no exact count:
        # on the H200, 2026-12-02, 14 hits for lesson 6's 15 shape/stride pairs, 0 compiled).
        assert report.timing.get("kernels_shared_hits", 0) > 0, report.timing
        assert set(job.statuses.values()) <= {"ok", "passed"}, job.statuses

        # A fill that does not compile: the compile runs fail on it, the grading reports it as always.
        assert warmer.wait_parallel_ready(READY_S)
        broken = grader.grade(_submission(grader, "tl.arange(0, 3) < N"), secret_seed=5)
        plain = grader.grade(_submission(grader, "tl.arange(0, 3) < N"), secret_seed=5, reuse=False)
        assert broken.timing.get("parallel_compile_runs") == RUNS and "parallel_compile_runs" not in plain.timing
        assert broken.status == plain.status == "graded" and not any(c.passed for c in broken.cases)
        assert [(c.id, c.passed, c.error) for c in broken.cases] == [(c.id, c.passed, c.error) for c in plain.cases]
    finally:
        grader.close()
