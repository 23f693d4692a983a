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


# fused_mean_var_atomic: the right part in words its patterns lacked.
RIGHT_PART_PHRASINGS = [
    ("q1", "host_combine", "Σx and Σx² are linear, so they are what the programs atomic_add; the variance is computed "
                           "afterwards from the two sums."),
    ("q1", "host_combine", "kernel 里只累加 Σx 和 Σx²，等所有 program 都加完之后再算方差。"),
    ("explanation", "accumulates", "The second blank zeroes sums and sumsqs, because atomic_add adds its value on top of "
                                   "whatever the buffer holds."),
    ("explanation", "accumulates", "第二个空清零两个缓冲区：atomic_add 是在缓冲区原来的数的基础上累加的。"),
    ("q2", "zero_each_launch", "第二次调用会把上一次的和也加进去，所以每次 launch 之前都要把 sums 和 sumsqs 清零。"),
    ("q2", "both_buffers", "两次调用之间得把 sums 与 sumsqs 一起清零，不然上次的和还留在里面。"),
]


@pytest.mark.parametrize(("question", "concept", "answer"), RIGHT_PART_PHRASINGS)
def test_the_right_part_is_read_in_these_words(question, concept, answer):
    assert concept in _concepts(_scored("fused_mean_var_atomic", question, answer))


ORDER_BLAMED = [
    "方差不能 atomic_add：每块先算方差再 atomic_add 的话，执行顺序一变，结果就跟着变。",
    "If the programs atomic_add their variances, the variances land in a different order on every run and you get a "
    "different result each time.",
]
ORDER_CLEARED = [
    "方差不是线性的。顺序变了结果也不变，加法与顺序无关，问题在于各块均值不同。",
    "Adding the variances in a different order gives the same total; the trouble is that each chunk's variance is "
    "about its own mean.",
]


@pytest.mark.parametrize("answer", ORDER_BLAMED)
def test_variances_said_to_change_with_the_order_are_flagged(answer):
    assert "order_blamed_for_variances" in _wrong(_scored("fused_mean_var_atomic", "q1", answer))


@pytest.mark.parametrize("answer", ORDER_CLEARED)
def test_an_order_said_not_to_change_the_result_is_not_blamed(answer):
    assert "order_blamed_for_variances" not in _wrong(_scored("fused_mean_var_atomic", "q1", answer))


# weighted_sum_fwd_bwd overrun_faults: the overrun said as "past D", and 非法 ("illegal") negates nothing.
OVERRUN_CRASHES = [
    "With boundary_check=(0,) only, the columns past D are an illegal memory access, so the kernel crashes.",
    "只检查第 0 维的话，超出 D 的列会非法访问内存，kernel 直接崩溃。",
]
OVERRUN_READS_ON = [
    "Without checking dim 1 the columns past D read the next row's values; nothing crashes, the zero-padded weight "
    "hides it.",
    "不检查第 1 维时，超出 D 的列读到的是下一行的数据，不会非法访问内存，只是被补 0 的权重掩盖了。",
]


@pytest.mark.parametrize("answer", OVERRUN_CRASHES)
def test_columns_past_d_said_to_crash_are_flagged(answer):
    assert "overrun_faults" in _wrong(_scored("weighted_sum_fwd_bwd", "q1", answer))


@pytest.mark.parametrize("answer", OVERRUN_READS_ON)
def test_columns_past_d_said_to_read_the_next_row_are_not_flagged(answer):
    assert _wrong(_scored("weighted_sum_fwd_bwd", "q1", answer)) == []


# REASON_NOT_FAILURE: a failure after "because" that names another choice is the reason for this one.
BESSEL_WITH_ITS_REASON = [
    "第三个空我除以 N − 1，因为样本方差要做无偏估计，除以 N 会偏小。",
    "The host divides by N - 1 because dividing by N underestimates the variance.",
]


@pytest.mark.parametrize("answer", BESSEL_WITH_ITS_REASON)
def test_a_choice_argued_by_its_alternatives_failure_is_stated(answer, monkeypatch):
    assert _wrong(_scored("fused_mean_var_atomic", "explanation", answer)) == ["bessel"]
    monkeypatch.setattr(freetext, "REASON_NOT_FAILURE", False)  # the failure read as the choice refuted
    assert _wrong(_scored("fused_mean_var_atomic", "explanation", answer)) == []


@pytest.mark.parametrize("answer", [
    "The host divides by N; dividing by N - 1 would overestimate the population variance.",
    "分母用 N，除以 N − 1 会偏大，题目要的是总体方差。",
])
def test_a_choice_followed_by_its_own_failure_is_refuted(answer):
    assert _wrong(_scored("fused_mean_var_atomic", "explanation", answer)) == []


