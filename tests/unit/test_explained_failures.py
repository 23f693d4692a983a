"""An answer that says what goes wrong when one does the wrong thing ("adding chunk variances drops the
between-chunk term", "n_b 用 BLOCK 时均值和方差都偏小"), or forbids it ("不能用 BLOCK"), is explaining
the failure the question asks about, not stating the misconception. Written from the questions
("为什么不能…", "做错了会怎样？"), their reference answers and the seeds, not from the calibration set:
each was flagged and the correct kernel vetoed as a coincidental pass."""
from __future__ import annotations

import pytest

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from service.grading.freetext import score_answer

CATALOG = ExerciseCatalog(REPO_ROOT / "exercises")

HONEST = [
    ("fused_mean_var_atomic", "q1",
     "Sums and sums of squares are linear: the row total is just the sum of the chunk totals, in any order, so "
     "atomic_add of partial sums gives exactly Σx and Σx². A variance is not linear. Each chunk's variance is "
     "measured around that chunk's own mean, so adding chunk variances drops the between-chunk term (the spread "
     "of chunk means around the row mean), which is what Chan's formula adds back with delta^2 * n_a * n_b / n. "
     "Adding per-program variances therefore underestimates the variance."),
    ("welford_merge", "q3",
     "n_b 必须是真实元素个数（用 mask 数），不能用 BLOCK，否则均值除错，权重也错；M2_b 要把 padding lane 重新 mask 掉，"
     "因为它们减去 mean_b 后是 −mean_b，平方后 mean_b² 不为 0。做错了：n_b 用 BLOCK 时均值和方差都偏小；M2_b 不 mask 时方差偏大。"),
    # an honest report of one's own bug and the failed check it caused
    ("welford_merge", "q3",
     "最后一块不满 BLOCK，n_b 应该是实际元素个数；M2_b 要把 padding 重新 mask。我的代码 n_b 用了 BLOCK，所以 N=100 那一组没过。"),
]

STATED = [
    ("fused_mean_var_atomic", "q1", "add_variances", "Adding the per-program variances gives the total variance."),
    ("fused_mean_var_atomic", "q1", "add_variances", "每个 program 算出方差再 atomic_add 加起来就得到总方差。"),
    ("welford_merge", "q3", "block_count", "n_b 用 BLOCK 就行，最后一块也一样。"),
]


@pytest.mark.parametrize(("exercise", "qid", "answer"), HONEST)
def test_an_explained_failure_is_not_the_misconception(exercise: str, qid: str, answer: str) -> None:
    lesson = CATALOG.get(exercise)
    result = score_answer(lesson.question(qid), answer, 2.0, course_text=lesson.spec.course_text)
    assert result.misconceptions == [] and result.suspected == []
    assert "misconception" not in result.flags and "suspected_misconception" not in result.flags


@pytest.mark.parametrize(("exercise", "qid", "wrong", "answer"), STATED)
def test_the_misconception_stated_is_still_found(exercise: str, qid: str, wrong: str, answer: str) -> None:
    lesson = CATALOG.get(exercise)
    result = score_answer(lesson.question(qid), answer, 2.0, course_text=lesson.spec.course_text)
    assert wrong in {m["misconception"] for m in result.misconceptions} | {s.get("misconception") for s in result.suspected}


@pytest.mark.parametrize(("exercise", "qid", "answer"), [
    # "changes nothing" is a negation: not "subtracting the max changes the result".
    ("lesson07_softmax", "q1",
     "Softmax is shift invariant: softmax(x) = softmax(x - c), since exp(-c) cancels between numerator and "
     "denominator. So subtracting the row max changes nothing mathematically, but then every exponent is <= 0 and "
     "the largest term is exp(0) = 1, which means the denominator is at least 1: no overflow and no 0/0."),
    # the 0 here is exp(−inf), not the padding value.
    ("puzzle_long_softmax", "q1",
     "之前累加的项是 exp(x − m_old)，换成新的最大值后应该是 exp(x − m_new) = exp(x − m_old)·exp(m_old − m_new)，所以 sum "
     "要乘 exp(m_old − m_new)。padding lane 读成 −inf，exp 后是 0，不影响 sum；读成 0 的话会给分母多加 exp(−m)，结果偏小。"),
])
def test_a_correct_statement_is_not_the_misconception(exercise: str, qid: str, answer: str) -> None:
    lesson = CATALOG.get(exercise)
    result = score_answer(lesson.question(qid), answer, 2.0, course_text=lesson.spec.course_text)
    assert result.misconceptions == [] and result.suspected == []
