"""A mutant whose points depend on the drawn width: validate accepts the range its author declared.

fused_mean_var_atomic's `wrong.bessel` divides by N − 1. `regular.one_program` draws N in 65–127 from
the secret seed, and N/(N − 1) is past the variance's 1e-2 tolerance only below N ≈ 100: under
seed 99 the case passes (1.5 code points), under the other seed it fails (1.0). Validate failed the
catalogue under the second seed before the expectation could say `code_points_min`.
"""
from __future__ import annotations

import pytest

from service.grading.validate import check_mutant
from service.submission import Submission
from tests.support.backends import warm_grader

EXERCISE = "fused_mean_var_atomic"


@pytest.fixture(scope="module")
def grader():
    with warm_grader("bwrap") as g:
        yield g


@pytest.mark.parametrize("seed, one_program_fails", [(99, False), (659084252395668502, True)])
def test_a_drawn_case_that_fails_for_some_draws_is_within_the_declared_range(grader, seed, one_program_fails):
    exercise = grader.catalog.get(EXERCISE)
    mutant = next(m for m in exercise.mutants if m.id == "wrong.bessel")
    assert mutant.expect.code_points_min is not None
    report = grader.grade(Submission(exercise=EXERCISE, code=exercise.mutant_code(mutant)), secret_seed=seed)
    failed = {c.id for c in report.cases if not c.passed}
    assert ("regular.one_program" in failed) is one_program_fails, failed
    assert check_mutant(exercise, mutant, report) == []
    # the range is a range: the most is the author's code_points, a grade outside it is reported
    narrowed = mutant.model_copy(update={"expect": mutant.expect.model_copy(update={"code_points_min": None})})
    assert (check_mutant(exercise, narrowed, report) == []) is not one_program_fails
    # a veto that may be raised is not required; one that must be is
    may = mutant.model_copy(update={"expect": mutant.expect.model_copy(update={"vetoes_may": ["coincidental_pass"]})})
    must = mutant.model_copy(update={"expect": mutant.expect.model_copy(update={"vetoes": ["coincidental_pass"]})})
    assert check_mutant(exercise, may, report) == [] and check_mutant(exercise, must, report) != []