def test_a_prohibition_with_its_failure_after_because_is_not_stated():
    result = _scored("welford_merge", "q3", "n_b 不能直接写 BLOCK，因为最后一块的均值会偏小；要数有效元素 N − start。")
    assert "block_count" not in _wrong(result), _wrong(result)


# puzzle_outer_add load_mask_enough: "the store needs no mask" said with masked loads; its correction is not it.
@pytest.mark.parametrize("answer", [
    "2D grid from two program ids, x[None, :] + y[:, None] broadcast, address offs_y * N0 + offs_x. Since the loads "
    "are masked, the store needs no mask.",
    "load 都带了 mask，所以 store 不必再加 mask。",
])
def test_masked_loads_said_to_spare_the_store_mask_are_flagged(answer):
    assert "load_mask_enough" in _wrong(_scored("puzzle_outer_add", "explanation", answer))


@pytest.mark.parametrize("answer", [
    "Masking the loads does not make the store safe: without a store mask the lanes past N0 are written into the "
    "next row.",
    "load 带了 mask 也不能让 store 安全：越界的 lane 还是 x + 0，会写到下一行。",
])
def test_masked_loads_said_not_to_cover_the_store_are_not_flagged(answer):
    assert _wrong(_scored("puzzle_outer_add", "explanation", answer)) == []


# FAILURE_AFTER_TERMS: a failure before a clause's statement is its premise, not its refutation.
def test_a_failure_told_before_the_statement_does_not_refute_it(monkeypatch):
    answer = ("Once a bigger max shows up, the old sum is too small next to the new terms and has to be scaled up "
              "by exp(m_new - m_old).")
    assert "rescale_inverted" in _wrong(_scored("puzzle_long_softmax", "q1", answer))
    monkeypatch.setattr(freetext, "FAILURE_AFTER_TERMS", False)  # "is too small" read as the statement's failure
    assert "rescale_inverted" not in _wrong(_scored("puzzle_long_softmax", "q1", answer))


def test_a_failure_told_after_the_statement_still_refutes_it():
    answer = "Multiplying the old sum by exp(m_new - m_old) would make it too large; the factor is exp(m_old - m_new)."
    assert "rescale_inverted" not in _wrong(_scored("puzzle_long_softmax", "q1", answer))


# Misconceptions told with the names of the code: lanes named by their mask value, the weight written n_b first.
@pytest.mark.parametrize(("exercise", "answer"), [
    ("lesson06_mean_var", "填 mask。tl.sum 会自动跳过 mask=False 的 lane，所以 padding 不会进方差。"),
    ("lesson05_row_sum", "The sum ignores the lanes where mask == 0, so other can be anything."),
])
def test_a_sum_said_to_skip_the_lanes_by_their_mask_value_is_flagged(exercise, answer):
    assert "sum_skips_masked" in _wrong(_scored(exercise, "explanation", answer))


@pytest.mark.parametrize("exercise", ["lesson06_mean_var", "lesson05_row_sum"])
@pytest.mark.parametrize("answer", ["tl.sum 不会跳过 mask=False 的 lane，每个 lane 都会被加进去。",
                                    "tl.sum does not skip lanes where mask is False; every lane is added."])
def test_a_sum_said_not_to_skip_them_is_not_flagged(exercise, answer):
    assert "sum_skips_masked" not in _wrong(_scored(exercise, "explanation", answer))


def test_a_merge_weighted_by_n_b_first_is_flagged():
    answer = "M2_b 是相对 mean_b 算的，合并时 Chan 要加 n_b·delta²，每个新元素一个 delta²。"
    result = _scored("welford_merge", "q2", answer)
    assert "wrong_weight" in _wrong(result) and "own_mean" in _concepts(result), (_wrong(result), _concepts(result))


@pytest.mark.parametrize("answer", [
    "The correction is delta² * n_a * n_b / (n_a + n_b); without it the variance is too small.",
    "M2 = M2_a + M2_b + n_a*n_b*delta2/(n_a+n_b)",
])
def test_the_right_weight_is_not_flagged(answer):
    assert "wrong_weight" not in _wrong(_scored("welford_merge", "q2", answer))


# RESULT_DENIED: a statement whose result the next words deny is refuted, not stated.
@pytest.mark.parametrize("answer", [
    "把各块方差相加，加出来的不是整行方差：缺块间项。",
    "Adding the chunk variances, you do not get the row's variance: the between-chunk term is missing.",
])
def test_a_statement_whose_result_is_denied_is_not_stated(answer):
    assert _wrong(_scored("fused_mean_var_atomic", "q1", answer)) == []


def test_a_statement_whose_result_is_affirmed_is_stated():
    answer = "每个 program 算自己的方差然后 atomic_add 到一起，就是整行的方差。"
    assert "add_variances" in _wrong(_scored("fused_mean_var_atomic", "q1", answer))
