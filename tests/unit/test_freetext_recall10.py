"""Probes of the written-answer scorer, recall10 (issue 15 item 6, 2026-12-05): answers written from the
prompts, reference answers and seeds (not from the calibration set). Each test states a general reading:
a condition whose consequence says the trouble is gone recommends what it names; e to a power is exp of
it; an overestimate said in plain words; the identity called
exact; random garbage blamed where the last call's sums are left."""
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


def _found(result: freetext.TextScore) -> set[str]:
    return {f["concept"] for f in result.found}


def _wrong(result: freetext.TextScore) -> set[str]:
    return {m["misconception"] for m in result.misconceptions}


@pytest.mark.parametrize(("exercise", "question", "answer", "misconception"), [
    ("fused_mean_var_atomic", "q3", "If you add a small epsilon before the subtraction, the cancellation goes away.", "eps_fixes_it"),
    ("fused_mean_var_atomic", "q3", "如果加一个 eps，抵消问题就解决了。", "eps_fixes_it"),
])
def test_a_condition_whose_consequence_says_the_trouble_is_gone_is_stated(exercise, question, answer, misconception):
    assert misconception in _wrong(_scored(exercise, question, answer))


def test_a_condition_that_says_what_goes_wrong_stays_hypothetical():
    result = _scored("fused_mean_var_atomic", "q3",
                     "If you add an eps there, the cancellation is still there: eps only guards a division.")
    assert "eps_fixes_it" not in _wrong(result)


@pytest.mark.parametrize("answer", [
    "例子：一行 [0, 3] 两块。第一块 m = 0，s = e^0 = 1；第二块 m_new = 3，要乘 e^(0−3) ≈ 0.05，s = 0.05 + e^(3−3) = 1.05。",
    "Row [0, 3] in two tiles: s = 1 after tile 1; m_new = 3, so multiply s by e**(0 - 3) = 0.05, then add e**(3 - 3) = 1.",
])
def test_e_to_a_power_reads_as_exp(answer):
    assert "rescale" in _found(_scored("puzzle_long_softmax", "q1", answer))


@pytest.mark.parametrize("answer", [
    "The old sum was computed with the old max; without the factor the earlier terms are too big.",
    "旧的 sum 是按旧最大值算的，不乘的话前面的块就算大了。",
])
def test_an_overestimate_in_plain_words(answer):
    assert "overestimate" in _found(_scored("puzzle_long_softmax", "q1", answer))



@pytest.mark.parametrize(("answer", "stated"), [
    ("Nothing really goes wrong: E[x²] − E[x]² is exact algebra.", True),
    ("The identity is exact in real numbers, but in fp32 the two big terms cancel catastrophically.", False),
    ("In exact arithmetic nothing is lost; in fp32 the subtraction cancels catastrophically.", False),
])
def test_the_identity_called_exact(answer, stated):
    assert ("identity_is_stable" in _wrong(_scored("fused_mean_var_atomic", "q3", answer))) is stated


@pytest.mark.parametrize(("answer", "stated"), [
    ("不清零的话缓冲区里是随机的垃圾值，所以结果是随机的。", True),
    ("Without zeroing, the buffers hold random garbage, so the result is random.", True),
    ("不清零的话缓冲区里还是上一次调用留下来的和，第二次调用就翻倍了。", False),
    ("用 torch.empty 分配的话里面是未初始化的值，所以每次 launch 前都要清零。", False),
])
def test_garbage_blamed_instead_of_the_last_calls_sums(answer, stated):
    assert ("garbage_not_leftover" in _wrong(_scored("fused_mean_var_atomic", "q2", answer))) is stated
