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


# 其实 ("actually") in the middle of an explanation explains; only where it opens a clause or comes before a
# denial or a shortcut does it wave a step away.
def test_actually_inside_a_verbose_correct_answer_is_no_dismissal():
    answer = ("在 online softmax 里，我们一边遍历一边维护当前最大值 m 和累加和 s。s 里的每一项其实都是 exp(x − m_old)，"
              "是以旧的最大值为基准算出来的。当新块的最大值 m_new 比 m_old 大的时候，这些项应该改成 exp(x − m_new)，而 "
              "exp(x − m_new) = exp(x − m_old) × exp(m_old − m_new)，所以只要把整个 s 乘上 exp(m_old − m_new) 就完成了换算。"
              "如果忘了乘，前面块的贡献就被放大了，分母偏大，最后每行的 softmax 加起来小于 1。padding 应该读成 −inf，因为它永远"
              "不会成为最大值，而且 exp(−inf − m) = 0。如果读成 0，当一行全是负数的时候 0 就成了最大值，每个 padding lane 还会"
              "多加 exp(0 − m)。")
    result = _scored("puzzle_long_softmax", "q1", answer)
    assert not result.flags and result.points == 3.0, (result.flags, result.suspected, result.points)


@pytest.mark.parametrize("exercise,question,answer", [
    ("lesson06_mean_var", "q2", "其实不会污染，0 的平方还是 0。"),
    ("lesson06_mean_var", "q2", "这里其实也可以不写 tl.where。"),
])
def test_actually_before_a_denial_still_waves_a_step_away(exercise, question, answer):
    assert _scored(exercise, question, answer).flags


# Phrasings of a concept the patterns lacked (each a family, zh and en).
@pytest.mark.parametrize("exercise,question,answer,concept", [
    ("puzzle_long_softmax", "q1", "The old sum uses the old max, so you need exp(m_old − m_new).", "relative_to_old"),
    ("puzzle_long_softmax", "q1", "The running sum was built against m_old, so it is rescaled.", "relative_to_old"),
    ("puzzle_long_softmax", "q1", "旧的和是拿旧的 max 算的，所以要乘 exp(m_old − m_new)。", "relative_to_old"),
    ("puzzle_long_softmax", "q1", "padding 填 0 的话，只有整行全是负数的时候才会出问题。", "zero_effect"),
    ("puzzle_long_softmax", "q1", "Padding with 0 breaks for an all-negative row.", "zero_effect"),
    ("lesson05_row_sum", "q2", "The padding lanes still carry other into tl.sum; nothing skips them.", "padding_joins"),
    ("lesson07_softmax", "q2", "If it is 0, an all-negative row will have 0 as its max.", "zero_is_max"),
    ("puzzle_long_softmax", "q1", "With 0, an all-negative row would have 0 as its max.", "zero_effect"),
    # the blog's three loops (max, sum, output) tell the passes too
    ("puzzle_long_softmax", "explanation", "I wrote three loops: the first finds the row max, the second sums "
                                           "exp(x − max), the third writes exp(x − max)/sum.", "two_passes"),
    ("puzzle_long_softmax", "explanation", "三个 for 循环：先求最大值，再求和，最后写结果。", "two_passes"),
])
def test_phrasings_of_a_concept_are_recognised(exercise, question, answer, concept):
    assert concept in _found(_scored(exercise, question, answer))


# What a remedy buys, said as a need denied ("同样不需要大数相减"), is the remedy, not a step waved away.
@pytest.mark.parametrize("answer", [
    "E[x²]−E[x]² 是两个 1e8 左右的大数相减，结果全是舍入噪声。两遍法先减均值，平方的是小数。分块时用 Welford 维护 (n, mean, M2)，"
    "块之间用 Chan 的公式合并，同样不需要大数相减。",
    "E[x^2] - E[x]^2 subtracts two huge nearly equal numbers and cancels. The two-pass method subtracts the mean "
    "first, so it never subtracts two large numbers.",
])
def test_a_remedy_said_as_no_large_subtraction_is_no_dismissal(answer):
    result = _scored("lesson06_mean_var", "q3", answer)
    assert "dismissal" not in result.flags and "remedy" in _found(result), (result.flags, result.suspected)


@pytest.mark.parametrize("exercise,question", [("lesson07_softmax", "q2"), ("puzzle_long_softmax", "q1")])
@pytest.mark.parametrize("answer", [
    "−inf turns the padding lanes into NaN after exp, and the store mask throws those NaNs away, so they never reach y.",
    "−inf makes the padding lanes NaN, and the store mask drops the NaNs.",
])
def test_nan_dropped_by_the_store_is_neg_inf_nan(exercise, question, answer):
    result = _scored(exercise, question, answer)
    assert "neg_inf_nan" in _wrong(result) and "misconception" in result.flags, result.misconceptions
