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


# (3) A belief the student keeps: a reported belief taken back as their own ("…后来我还是这么认为", "I still
# think so") is stated, and the student keeping to a step left out, in the first person ("我还是只用
# other=0.0", "I still skip …"), is a dismissal for a TA. A belief given up, and a step kept, are neither.
@pytest.mark.parametrize("answer", [
    "一开始我以为 other=0.0 就够了，后来我还是这么认为，因为 padding 是 0。",
    "At first I thought other=0.0 is enough, and I still think so: the pads are 0.",
    "有人说 other=0.0 就够了，我现在也还是这么觉得。",
])
def test_a_reported_belief_the_student_keeps_is_stated(answer):
    result = _scored("lesson06_mean_var", "q2", answer)
    assert "other_is_enough" in _wrong(result) and "misconception" in result.flags, (_wrong(result), result.flags)


@pytest.mark.parametrize(("exercise", "question", "answer"), [
    ("lesson06_mean_var", "q2", "我还是只用 other=0.0，不加 tl.where。"),
    ("lesson06_mean_var", "q2", "我还是会只用 other=0.0，不再 mask。"),
    ("lesson06_mean_var", "q2", "I still rely on other=0.0 alone, no tl.where."),
    ("lesson07_softmax", "q1", "I still skip subtracting the max; exp handles large numbers fine."),
    ("puzzle_long_softmax", "q1", "我还是不缩放旧的 sum，直接加新块的 exp。"),
])
def test_a_step_the_student_still_leaves_out_is_flagged(exercise, question, answer):
    result = _scored(exercise, question, answer)
    assert result.flags and result.points < 1.0, (result.flags, result.points)


@pytest.mark.parametrize(("exercise", "question", "answer"), [
    ("lesson06_mean_var", "q2", "我一开始以为 other=0.0 就够了，后来想明白了：中心化后 padding lane 变成 0 − μ = −μ，平方后是 μ²，"
                                "所以第二次求和多加了 (BLOCK − N)μ²，要用 tl.where 重新 mask。"),
    ("lesson06_mean_var", "q2", "other=0.0 只让 padding 在第一次求和时是单位元。中心化后 padding 变成 −μ，平方后 μ²，所以我还是会用 "
                                "tl.where 再 mask 一次，不让它们进第二次求和。"),
    ("lesson06_mean_var", "q2", "After centring the pads become -mean, so squared they add mean^2 to the second sum; I still "
                                "re-mask with tl.where before it, since other=0.0 only covers the first sum."),
])
def test_a_belief_given_up_or_a_step_kept_is_not_flagged(exercise, question, answer):
    result = _scored(exercise, question, answer)
    assert not result.flags and not _wrong(result) and result.points >= 1.5, (result.flags, _wrong(result), result.points)


# (2) Long Softmax: "no rescale needed" is right for a kernel whose max has a pass of its own (max, then
# sum, then normalise): the misconception's `unless` (the answer says so) excuses it, and the dismissal
# words inside it ("不需要 rescale") wave no step away. "the old sum needs no rescaling" claims no rescale
# of the fill. The online kernel's "sum 不需要缩放" is still the misconception.
THREE_PASS = """pid = tl.program_id(0)
log2_e = 1.44269504
rows = pid * B0 + tl.arange(0, B0)
row_mask = rows < N0
m = tl.full((B0,), float('-inf'), dtype=tl.float32)
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    mask = row_mask[:, None] & (cols[None, :] < T)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mask, other=float('-inf'))
    m = tl.maximum(m, tl.max(x, axis=1))
s = tl.zeros((B0,), dtype=tl.float32)
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    mask = row_mask[:, None] & (cols[None, :] < T)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mask, other=float('-inf'))
    s += tl.sum(tl.exp2(log2_e * (x - m[:, None])), axis=1)
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    mask = row_mask[:, None] & (cols[None, :] < T)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mask, other=float('-inf'))
    tl.store(z_ptr + rows[:, None] * T + cols[None, :], tl.exp2(log2_e * (x - m[:, None])) / s[:, None], mask=mask)"""


@pytest.mark.parametrize("answer", [
    "我写了三遍循环：第一遍沿 T 求每行的最大值 m；第二遍用这个最终的 m 累加 Σexp(x − m)；第三遍写出 exp(x − m)/sum。"
    "因为 sum 是在 max 已经确定之后才开始累加的，所以不需要 rescale。mask = (rows < N0) & (cols < T)，padding 读成 -inf，"
    "不会成为最大值，exp(-inf - m) = 0 不进 sum。",
    "Three passes: the first loop only finds each row's max, the second sums exp(x - m) with that final max, the third "
    "writes exp(x - m) / sum. Since the max is fixed before any term is summed, the old sum needs no rescaling. The mask "
    "is (rows < N0) & (cols < T) and the padding is read as -inf, so it is never the max and exp(-inf - m) = 0 adds nothing.",
    "第一个循环求 max，第二个循环求 sum，第三个循环归一化。max 先求完了再累加 sum，sum 直接累加 exp(x − m) 就行，不用缩放。"
    "mask 是 (rows < N0) & (cols < T)，other 填 -inf。",
])
def test_no_rescale_in_a_three_pass_kernel_is_no_misconception(answer):
    result = _scored("puzzle_long_softmax", "explanation", answer, fills=[THREE_PASS])
    assert not result.flags and not _wrong(result) and result.points > 0, (result.flags, _wrong(result))


