"""Probes of the written-answer scorer, branch `misc10` (issue 15 item 6, 2026-12-06): a minor misconception
costs its share of the right part's points (PENALTY_OF_RIGHT_PART), and a misconception beside fills known
right counts as a minor one (RIGHT_FILLS_PENALTY). Answers written for these tests from the prompts,
reference answers and rubric labels (not from the calibration set), in Chinese and English."""
from __future__ import annotations

import pytest

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from service.grading import freetext
from service.grading.extract import extract
from service.grading.freetext import score_answer
from service.grading.rubric import EXPLANATION_QUESTION, expression_fills
from service.grading.stated_fill import fill_scope

CATALOG = ExerciseCatalog(REPO_ROOT / "exercises")


def _scored(exercise: str, question: str, answer: str, *, right_fills: bool = False) -> freetext.TextScore:
    ex = CATALOG.get(exercise)
    points = next(i.points for i in ex.spec.rubric if i.source == "text" and i.question == question)
    fills: dict = {}
    if right_fills:  # the reference solution's own fills, as rubric.score_items passes them for passing code
        fills = {"fills": list(extract(ex.template, ex.solution).fill_sources),
                 "reference_fills": expression_fills(ex.template, ex.solution),
                 "scope": fill_scope(ex.template) if question == EXPLANATION_QUESTION else None}
    return score_answer(ex.question(question), answer, points, course_text=ex.spec.course_text, **fills)


def _wrong(result: freetext.TextScore) -> list[str]:
    return [m["misconception"] for m in result.misconceptions]


# Long Softmax Q1 (3 points): the padding half told whole, the rescale given the wrong purpose (overflow, a
# misconception of penalty 0.25). Readers give such answers a third of the points.
PADDING_HALF_BESIDE_A_MINOR_MISCONCEPTION = [
    "乘 exp(m_old − m_new) 是为了防止 sum 溢出：最大值变大以后，旧的 sum 不缩小的话一直加下去会超过 float32 的范围变成 inf。"
    "padding 要读成 -inf：exp(-inf) = 0，加到 sum 里没有贡献，也永远不会成为最大值；读成 0 的话全是负数的行最大值会变成 0，"
    "每个 padding lane 还多加 exp(0 − m)。",
    "The old sum is multiplied by exp(m_old - m_new) in order to prevent overflow of the running sum in fp32. "
    "Padding lanes must read -inf: exp(-inf) is 0 so they add nothing to the sum and -inf can never be the max. "
    "Reading 0 instead would make 0 the max of an all-negative row and add exp(0 - m) for every pad.",
]


@pytest.mark.parametrize("answer", PADDING_HALF_BESIDE_A_MINOR_MISCONCEPTION)
def test_a_minor_misconception_costs_half_of_the_right_part(answer, monkeypatch):
    result = _scored("puzzle_long_softmax", "q1", answer)
    assert _wrong(result) == ["rescale_for_overflow"] and result.points == 1.0, (result.points, _wrong(result))
    monkeypatch.setattr(freetext, "PENALTY_OF_RIGHT_PART", False)  # a quarter of the right part: 0.5
    assert _scored("puzzle_long_softmax", "q1", answer).points == 0.5


RESCALE_HALF_BESIDE_A_MAJOR_MISCONCEPTION = (
    "Each old term is exp(x - m_old); when the max grows to m_new it must become exp(x - m_new), "
    "so the whole old sum is multiplied by exp(m_old - m_new) before the new block is added. "
    "The padding can be read as 0: zero padding doesn't change the softmax, those lanes are never stored.")


def test_a_major_misconception_keeps_a_quarter(monkeypatch):
    # the rescale half told whole beside the padding called harmless (zero_padding_ok, penalty 0.5): a quarter
    # of the right part, as before
    answer = RESCALE_HALF_BESIDE_A_MAJOR_MISCONCEPTION
    result = _scored("puzzle_long_softmax", "q1", answer)
    assert _wrong(result) == ["zero_padding_ok"] and result.points == 0.5, (result.points, _wrong(result))
    monkeypatch.setattr(freetext, "PENALTY_OF_RIGHT_PART", False)
    assert _scored("puzzle_long_softmax", "q1", answer).points == 0.5


# Long Softmax's explanation (2 points) of the reference's own body: the loops told right, and the padding
# value called irrelevant (zero_padding_ok, penalty 0.5) although the code reads -inf.
RIGHT_CODE_WRONG_SIDE_CLAIM = [
    "第一遍循环更新每行的最大值 m，同时累加 s，最大值变大时旧的 s 乘 exp(m − m_new)。第二遍用 exp(x − m) / s 算出结果写回。"
    "other 我用的是 -inf，不过 padding 填 0 也不影响结果，mask 外面的位置反正不会被 store 写出去。",
    "First loop: keep the running max m of each row and the sum s; when the max grows multiply the old s by "
    "exp(m - m_new). Second loop: compute exp(x - m) / s and store it. I read the padding as -inf, but zero padding "
    "doesn't change the softmax either, because the masked lanes are never stored.",
]


@pytest.mark.parametrize("answer", RIGHT_CODE_WRONG_SIDE_CLAIM)
def test_a_misconception_beside_right_fills_is_minor(answer, monkeypatch):
    result = _scored("puzzle_long_softmax", "explanation", answer, right_fills=True)
    assert _wrong(result) == ["zero_padding_ok"] and result.points == 1.0, (result.points, _wrong(result))
    # without the fills known right (a wrong body, or no fills) the misconception is a major one
    assert _scored("puzzle_long_softmax", "explanation", answer).points == 0.5
    monkeypatch.setattr(freetext, "RIGHT_FILLS_PENALTY", None)
    assert _scored("puzzle_long_softmax", "explanation", answer, right_fills=True).points == 0.5


def test_fills_do_not_move_an_answer_no_run_can_change():
    # Long Softmax Q1 reads no fills (no `describes`): with the fills known right it scores as without them, as
    # rubric.score_answers_ahead scores it before the run ends
    ex = CATALOG.get("puzzle_long_softmax")
    assert not ex.question("q1").describes
    for answer in [RESCALE_HALF_BESIDE_A_MAJOR_MISCONCEPTION, *PADDING_HALF_BESIDE_A_MINOR_MISCONCEPTION]:
        assert _scored("puzzle_long_softmax", "q1", answer, right_fills=True).points \
            == _scored("puzzle_long_softmax", "q1", answer).points
