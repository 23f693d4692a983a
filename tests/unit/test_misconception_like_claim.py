"""A clause close to a misconception's label by similarity must hold the label's claim (skips, 跳过,
unnecessary), not only its code words (tl.sum, mask, lane, load, store), which every answer on the
topic names. Written from lesson 6's explanation and the outer-add puzzle's Q1 with their reference
answers, not from the calibration set: both correct answers were flagged as the misconception."""
from __future__ import annotations

import pytest

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from service.grading.freetext import score_answer

CATALOG = ExerciseCatalog(REPO_ROOT / "exercises")

CORRECT = [
    ("lesson06_mean_var", "explanation",
     "I filled the blank with `mask` (the same cols < N mask used in the load). After subtracting the mean, the "
     "padding lanes hold 0 - mean = -mean, and squaring gives mean^2, which is not zero. Re-applying the mask with "
     "tl.where sets those lanes back to 0 before the second tl.sum, so only the N real elements contribute to the "
     "variance."),
    ("puzzle_outer_add", "q1",
     "因为输出是二维的，两个方向都要分块，所以用二维 grid，每个 program 算一个 B1×B0 的 tile。当 N0、N1 不是块大小的整数倍时，"
     "最后一列块里 i ≥ N0 的位置、最后一行块里 j ≥ N1 的位置都越界。只在 load 时加 mask 不够：load 的 mask 只保证读到的 x、y "
     "合法，store 时越界的 (j, i) 仍然会被写出去；i ≥ N0 时地址 j*N0 + i 会写到下一行的开头，覆盖正确结果，j ≥ N1 时会写到 z "
     "之外。所以 store 的 mask 必须同时包含两个方向。"),
]


@pytest.mark.parametrize(("exercise", "qid", "answer"), CORRECT)
def test_code_words_alone_are_not_the_misconception(exercise: str, qid: str, answer: str) -> None:
    lesson = CATALOG.get(exercise)
    result = score_answer(lesson.question(qid), answer, 2.0, course_text=lesson.spec.course_text)
    assert result.suspected == [] and "suspected_misconception" not in result.flags


def test_the_claim_in_other_words_is_still_suspected() -> None:
    lesson = CATALOG.get("lesson06_mean_var")
    result = score_answer(lesson.question("explanation"), "I think tl.sum skips lanes that are masked.", 1.0,
                          course_text=lesson.spec.course_text)
    found = {m["misconception"] for m in result.misconceptions} | {s.get("misconception") for s in result.suspected}
    assert "sum_skips_masked" in found


def test_a_supposition_whose_consequence_follows_is_not_the_misconception() -> None:
    lesson = CATALOG.get("lesson05_row_sum")
    answer = ("tl.sum 不会跳过 padding lane，所以 other 必须是单位元：求和填 0，求最大值填 −inf。如果求和时填 1，每个 padding lane "
              "多加 1，结果偏大 (BLOCK − N)；如果求最大值时填 0，一行全是负数时最大值会变成 0。")
    result = score_answer(lesson.question("q2"), answer, 2.0, course_text=lesson.spec.course_text)
    assert result.suspected == [] and result.misconceptions == []


@pytest.mark.parametrize("answer", ["如果是求最大值，padding 也填 0 就可以。", "求最大值时 padding 也填 0。"])
def test_the_stated_max_zero_is_still_found(answer: str) -> None:
    lesson = CATALOG.get("lesson05_row_sum")
    result = score_answer(lesson.question("q2"), answer, 2.0, course_text=lesson.spec.course_text)
    found = {m["misconception"] for m in result.misconceptions} | {s.get("misconception") for s in result.suspected}
    assert "max_zero" in found


@pytest.mark.parametrize(("qid", "answer"), [
    ("explanation", "n_b counts the lanes where mask is true, so the last, partial block counts only its real elements "
                    "(N - start), not BLOCK."),
    ("q3", "The last block only has N - start real elements. n_b must be that count (the sum of the mask), otherwise "
           "mean_b is divided by BLOCK and comes out too small."),
])
def test_a_restriction_is_not_the_claim_about_every_chunk(qid: str, answer: str) -> None:
    # block_count: "every chunk can be counted as BLOCK elements"; "only N − start" says the opposite.
    lesson = CATALOG.get("welford_merge")
    result = score_answer(lesson.question(qid), answer, 2.0, course_text=lesson.spec.course_text)
    assert result.suspected == [] and result.misconceptions == []
