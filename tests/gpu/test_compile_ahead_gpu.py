"""GPU only: the compile-ahead phase (sandbox/harness.py `_compile_ahead`, KERNELGRADE_COMPILE_AHEAD)
compiles a grading's kernels at once before its cases, and changes nothing a case reports: the
same program under the same secret seed gets the same cases, errors and verdict with the phase on
and off, for a right fill, a wrong one, a fill Triton's compiler rejects and a whole-body puzzle.

Skipped where no NVIDIA GPU is present (CI); run on the H200 with `pytest tests/gpu`.
"""
from __future__ import annotations

import json

import pytest

from service.config import gpu_present
from service.submission import Submission
from tests.support.backends import grader_for

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not gpu_present(), reason="needs an NVIDIA GPU"),
              pytest.mark.sandbox_backends("bwrap")]


def _submission(grader, exercise_id: str, fill: str | None) -> Submission:
    """The exercise's example submission, its blank filled with `fill` instead (None: as it is)."""
    exercise = grader.catalog.get(exercise_id)
    example = json.loads((exercise.root / "example_submission.json").read_text(encoding="utf-8"))
    code = example["code"] if fill is None else exercise.template.replace("______", fill, 1)
    return Submission(exercise=exercise_id, code=code, answers=example["answers"], explanation=example["explanation"],
                      claimed_output=example.get("claimed_output", ""))


def _what_cases_said(report) -> list[tuple]:
    return [(c.id, c.passed, c.error is None, (c.error or "").splitlines()[-1:], c.shape) for c in report.cases]


@pytest.mark.parametrize("exercise_id, fill", [
    ("lesson06_mean_var", "mask"),                 # right
    ("lesson06_mean_var", "True"),                 # the lesson's target bug: wrong on ragged widths
    ("lesson06_mean_var", "tl.arange(0, 3) < N"),  # Triton's compiler rejects it (a range of 3)
    ("lesson07_softmax", None),                    # the example, three drawn widths
    ("puzzle_long_sum", None),                     # a whole kernel body (fill_policy any)
])
def test_compile_ahead_changes_nothing_a_case_reports(tmp_path, monkeypatch, compile_cache_dir, sandbox_backend_name,
                                                       exercise_id, fill):
    reports = {}
    for threads in ("4", "0"):
        monkeypatch.setenv("KERNELGRADE_COMPILE_AHEAD", threads)
        grader = grader_for(sandbox_backend_name, device="gpu", data_dir=tmp_path / threads, warm_pool=0,
                            compile_cache_dir=compile_cache_dir / threads, compile_cache_prewarm=False)
        try:
            reports[threads] = grader.grade(_submission(grader, exercise_id, fill), secret_seed=7)
        finally:
            grader.close()
    on, off = reports["4"], reports["0"]
    assert on.status == off.status == "graded"
    assert _what_cases_said(on) == _what_cases_said(off)
    assert on.score.total == off.score.total and on.score.passed == off.score.passed
    assert [v.rule for v in on.vetoes] == [v.rule for v in off.vetoes]
    assert [d.id for d in on.diagnoses] == [d.id for d in off.diagnoses]
    assert "kernels_compiled_ahead" not in off.timing, off.timing
    if fill == "tl.arange(0, 3) < N":
        assert not any(c.passed for c in on.cases if c.kind != "given")
        assert on.timing.get("kernels_compiled_ahead", 0) == 0, on.timing  # nothing compiled: each case says why
    else:
        drawn = sum(1 for c in on.cases if c.drawn)
        assert on.timing.get("kernels_compiled_ahead", 0) >= drawn > 0, on.timing
