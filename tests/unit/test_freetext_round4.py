"""Probes of the written-answer scorer, round 4 (issue 15 item 6, 2026-12-05, branch `recallB`): answers
written from the exercises' prompts, reference answers and seeds (not from the calibration set), in the
phrasing families the calibration set's tuning part missed. Each test states the general reading: a wrong
mechanism stays stated when the failure it wrongly explains follows it; a step left out followed by what
then goes wrong is a supposition, not the practice; "→ 不会污染" after a wrong choice is its claim, not its
failure."""
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
    return {m["misconception"] for m in result.misconceptions}


# A wrong mechanism (`mechanism: true`) followed by the symptom it wrongly explains ("所以方差偏大") is
# still the student's mechanism: the symptom is right, the cause is not.
@pytest.mark.parametrize("exercise,question,answer,misconception", [
    ("lesson06_mean_var", "q2", "第二次 tl.sum 读到了越界的内存，里面是垃圾数据，所以方差偏大。", "oob_in_sum"),
    ("lesson06_mean_var", "q2", "只 mask load 的话，padding lane 的污染来自寄存器里残留的旧值，所以方差偏大。", "stale_lanes"),
    ("lesson06_mean_var", "q2", "The second tl.sum reads out of bounds past N, so the variance comes out too large.",
     "oob_in_sum"),
    ("puzzle_long_softmax", "q1", "padding 填 −inf，exp 之后变成 NaN，NaN 被 store 的 mask 丢掉，所以结果不会偏大。",
     "neg_inf_nan"),
])
def test_a_wrong_mechanism_with_its_symptom_after_it_is_flagged(exercise, question, answer, misconception):
    result = _scored(exercise, question, answer)
    assert misconception in _wrong(result) and "misconception" in result.flags, (result.flags, result.misconceptions)
    assert result.points <= 0.5


# A step left out, then a consequence word and what goes wrong (a rubric concept): "if the store has no
# mask, it writes into the next row", not "the store needs no mask".
@pytest.mark.parametrize("answer", [
    "store 不加 mask 会写进下一行。",
    "N0 不是 B0 的整数倍时最后一块有越界的列，store 不加 mask 会写进下一行，所以 store 也要 mask。",
    "最后一块有越界 lane；store 没加 mask 的话就会写到下一行开头，破坏别的数据。",
])
def test_a_step_left_out_and_what_then_goes_wrong_is_no_misconception(answer):
    result = _scored("puzzle_outer_add", "q1", answer)
    assert not _wrong(result) and "misconception" not in result.flags, result.misconceptions
    assert "corrupts" in _found(result) and result.points >= 0.5


@pytest.mark.parametrize("answer", [
    "store 不加 mask，load 已经有 mask 了。",
    "I masked the loads, so the store doesn't need its own mask.",
])
def test_a_store_left_unmasked_as_practice_is_still_load_mask_enough(answer):
    result = _scored("puzzle_outer_add", "q1", answer)
    assert "load_mask_enough" in _wrong(result), result.misconceptions


# A wrong choice followed by a negated consequence ("→ 不会污染结果", "也可以，不会污染") claims it is
# harmless: the choice is stated (the lookahead that spares "填 0 会错" must not spare "不会").
@pytest.mark.parametrize("answer", [
    "最大值填 0 → 不会污染结果。",
    "求最大值时 other 填 0 也可以，不会污染结果。",
    "max 的 padding 用 0 没问题。",
])
def test_a_wrong_choice_called_harmless_is_max_zero(answer):
    result = _scored("lesson05_row_sum", "q2", answer)
    assert "max_zero" in _wrong(result), (result.misconceptions, result.suspected)


@pytest.mark.parametrize("answer", [
    "最大值填 0 会错：全负的行最大值变成 0。",
    "max 填 0 的话，一行全是负数时结果会变成 0，所以要填 -inf。",
])
def test_a_wrong_choice_with_its_failure_is_no_max_zero(answer):
    assert "max_zero" not in _wrong(_scored("lesson05_row_sum", "q2", answer))
