"""Probes of the written-answer scorer, branch `partial` (issue 15 item 6, 2026-12-05): answers written
from the prompts and reference answers (not from the calibration set). Two readings: a short answer
that leaves the question's other parts (concepts outside every chain) unrecognised has no room for them
and cannot earn full points, while a terse chain with a step implicit keeps them (SHORT_OF_REFERENCE);
an A-not-A question (能不能, 是不是, 有没有) asks and denies nothing."""
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


# Lesson 6 Q3 asks for the problem, the remedies (two-pass, fp64, Welford/Chan) and the fp32 limit: these
# name the problem and one remedy only, in a fifth of the reference answer's length.
SHORT_PARTIAL = [
    "E[x²]−E[x]² 是两个大数相减，会灾难性抵消，所以改用两遍法：先减均值再平方。",
    "大 mean 小方差 → E[x²] ≈ E[x]² → 相减灾难性抵消 → 改用两遍法（先减均值）",
]


@pytest.mark.parametrize("answer", SHORT_PARTIAL)
def test_a_short_answer_leaving_the_other_parts_unsaid_is_not_full(answer, monkeypatch):
    result = _scored("lesson06_mean_var", "q3", answer)
    assert result.points == 1.5 and result.flags == [], (result.points, result.flags)
    monkeypatch.setattr(freetext, "SHORT_OF_REFERENCE", None)  # the share rule alone paid it in full
    assert _scored("lesson06_mean_var", "q3", answer).points == 2.0


def test_a_short_answer_is_measured_against_the_reference_not_capped_as_such():
    # The same two concepts told at the reference's length: room for what the patterns do not read.
    answer = ("单遍公式 E[x²]−E[x]² 在均值很大、方差很小的时候，两项都接近 mean²，是两个几乎相等的大数；fp32 只有 24 位尾数，"
              "相减之后有效数字几乎全部抵消，剩下的主要是舍入误差，甚至会算出负的方差，这就是灾难性抵消。"
              "所以本课用两遍法：先求出均值，再让每个元素减去均值之后平方求和，参与求和的都是小数，不再有两个大数相减。")
    assert _scored("lesson06_mean_var", "q3", answer).points == 2.0


def test_a_short_answer_with_every_part_keeps_full_points():
    # Terse, every part of the question named: nothing unrecognised to make room for.
    answer = "单遍 E[x²]−E[x]² 大均值时灾难性抵消 → 两遍（先减均值）；再稳：fp64 累加或 Welford + Chan 合并；fp32 本身精度有极限。"
    result = _scored("lesson06_mean_var", "q3", answer)
    assert result.points == 2.0, (result.points, [f["concept"] for f in result.found])


def test_a_terse_chain_with_a_step_implicit_keeps_full_points():
    # Lesson 6 Q2: every concept is a step of its chain; "other=0.0 is the first sum's identity" is implicit.
    result = _scored("lesson06_mean_var", "q2", "pad 0 → 减均值后 −μ → 平方 μ² → 第二次求和多出 (BLOCK−N)μ² → tl.where 重新 mask")
    assert result.points == 2.0 and result.flags == [], (result.points, result.flags)


@pytest.mark.parametrize(("text", "word"), [
    ("这些输入能不能连续加载", "连续加载"),
    ("x 的行是不是连续存放的", "连续存放"),
    ("第二次求和前需不需要重新 mask", "重新 mask"),
    ("有没有重复使用 w", "重复使用"),
])
def test_an_a_not_a_question_denies_nothing(text, word):
    start = text.index(word)
    spans = freetext._sentences(text)
    assert freetext._denied(text, start, start + len(word), spans) is None


@pytest.mark.parametrize(("text", "word"), [
    ("这些输入不能连续加载", "连续加载"),
    ("第二次求和前不需要重新 mask", "重新 mask"),
    ("没有重复使用 w", "重复使用"),
])
def test_a_plain_negation_still_denies(text, word):
    start = text.index(word)
    spans = freetext._sentences(text)
    assert freetext._denied(text, start, start + len(word), spans) is not None


# SHORT_STEP_AND_PART (branch `partial8`): a short answer has room for one omission, a chain step left
# implicit or a minor part unsaid, not both (then half a point for each). Written from lesson 5 Q3's and lesson 7 Q3's prompts, reference
# answers and concepts (not from the calibration set). Lesson 5 Q3: the address (outside the chains), the
# unit column stride (outside, weight 0.5), and the chain stride > N → wrong rows → contiguous check passes.
L05_Q3_STEP_AND_PART = "地址是 x + row * stride_m + cols。用 N 的话从第 1 行起都读错位置。给定检查用的是连续张量，行距刚好等于 N，所以看不出来。"
L07_Q3_STEP_AND_PART = "不融合时每一步都要读写 HBM，约 5 次读 3 次写，8·M·N。融合后只读一次 x、写一次 y，2·M·N。softmax 是访存受限的，所以大约快 4 倍。"


@pytest.mark.parametrize(("exercise", "question", "answer"), [
    ("lesson05_row_sum", "q3", L05_Q3_STEP_AND_PART),  # stride > N (the chain's cause) and the unit column stride
    ("lesson07_softmax", "q3", L07_Q3_STEP_AND_PART),  # registers (why fused reads once) and the register limit
])
def test_a_short_answer_leaving_a_chain_step_and_a_minor_part_unsaid_is_not_full(exercise, question, answer,
                                                                                 monkeypatch):
    result = _scored(exercise, question, answer)
    assert result.points == 1.0 and result.flags == [], (result.points, result.flags)  # half a point each
    monkeypatch.setattr(freetext, "SHORT_STEP_AND_PART", None)  # each omission alone is forgiven
    assert _scored(exercise, question, answer).points == 2.0


@pytest.mark.parametrize("answer", [
    # the chain step left implicit, every part said (列是连续的: the unit column stride)
    "地址是 x + row * stride_m + cols，列是连续的。用 N 的话从第 1 行起都读错位置。给定检查用的是连续张量，行距刚好等于 N，所以看不出来。",
    # the whole chain, only the minor part (weight 0.5, under SHORT_CONCEPTS) unsaid
    "地址是 x + row * stride_m + cols。视图的行距大于 N，用 N 的话从第 1 行起都读错位置。给定检查用的是连续张量，行距刚好等于 N，所以看不出来。",
    # both left unsaid, but at a third of the reference's length or more: room for words the patterns miss
    "Row row starts at x + row * stride_m, then + cols. With N instead, every row after row 0 starts at the wrong "
    "place and sums the wrong elements. The given check uses a contiguous tensor, where the stride happens to "
    "equal N, so it cannot notice.",
])
def test_one_omission_or_room_for_it_keeps_full_points(answer):
    result = _scored("lesson05_row_sum", "q3", answer)
    assert result.points == 2.0 and result.flags == [], (result.points, [f["concept"] for f in result.found])


def test_a_terse_chain_of_a_question_without_other_parts_keeps_full_points():
    # Lesson 6 Q2's concepts are all steps of its chain: two steps implicit, nothing outside to leave unsaid.
    result = _scored("lesson06_mean_var", "q2", "pad 0 → x−μ = −μ → μ² ≠ 0 → re-mask")
    assert result.points == 2.0, (result.points, [f["concept"] for f in result.found])
