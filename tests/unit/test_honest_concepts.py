"""Concepts said the way honest students say them, found by the rubric (exercises/*/questions.yaml):
written from the lessons' questions and the seeds, not from the calibration set. Each answer below is
correct and scored below the pass line before its concept's phrasing was known (上溢 for overflow,
"shifted ≤ 0", English "Sum: 0", "every lane goes into the reduction", "sum the wrong elements")."""
from __future__ import annotations

import pytest

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from service.grading.freetext import score_answer

CATALOG = ExerciseCatalog(REPO_ROOT / "exercises")

SAID = [
    ("lesson07_softmax", "q1", "overflow", "不减最大值的话，logits 约 1000 时 exp(1000) 在 fp32 里上溢成 inf，结果是 nan。"),
    ("lesson07_softmax", "q1", "max_bound", "减去行最大值后 shifted ≤ 0，exp 的值在 0 到 1 之间。"),
    ("lesson05_row_sum", "q2", "sum_zero", "The padding value must be the identity of the operation. Sum: 0. Max: -inf."),
    ("lesson05_row_sum", "q2", "padding_joins", "Every lane goes into the reduction, so the padding must not change it."),
    ("lesson05_row_sum", "q3", "wrong_rows",
     "Using N instead means row r starts at r * N, which lands inside an earlier row of big, so rows 1.. sum the "
     "wrong elements."),
]


@pytest.mark.parametrize(("exercise", "qid", "concept", "answer"), SAID)
def test_the_concept_is_found(exercise: str, qid: str, concept: str, answer: str) -> None:
    lesson = CATALOG.get(exercise)
    result = score_answer(lesson.question(qid), answer, 2.0, course_text=lesson.spec.course_text)
    assert concept in {f["concept"] for f in result.found}


def test_the_english_row_sum_answers_pass() -> None:
    lesson = CATALOG.get("lesson05_row_sum")
    q2 = ("Every lane goes into the reduction, so the padding value must be the identity of the operation or it "
          "changes the result. Sum: 0. Max: -inf. If you used 0 for max, a row of all-negative numbers would return "
          "0, which is wrong; a nonzero pad for sum shifts the total by (BLOCK - N) * pad.")
    assert score_answer(lesson.question("q2"), q2, 2.0, course_text=lesson.spec.course_text).points >= 1.5


@pytest.mark.parametrize(("concept", "answer"), [
    ("between_term", "每块的方差是围绕块内均值计算的，直接相加会丢掉块均值之间的差异项，结果偏小。"),
    ("order_free", "每块的部分和加起来就等于整行的和，atomic_add 的顺序无关。"),
])
def test_fused_q1_phrasings_are_found(concept: str, answer: str) -> None:
    lesson = CATALOG.get("fused_mean_var_atomic")
    result = score_answer(lesson.question("q1"), answer, 2.0, course_text=lesson.spec.course_text)
    assert concept in {f["concept"] for f in result.found}


def test_padding_that_takes_part_in_the_reductions_is_found() -> None:
    lesson = CATALOG.get("lesson07_softmax")
    answer = "Because the padding lanes take part in both tl.max and tl.sum, -inf is the identity for max."
    result = score_answer(lesson.question("q2"), answer, 2.0, course_text=lesson.spec.course_text)
    assert "padding_joins" in {f["concept"] for f in result.found}


@pytest.mark.parametrize(("concept", "answer"), [
    ("valid_count", "n_b 必须是真实元素个数（用 mask 数），不能用 BLOCK，否则均值除错，权重也错。"),
    ("valid_count", "最后一块 n_b 要用实际元素数而不是 BLOCK。"),
    ("count_effect", "n_b 用 BLOCK 的话，均值被摊薄。"),
])
def test_welford_q3_phrasings_are_found(concept: str, answer: str) -> None:
    lesson = CATALOG.get("welford_merge")
    result = score_answer(lesson.question("q3"), answer, 2.0, course_text=lesson.spec.course_text)
    assert concept in {f["concept"] for f in result.found}
