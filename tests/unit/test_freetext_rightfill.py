"""A misconception stated in the code's explanation of a right fill (freetext.MISCONCEPTION_KEEP_RIGHT_FILL):
a wrong reason for code that passes every case keeps half of what the rest of the answer earns, where the
fill's own bug keeps MISCONCEPTION_KEEP of it. The answers are written from the prompt, not taken from the
calibration set."""
from __future__ import annotations

import pytest

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from service.grading import freetext, rubric
from service.grading.extract import extract
from service.grading.freetext import score_answer
from service.grading.stated_fill import fill_scope

CATALOG = ExerciseCatalog(REPO_ROOT / "exercises")
EXERCISE = CATALOG.get("puzzle_long_softmax")
SOLUTION_FILLS = extract(EXERCISE.template, EXERCISE.solution).fill_sources
REFERENCE = rubric.expression_fills(EXERCISE.template, EXERCISE.solution)  # (None,): one block blank

# Both loops told right, and 0 padding called harmless (misconception zero_padding_ok).
EXPLANATION = ("第一遍循环更新每行的最大值 m 并累加 s，m 变大时旧的 s 乘 exp(m_old − m_new) 重新缩放。"
               "第二遍用 exp(x − m)/s 算出结果并 store。mask 挡住越界的列，other 填 −inf。"
               "其实 other 填 0 也一样，越界的 lane 反正不会被 store 写出去，对结果没影响。")


def _explained(reference: tuple[str | None, ...] | None) -> freetext.TextScore:
    return score_answer(EXERCISE.question("explanation"), EXPLANATION, 2.0, fills=SOLUTION_FILLS,
                        reference_fills=reference, course_text=EXERCISE.spec.course_text,
                        scope=fill_scope(EXERCISE.template))


def test_a_wrong_reason_for_a_right_fill_keeps_half() -> None:
    right = _explained(REFERENCE)  # the fills passed every case: the pipeline gives the reference's
    unknown = _explained(None)
    assert [m["misconception"] for m in right.misconceptions] == ["zero_padding_ok"]
    assert "misconception" in right.flags and "misconception" in unknown.flags  # flagged either way
    assert (right.points, unknown.points) == (1.0, 0.5)


def test_off_the_right_fill_keeps_what_any_misconception_keeps(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(freetext, "MISCONCEPTION_KEEP_RIGHT_FILL", None)
    assert _explained(REFERENCE).points == _explained(None).points == 0.5


def test_only_the_code_explanation_reads_the_fill() -> None:
    """The other questions are banded without the code: a right fill changes nothing there."""
    ex = CATALOG.get("puzzle_long_softmax")
    answer = ("最大值变大时，之前累加的和是按旧的最大值算的，要乘 exp(m_old − m_new) 缩小。"
              "padding 填 0 也没问题，反正越界的 lane 不会写出去。")
    points = next(i.points for i in ex.spec.rubric if i.source == "text" and i.question == "q1")
    scored = [score_answer(ex.question("q1"), answer, points, fills=SOLUTION_FILLS, reference_fills=r,
                           course_text=ex.spec.course_text) for r in (REFERENCE, None)]
    assert scored[0].misconceptions
    assert scored[0].points == scored[1].points
