"""A chain told as consecutive statements in the chain's order, and a wrong choice told with its failure (issue 15
item 6, branch `ordered`). Written for this change from the exercises' questions and rubrics, in zh and en, for
several exercises; not from the calibration set.

- A terse honest answer that states the chain's steps one statement after another, linking words dropped, tells
  the chain (freetext.ORDERED_STEPS): the pass rule's causal chain counts those links; a keyword list (statements
  that are bare terms) and statements out of the chain's order do not.
- "最大值填 0 → 全负行最大值成 0" explains why the fill is wrong (freetext.FAILS_CONSEQUENCE): it is not the
  misconception it names, where "max 填 0，结果不变" still is."""
from __future__ import annotations

import pytest

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from service.grading import freetext
from service.grading.folding import normalise
from service.grading.freetext import TextScore, score_answer
from service.grading.passrule import chain_requirement

CATALOG = ExerciseCatalog(REPO_ROOT / "exercises")


def _scored(exercise: str, question: str, answer: str) -> tuple[TextScore, float]:
    ex = CATALOG.get(exercise)
    points = next(item.points for item in ex.spec.rubric if item.source == "text" and item.question == question)
    return score_answer(ex.question(question), answer, points, course_text=ex.spec.course_text), points


def _chain_met(exercise: str, question: str, answer: str, language: str = "zh") -> bool:
    ex = CATALOG.get(exercise)
    result, points = _scored(exercise, question, answer)
    item = freetext.score_text(item_id=question, title=question.upper(), max_points=points,
                               question=ex.question(question), answer=answer, language=language, result=result)
    return chain_requirement(item, question_id=question, share=ex.spec.pass_rule.chain_share,
                             language=language).met


ORDERED = [
    ("weighted_sum_fwd_bwd", "q3", "y 按行独立，一个 program 一个行块；x 的这些行 + 整个 w；x 沿 D 连续加载；w 广播到每行复用", "zh"),
    ("weighted_sum_fwd_bwd", "q3", "Rows independent, one program per row tile; those rows of x + the whole w; x loaded "
                                   "contiguously along D; w broadcast to every row, reused", "en"),
    ("fused_mean_var_atomic", "q2", "atomic_add accumulates into the buffer; last call's sums remain in it; second call's "
                                    "mean doubled; zero both buffers before every launch", "en"),
    ("puzzle_long_sum", "q1", "B1 比 T 小，循环 cdiv(T, B1) 次；最后一块列 8..11 越过行尾读到下一行；行和偏大；mask cols < T", "zh"),
    ("welford_merge", "q1", "均值 1e4 时 x² 约 1e8；fp32 在 1e8 的间距是 8；真实方差 1e-4 远小于 8，相减只剩舍入误差；两遍法先减均值",
     "zh"),
]


@pytest.mark.parametrize(("exercise", "question", "answer", "language"), ORDERED)
def test_steps_stated_in_the_chains_order_meet_the_causal_chain(exercise, question, answer, language):
    result, _ = _scored(exercise, question, answer)
    assert "keyword_stuffing" not in result.flags and not result.misconceptions, result.flags
    assert _chain_met(exercise, question, answer, language), (result.links, result.loose_links, result.points)


def test_switched_off_the_ordered_statements_are_no_links(monkeypatch):
    exercise, question, answer, language = ORDERED[0]
    assert _chain_met(exercise, question, answer, language)
    monkeypatch.setattr(freetext, "ORDERED_STEPS", None)
    assert not _chain_met(exercise, question, answer, language)  # the miss of before: no linking word anywhere


def test_ordered_links_count_for_the_pass_rule_not_the_points():
    exercise, question, answer, _ = ORDERED[0]
    result, _ = _scored(exercise, question, answer)
    assert not result.links and len(result.loose_links) == 3  # ORDERED_STEPS "loose": the points stay calibrated


@pytest.mark.parametrize(("exercise", "question", "answer"), [
    ("weighted_sum_fwd_bwd", "q3", "自然分块；相互独立；行块；需要 x 和 w；连续；advance；广播；复用"),
    ("weighted_sum_fwd_bwd", "q3", "Natural tiling. Independent rows. Row tile. Inputs x and w. Contiguous. Advance. "
                                   "Broadcast. Reuse."),
    ("fused_mean_var_atomic", "q2", "atomic_add。残留。漂移。两个 buffer。每次清零。"),
    ("puzzle_long_sum", "q1", "cdiv; next row; wrong sum; tail mask; cols < T"),
])
def test_a_keyword_list_cut_into_statements_states_no_chain(exercise, question, answer):
    result, _ = _scored(exercise, question, answer)
    assert not _chain_met(exercise, question, answer), (result.flags, result.links, result.loose_links)