@pytest.mark.parametrize(("question", "answer"), [
    ("q1", "第一遍同时求 max 和 sum，sum 不需要缩放，直接累加。"),
    ("q1", "The old sum needs no rescaling: just keep adding exp(x - m_new) to the running sum."),
    ("explanation", "两遍循环：第一遍求 max 和 sum，旧的 sum 不需要缩放；第二遍写出结果。"),
])
def test_no_rescale_in_an_online_kernel_is_still_the_misconception(question, answer):
    result = _scored("puzzle_long_softmax", question, answer)
    assert "no_rescale_needed" in _wrong(result) and "misconception" in result.flags


# (1) Terse correct explanations, blank by blank ("空1 …，…；空2 …") or a fill with its purpose told in a
# clause ("mask，防止 padding 的 mean² 加进第二次求和"), are the shape the explanation prompts ask for, not
# keyword lists. Keyword lists, with or without blank markers, are still flagged.
TERSE = [
    ("lesson05_row_sum", ["stride_m", "cols < N", "0.0"], "空1 stride_m，行距；空2 cols < N，防止越界；空3 0.0，加法单位元，不影响和。"),
    ("lesson05_row_sum", ["stride_m", "cols < N", "0.0"],
     "blank 1: stride_m, the row pitch; blank 2: cols < N, prevents out-of-bounds reads; blank 3: 0.0, additive "
     "identity, sum unchanged."),
    ("lesson05_row_sum", ["stride_m", "cols < N", "0.0"], "空1 stride_m，行距不一定是 N；空2 cols < N，防止越界读；空3 0.0，不影响和。"),
    ("lesson07_softmax", ['-float("inf")', "tl.max(logits, axis=0)"],
     "空1 填 -inf，max 的单位元，exp 后是 0；空2 减 tl.max，指数 ≤ 0，不会溢出。"),
    ("lesson07_softmax", ['-float("inf")', "tl.max(logits, axis=0)"], "空1 -inf，不影响 max，exp 后为 0；空2 tl.max，防止溢出。"),
    # the template's blank order (the pipeline's): the operand, the host variance, the pre-launch statements
    ("fused_mean_var_atomic", ["tl.sum(values * values, axis=0)", "sumsqs / N - mean * mean", "sums.zero_()\nsumsqs.zero_()"],
     "空1 tl.sum(values*values)，本块平方和，可以线性相加；空2 两个缓冲区都 zero_()，atomic_add 会累加旧值；"
     "空3 sumsqs/N − mean²，host 上合成方差。"),
    ("fused_mean_var_atomic", ["tl.sum(values * values, axis=0)", "sumsqs / N - mean * mean", "sums.zero_()\nsumsqs.zero_()"],
     "空1 本块 Σx²，线性；空2 清零，防止累加上次的值；空3 E[x²]−mean²。"),
    ("welford_merge", ["tl.sum(tl.where(mask, 1.0, 0.0), axis=0)",
                       "tl.sum(tl.where(mask, (values - mean_b) * (values - mean_b), 0.0), axis=0)",
                       "delta * delta * n * n_b / (n + n_b)"],
     "空1 有效 lane 个数，最后一块不满，不能用 BLOCK；空2 块内两遍，padding 要 where 掉；空3 块间项 delta²·n·n_b/(n+n_b)，均值不同。"),
    ("lesson06_mean_var", ["cols < N"], "mask，防止 padding 的 mean² 加进第二次求和。"),
]


@pytest.mark.parametrize(("exercise", "fills", "answer"), TERSE)
def test_a_terse_account_of_the_blanks_is_no_keyword_list(exercise, fills, answer):
    result = _scored(exercise, "explanation", answer, fills=fills)
    assert "keyword_stuffing" not in result.flags and result.points >= 0.5, (result.flags, result.points)


@pytest.mark.parametrize(("exercise", "question", "answer"), [
    ("lesson06_mean_var", "explanation", "空1：tl.where、mask、-mean、mean²、重新 mask、单位元、(BLOCK − N)μ²"),
    ("lesson06_mean_var", "explanation", "mask，防止，padding，mean²，-mean，tl.where，re-mask"),
    ("lesson06_mean_var", "q2", "空1 other=0.0，单位元；空2 −μ，μ²；空3 (BLOCK − N)μ²，tl.where，重新 mask"),
    ("lesson05_row_sum", "explanation", "stride, view, positional mask, OOB protection, additive identity, (BLOCK-N)*other"),
])
def test_keyword_lists_with_blank_markers_or_a_bare_purpose_word_are_still_stuffing(exercise, question, answer):
    result = _scored(exercise, question, answer)
    assert "keyword_stuffing" in result.flags, (result.flags, result.points)
