"""The explanation against the fill (exercises' `describes:`): the reference explanation describes
the solution's fills and every correct mutant's, on all nine exercises; on lesson 6 it describes
none of the wrong fills."""
from __future__ import annotations

import ast

import pytest

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from service.grading.extract import extract
from service.grading.freetext import NOT_THE_FILL, score_answer

CATALOG = ExerciseCatalog(REPO_ROOT / "exercises")


def _explanation_points(exercise_id: str) -> float:
    exercise = CATALOG.get(exercise_id)
    return next(i.points for i in exercise.spec.rubric if i.source == "text" and i.question == "explanation")


def _fills(exercise_id: str, code: str) -> list[str | None]:
    extraction = extract(CATALOG.get(exercise_id).template, code)
    assert extraction.error is None
    return extraction.fill_sources


def _score(exercise_id: str, code: str):
    exercise = CATALOG.get(exercise_id)
    question = exercise.question("explanation")
    return score_answer(question, question.reference_answer, _explanation_points(exercise_id), fills=_fills(exercise_id, code))


@pytest.mark.parametrize("exercise_id", CATALOG.ids())
def test_every_exercise_declares_what_an_explanation_may_say_about_its_fill(exercise_id):
    assert CATALOG.get(exercise_id).question("explanation").describes


@pytest.mark.parametrize("exercise_id", CATALOG.ids())
def test_the_reference_explanation_describes_the_solution(exercise_id):
    result = _score(exercise_id, CATALOG.get(exercise_id).solution)
    assert result.not_the_fill == [] and NOT_THE_FILL not in result.flags
    assert result.points == _explanation_points(exercise_id)


CORRECT = [(e, m.id) for e in CATALOG.ids() for m in CATALOG.get(e).mutants
           if m.id.startswith("correct.") and m.file is None]


@pytest.mark.parametrize(("exercise_id", "mutant_id"), CORRECT)
def test_the_reference_explanation_describes_every_correct_mutant(exercise_id, mutant_id):
    exercise = CATALOG.get(exercise_id)
    mutant = next(m for m in exercise.mutants if m.id == mutant_id)
    assert _score(exercise_id, exercise.mutant_code(mutant)).not_the_fill == []


# Every wrong fill, `mask & (values >= 0)` included: a fill that holds the position mask and more (a
# value-based mask on top) is not the mask the explanation describes (a claim matches the whole fill).
LESSON6_WRONG = [m.id for m in CATALOG.get("lesson06_mean_var").mutants if m.id.startswith("wrong.") and m.fill != "______"]


@pytest.mark.parametrize("mutant_id", LESSON6_WRONG)
def test_lesson6_the_reference_explanation_describes_no_wrong_fill(mutant_id):
    exercise = CATALOG.get("lesson06_mean_var")
    mutant = next(m for m in exercise.mutants if m.id == mutant_id)
    result = _score("lesson06_mean_var", exercise.mutant_code(mutant))
    assert result.points == 0 and NOT_THE_FILL in result.flags
    assert result.not_the_fill[0]["fill"] == mutant.fill.strip()


def _claims_not_shown(exercise_id: str, blank: int, fill: str) -> set[str]:
    """The reference explanation over the solution with `fill` (canonical source) in `blank` (1-based):
    the claims it makes that the fill does not show."""
    exercise = CATALOG.get(exercise_id)
    fills = _fills(exercise_id, exercise.solution)
    fills[blank - 1] = ast.unparse(ast.parse(fill, mode="eval"))
    question = exercise.question("explanation")
    result = score_answer(question, question.reference_answer, _explanation_points(exercise_id), fills=fills)
    return {m["claim"] for m in result.not_the_fill}


