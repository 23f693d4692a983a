"""Kernels written in ways no earlier mutant had, graded through the real bwrap sandbox on the
Triton interpreter (or the GPU): verdicts, diagnoses and messages must be true for them too.

- An entry point that returns without launching the cell's kernel (a fallback to PyTorch for
  small shapes, or no kernel at all) used to earn full marks: its outputs were right. Each such
  call now fails its case, and the given check, with a message that says so; a truthful claim
  that the check passed is for a TA (suspected), not a confirmed fabrication.
"""
from __future__ import annotations

import pytest

from service.grading.validate import code_points
from service.report import Report
from service.submission import Submission
from tests.support.backends import warm_grader

pytestmark = [pytest.mark.sandbox]

SEED = 20261203
FUSED = "fused_mean_var_atomic"
ZEROING = "    sums.zero_()\n    sumsqs.zero_()\n"
FALLBACK = "    if N <= 64:\n        return x.mean(1), x.var(1, unbiased=False)\n" + ZEROING


@pytest.fixture(scope="module")
def grader():
    with warm_grader("bwrap") as grader:
        yield grader


def _edit(grader, exercise_id: str, *replacements: tuple[str, str]) -> str:
    code = grader.catalog.get(exercise_id).solution
    for old, new in replacements:
        assert code.count(old) == 1, old
        code = code.replace(old, new)
    return code


def _grade(grader, exercise_id: str, code: str, **fields) -> Report:
    report = grader.grade(Submission(exercise=exercise_id, code=code, **fields), secret_seed=SEED)
    assert report.status == "graded", report.message
    assert report.program.ran, report.program.not_run_reason
    return report


def test_torch_fallback_for_small_shapes_fails_those_cases(grader):
    exercise = grader.catalog.get(FUSED)
    report = _grade(grader, FUSED, _edit(grader, FUSED, (ZEROING, FALLBACK)),
                    claimed_output="（无输出：两个 assert_close 都通过）", language="en")
    cases = {c.id: c for c in report.cases}
    small = [c for c in exercise.spec.cases_for(SEED) if c.cols is not None and c.cols <= 64]
    assert small, "the exercise grades no width the fallback takes"
    for case in small:
        assert not cases[case.id].passed
        assert "without launching any kernel of the cell (sum_sumsq_kernel)" in cases[case.id].error
    assert cases["regular.n1000"].passed  # the kernel itself is right where it runs
    assert report.given_check.status == "failed" and "without launching" in report.given_check.output
    assert code_points(report, exercise) < 3
    assert not report.score.passed
    # the check's asserts did pass on the student's machine: not a fabricated output
    claim = next(v for v in report.vetoes if v.rule == "unverified_claim")
    assert claim.status == "suspected" and claim.needs_review


def test_entry_point_that_never_launches_earns_no_code_points(grader):
    report = _grade(grader, FUSED, _edit(grader, FUSED, (ZEROING, "    return x.mean(1), x.var(1, unbiased=False)\n")))
    assert not any(c.passed for c in report.cases)
    assert code_points(report, grader.catalog.get(FUSED)) == 0

