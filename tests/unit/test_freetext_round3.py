"""Probes of the written-answer scorer, round 3 (issue 15 item 6, 2026-12-05): honest and probe answers
written from the exercises' prompts, reference answers and seeds (not from the calibration set) that the
scorer flagged falsely or failed to flag. Each test states the general reading, not one answer's words:
a value goes with the reduction it is said of; a belief the student keeps is stated however it was
introduced; "no rescale needed" is right where the answer's kernel takes the max in a pass of its own;
an account blank by blank with a reason for each blank is no keyword list."""
from __future__ import annotations

import pytest

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from service.grading import freetext
from service.grading.freetext import score_answer

CATALOG = ExerciseCatalog(REPO_ROOT / "exercises")


def _scored(exercise: str, question: str, answer: str, fills: list[str] | None = None) -> freetext.TextScore:
    ex = CATALOG.get(exercise)
    points = next(i.points for i in ex.spec.rubric if i.source == "text" and i.question == question)
    return score_answer(ex.question(question), answer, points, fills=fills, course_text=ex.spec.course_text)


def _found(result: freetext.TextScore) -> set[str]:
    return {f["concept"] for f in result.found}


def _wrong(result: freetext.TextScore) -> set[str]:
    return {m["misconception"] for m in result.misconceptions} | \
        {s.get("misconception", s["kind"]) for s in result.suspected}


# (4) Lesson 5 Q2: each padding value goes with the reduction it is said of. −inf said of the sum beside
# "max" is not the max's −inf, and 0 said of the max beside "sum" is not the sum's 0; the pair swapped,
# said plainly, is max_zero.
@pytest.mark.parametrize("answer", [
    "Use 0 for max, and -inf for sum.",
    "0 for max, and -inf for sum: padding lanes still join the reduction.",
    "max 填 0，sum 填 -inf。",
    "求最大值时 other 用 0，求和时用 -inf。",
    "sum: other = -inf; max: other = 0",
])
def test_a_swapped_pair_of_identities_earns_neither_and_is_max_zero(answer):
    result = _scored("lesson05_row_sum", "q2", answer)
    assert "max_neg_inf" not in _found(result) and "sum_zero" not in _found(result), _found(result)
    assert "max_zero" in _wrong(result) and "misconception" in result.flags


@pytest.mark.parametrize("answer", [
    "Use 0 for the sum's padding, and -inf for max.",
    "求和填 0，求最大值填 -inf。",
    "sum: other = 0; max: other = -inf",
    "max 填 -inf，sum 填 0。",
])
def test_the_right_pair_of_identities_earns_both(answer):
    result = _scored("lesson05_row_sum", "q2", answer)
    assert {"sum_zero", "max_neg_inf"} <= _found(result) and not _wrong(result), (_found(result), _wrong(result))