@pytest.mark.parametrize(("text", "said", "linked"), [
    ("y 按行独立；x 的这些行 + 整个 w", "y 按行独立", True),              # relation, relation, in order
    ("x 的这些行 + 整个 w；y 按行独立", "y 按行独立", False),             # out of the chain's order
    ("y 按行独立；中间一句说明；x 的这些行 + 整个 w", "y 按行独立", False),  # not consecutive
    ("行块；x 的这些行 + 整个 w", "行块", False),                         # the first statement a bare term
    ("y 按行独立，x 的这些行 + 整个 w", "y 按行独立", False),             # comma pieces: one statement
    ("rows independent. those rows of x + the whole w", "rows independent", True),
    ("row tile. those rows of x + the whole w", "row tile", False),
])
def test_consecutive_statements_each_relating_their_terms(text, said, linked):
    text = normalise(text)
    statements = freetext._statements(text)
    before = text.index(said)
    needed = "x 的这些行 + 整个 w" if "整个" in text else "those rows of x + the whole w"
    after = text.index(needed)
    befores = [freetext._Match("natural_tiling", before, before + len(said), 0)]
    afters = [freetext._Match("inputs_needed", after, after + len(needed), 0)]
    assert (freetext._ordered_link(text, statements, befores, afters) is not None) is linked


@pytest.mark.parametrize("answer", [
    "x 的这些行 + 整个 w", "x 的行块加上整个 w", "x 的这些行、全部 w", "需要这些行的 x 和整个 w",
    "those rows of x + the whole w", "rows of x plus all of w", "needs its rows of x and the whole w",
])
def test_the_inputs_needed_said_without_a_verb(answer):
    result, _ = _scored("weighted_sum_fwd_bwd", "q3", answer)
    assert "inputs_needed" in [f["concept"] for f in result.found]


@pytest.mark.parametrize("answer", ["w 广播到每行", "the whole w is broadcast"])
def test_w_alone_is_not_the_inputs_needed(answer):
    result, _ = _scored("weighted_sum_fwd_bwd", "q3", answer)
    assert "inputs_needed" not in [f["concept"] for f in result.found]


@pytest.mark.parametrize("answer", [
    "求和填 1 → 每个 padding 多加 1；最大值填 0 → 全负行最大值成 0",
    "sum padded with 1 → each pad adds an extra 1; max pads with 0 → an all-negative row's max becomes 0",
    "最大值 other 填 0 的话 → 全是负数的行最大值就变成 0",
    "if the max used other=0, then a row of negatives would have its max become 0",
])
def test_a_wrong_fill_told_with_its_failure_is_no_misconception(answer):
    result, _ = _scored("lesson05_row_sum", "q2", answer)
    assert not result.misconceptions and "misconception" not in result.flags, (result.misconceptions, result.flags)
    assert not result.suspected, result.suspected


@pytest.mark.parametrize("answer", [
    "max 也填 0，结果不变",
    "max pads with 0 → the max is still right",
    "最大值也填 0，全负行最大值也不会变成 0",
])
def test_a_wrong_fill_told_as_harmless_is_still_the_misconception(answer):
    result, _ = _scored("lesson05_row_sum", "q2", answer)
    assert "max_zero" in [m["misconception"] for m in result.misconceptions], (result.flags, result.suspected)


def test_a_wrong_mechanisms_own_consequence_is_no_explanation():
    # no choice in the misconception's words: its consequence is part of the wrong mechanism
    answer = "最后一块越过行尾时会读到没初始化的显存，里面是随机值，所以行和变成 NaN。"
    base, _ = _scored("puzzle_long_sum", "q1", answer)
    assert base.misconceptions or base.suspected, base.flags


def test_switched_off_a_wrong_fill_with_its_failure_is_flagged(monkeypatch):
    monkeypatch.setattr(freetext, "FAILS_CONSEQUENCE", False)
    result, _ = _scored("lesson05_row_sum", "q2", "求和填 1 → 每个 padding 多加 1；最大值填 0 → 全负行最大值成 0")
    assert "max_zero" in [m["misconception"] for m in result.misconceptions]
