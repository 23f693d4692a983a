"""A label's difference turned around, read to the end of its sentence (issue 15 item 6, branch `misc11`). Long
Softmax's rescale_inverted label says "multiply the old sum by exp(m_new − m_old)"; a right account derives the
factor exp(m_old − m_new) in a chain of arrows, one sentence, whose first steps are close to the label's words, and
the factor came more than 40 characters after them: it was flagged and scored 0 of 3. Written for this change from
the question and the label; not from the calibration set."""
from __future__ import annotations

import pytest

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from service.grading import freetext
from service.grading.freetext import TextScore, score_answer

CATALOG = ExerciseCatalog(REPO_ROOT / "exercises")


def _scored(answer: str) -> tuple[TextScore, float]:
    ex = CATALOG.get("puzzle_long_softmax")
    points = next(item.points for item in ex.spec.rubric if item.source == "text" and item.question == "q1")
    return score_answer(ex.question("q1"), answer, points, course_text=ex.spec.course_text), points


DERIVED = [
    "terms of the old sum = exp(x − m_old) → a new block raises the max to m_new → every term should be exp(x − m_new) "
    "= exp(x − m_old)·exp(m_old − m_new) → hence the old sum is multiplied by exp(m_old − m_new) first.",
    "the old sum holds exp(x − m_old) for each x → the max then moves up to m_new → we want exp(x − m_new), which is "
    "exp(x − m_old) times exp(m_old − m_new) → so scale the old sum by exp(m_old − m_new).",
]
INVERTED = ("the old sum holds exp(x − m_old) for each x → the max then moves up to m_new → the old sum is too small "
            "now → so scale the old sum by exp(m_new − m_old).")


@pytest.mark.parametrize("answer", DERIVED)
def test_the_factor_derived_at_the_chains_end_is_the_correction(answer: str) -> None:
    result, _ = _scored(answer)
    assert not result.flags, result.suspected
    assert result.points == 1.5  # the rescale half told whole, the padding half unanswered (UNANSWERED_PART)


def test_the_factor_inverted_is_still_the_misconception() -> None:
    result, _ = _scored(INVERTED)
    assert "misconception" in result.flags


def test_a_reach_of_forty_characters_missed_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(freetext, "TURNED_REACH", 40)
    result, _ = _scored(DERIVED[0])
    assert "suspected_misconception" in result.flags