# Spellings of what the explanation describes: operand order, parentheses, a position bound that always
# holds, an equivalent formula. Each must still earn the point (a claim matches the whole fill, read
# with operand order normalised).
EQUIVALENT = [
    ("lesson06_mean_var", 1, "N > cols", "position_mask"),
    ("lesson06_mean_var", 1, "(cols < N)", "position_mask"),
    ("lesson06_mean_var", 1, "N - 1 >= cols", "position_mask"),
    ("lesson06_mean_var", 1, "cols.to(tl.float32) < N", "position_mask"),
    ("lesson06_mean_var", 1, "(cols >= 0) & mask", "position_mask"),
    ("lesson06_mean_var", 1, "mask & (cols < BLOCK)", "position_mask"),
    ("lesson07_softmax", 1, 'float("-inf")', "neg_inf_padding"),
    ("lesson07_softmax", 1, "-1e30", "neg_inf_padding"),
    ("lesson07_softmax", 2, "tl.max(logits)", "subtract_max"),
    ("lesson07_softmax", 2, "tl.max(tl.where(mask, logits, float('-inf')), 0)", "subtract_max"),
    ("welford_merge", 1, "tl.sum(tl.where(N > cols, 1, 0), axis=0)", "count_from_mask"),
    ("welford_merge", 1, "tl.minimum(BLOCK, N - start)", "count_from_mask"),
    ("welford_merge", 2, "tl.sum(tl.where(mask, (values - mean_b) ** 2, 0.0))", "m2_remasked"),
    ("welford_merge", 3, "n * n_b * delta ** 2 / n_new", "chan_divided"),
    ("welford_merge", 3, "delta * delta * n_b * n / (n_b + n)", "chan_divided"),
    ("fused_mean_var_atomic", 1, "tl.sum(values ** 2, axis=0)", "sum_of_squares"),
    ("fused_mean_var_atomic", 1, "tl.sum(tl.where(mask, values * values, 0.0))", "sum_of_squares"),
    ("weighted_sum_fwd_bwd", 3, "(ROWS_TILE_SIZE * row_tile_idx, 0)", "gradx_from_row_tile"),
    ("weighted_sum_fwd_bwd", 3, "(tl.program_id(0) * ROWS_TILE_SIZE, 0)", "gradx_from_row_tile"),
    ("weighted_sum_fwd_bwd", 4, "(tl.num_programs(0), D)", "partial_one_row_per_tile"),
]


@pytest.mark.parametrize(("exercise_id", "blank", "fill", "claim"), EQUIVALENT)
def test_an_equivalent_spelling_of_the_fill_is_what_the_explanation_describes(exercise_id, blank, fill, claim):
    assert claim not in _claims_not_shown(exercise_id, blank, fill)


# The claimed expression and more: not what the explanation describes (each was read as it while a
# claim's patterns searched the fill).
SUPERSETS = [
    ("lesson06_mean_var", 1, "(values >= 0) & mask", "position_mask"),
    ("lesson06_mean_var", 1, "mask | (values > 0)", "position_mask"),
    ("lesson06_mean_var", 1, "(cols < N) & (values != 0)", "position_mask"),
    ("lesson07_softmax", 1, "float('inf')", "neg_inf_padding"),
    ("lesson07_softmax", 2, "tl.max(logits, axis=0) - 1.0", "subtract_max"),
    ("welford_merge", 1, "tl.sum(tl.where(mask & (values > 0), 1.0, 0.0), axis=0)", "count_from_mask"),
    ("welford_merge", 2, "tl.sum(tl.where(mask, values - mean_b, 0.0), axis=0) * 2", "m2_remasked"),
    ("welford_merge", 3, "delta * delta * n / n_new", "chan_divided"),
    ("fused_mean_var_atomic", 1, "tl.sum(values * values, axis=0) - tl.sum(values, axis=0)", "sum_of_squares"),
    ("lesson05_row_sum", 1, "stride_m * 2", "row_stride"),
    # weighted sum's blanks 3 and 4, wrong (the probes of bench/probes/weighted_sum earned the point)
    ("weighted_sum_fwd_bwd", 3, "(row_tile_idx * D_TILE_SIZE, 0)", "gradx_from_row_tile"),
    ("weighted_sum_fwd_bwd", 3, "(0, row_tile_idx * ROWS_TILE_SIZE)", "gradx_from_row_tile"),
    ("weighted_sum_fwd_bwd", 4, "(n_row_tiles - 1, D)", "partial_one_row_per_tile"),
    ("weighted_sum_fwd_bwd", 4, "(ROWS_TILE_SIZE, D)", "partial_one_row_per_tile"),
]


@pytest.mark.parametrize(("exercise_id", "blank", "fill", "claim"), SUPERSETS)
def test_a_fill_holding_the_claimed_expression_and_more_is_not_it(exercise_id, blank, fill, claim):
    assert claim in _claims_not_shown(exercise_id, blank, fill)
