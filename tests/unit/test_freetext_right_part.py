"""Probes of the written-answer scorer, branch `misc9` (issue 15 item 6, 2026-12-06): misconception answers
whose right part the readers credit. Answers written for these tests from the prompts, reference answers and
rubric labels (not from the calibration set), in Chinese and English."""
from __future__ import annotations

import pytest

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from service.grading import freetext
from service.grading.freetext import score_answer

CATALOG = ExerciseCatalog(REPO_ROOT / "exercises")


def _scored(exercise: str, question: str, answer: str) -> freetext.TextScore:
    ex = CATALOG.get(exercise)
    points = next(i.points for i in ex.spec.rubric if i.source == "text" and i.question == question)
    return score_answer(ex.question(question), answer, points, course_text=ex.spec.course_text)


def _concepts(result: freetext.TextScore) -> list[str]:
    return [f["concept"] for f in result.found]


def _wrong(result: freetext.TextScore) -> list[str]:
    return [m["misconception"] for m in result.misconceptions]


# MISCONCEPTION_MIN_CREDIT: one wrong claim beside a right part that names a third or more of the concepts.
RIGHT_PART_BESIDE_ONE_MISCONCEPTION = [
    ("puzzle_outer_add", "explanation",
     "两个 program id 组成二维 grid，x[None, :] + y[:, None] 广播成一个 tile，地址是 offs_y * N0 + offs_x。"
     "load 已经带了 mask，越界的值是 0，store 就不用再加 mask 了。"),
    ("puzzle_outer_add", "explanation",
     "pid 0 and pid 1 make a 2D grid. I broadcast x[None, :] + y[:, None] and write to offs_y * N0 + offs_x. "
     "The loads are masked so the overhanging lanes are 0, which means the store does not need its own mask."),
]


@pytest.mark.parametrize(("exercise", "question", "answer"), RIGHT_PART_BESIDE_ONE_MISCONCEPTION)
def test_a_right_part_beside_one_misconception_keeps_half_a_point(exercise, question, answer, monkeypatch):
    result = _scored(exercise, question, answer)
    assert result.points == 0.5 and "misconception" in result.flags, (result.points, result.flags, _concepts(result))
    monkeypatch.setattr(freetext, "MISCONCEPTION_MIN_CREDIT", None)  # a quarter of the right part rounded to 0
    assert _scored(exercise, question, answer).points == 0.0


def test_a_misconception_beside_too_little_keeps_nothing():
    # one concept (the 2D grid) of five beside the wrong claim
    result = _scored("puzzle_outer_add", "explanation", "二维 grid。store 不用 mask，因为 load 已经 mask 过了。")
    assert result.points == 0.0 and _wrong(result) == ["load_mask_enough"], (result.points, _wrong(result))


def test_two_misconceptions_keep_nothing():
    # Long Softmax Q1: both halves wrong (the rescale turned around, zero padding called harmless)
    result = _scored("puzzle_long_softmax", "q1",
                     "The old sum must be multiplied by exp(m_new - m_old) so that it grows with the new max. "
                     "Padding can be read as 0: those lanes are never stored, so it does not matter.")
    assert result.points == 0.0 and len(_wrong(result)) == 2, (result.points, _wrong(result))
