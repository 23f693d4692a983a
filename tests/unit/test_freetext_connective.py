"""Keyword bags strung with causal connectives (issue 15 item 6, branch `misc11`): "Because catastrophic
cancellation, so Welford. Because float32 7 significant digits, so tolerance 1e-2. …" holds a linking word in
every step, so the list readings took it for a terse chain or for prose and it scored full points. Read with the
connective that opens each step taken away, it is a list of names (freetext._connective_bag). Honest answers
told with the same connectives relate something in each step and stay unflagged. Written for this change from
the exercises' questions, rubrics and seeds, in zh and en; not from the calibration set."""
from __future__ import annotations

import pytest

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from service.grading import freetext
from service.grading.freetext import TextScore, score_answer

CATALOG = ExerciseCatalog(REPO_ROOT / "exercises")


def _scored(exercise: str, question: str, answer: str) -> tuple[TextScore, float]:
    ex = CATALOG.get(exercise)
    points = next(item.points for item in ex.spec.rubric if item.source == "text" and item.question == question)
    return score_answer(ex.question(question), answer, points, course_text=ex.spec.course_text), points


BAGS = [
    ("fused_mean_var_atomic", "q3", "因为灾难性抵消，所以 Welford。因为 float32 7 位有效数字，所以容差 atol=1e-2。因为大均值小方差，"
                                    "所以 trade-off。"),
    ("fused_mean_var_atomic", "q3", "Because catastrophic cancellation, so Welford. Because float32 7 significant digits, "
                                    "so tolerance atol = rtol = 1e-2. Because large mean small variance, so trade-off."),
    ("fused_mean_var_atomic", "q3", "Large mean and small variance, so catastrophic cancellation, because float32 has 7 "
                                    "digits, therefore tolerance 1e-2, hence Welford, so a trade-off."),
    ("fused_mean_var_atomic", "q1", "因为方差非线性，所以 Σx、Σx² 线性，所以 atomic_add，因此 host 合并，因为块间项。"),
    ("fused_mean_var_atomic", "q1", "Because nonlinear variance, so linear Σx and Σx², so atomic_add, therefore host "
                                    "combine, because between-block term."),
    ("lesson06_mean_var", "q2", "因为 other=0.0 单位元，所以 −μ，所以 μ²，因此 (BLOCK−N)μ²，所以 tl.where 重新 mask。"),
    ("lesson06_mean_var", "q2", "Because identity element other=0.0, so -mu, so mu^2, therefore (BLOCK-N)*mu^2, so "
                                "re-mask with tl.where."),
    ("lesson06_mean_var", "q3", "Because E[x^2] - E[x]^2, so catastrophic cancellation, so two-pass, therefore float64, "
                                "so Welford, because Chan merge."),
    ("puzzle_long_sum", "q1", "因为 B1 < T，所以 for 循环，所以 cdiv(T, B1)，因此越界，所以下一行，所以 mask cols < T，因为 other=0.0。"),
    ("puzzle_long_sum", "q1", "Because B1 < T, so for loop, so cdiv(T, B1), therefore out of bounds, so next row, so "
                              "mask cols < T, because other=0.0."),
    ("welford_merge", "q2", "Because own mean, so means differ, so delta^2 term, therefore n_a*n_b/(n_a+n_b) weight, "
                            "so variance too small."),
]

HONEST = [
    ("fused_mean_var_atomic", "q3", "因为均值很大、方差很小，E[x²] 和 mean² 是两个差不多大的数，所以相减会灾难性抵消；因为 float32 "
                                    "只有 7 位有效数字，所以结果只剩舍入误差；因此文章把容差放到 atol = rtol = 1e-2，数据接近常数时改用 "
                                    "Welford。"),
    ("fused_mean_var_atomic", "q3", "Because the mean is huge and the spread tiny, E[x^2] and mean^2 are nearly equal, so "
                                    "subtracting them cancels catastrophically. Since fp32 keeps 7 digits, the result is "
                                    "mostly rounding. So the article uses atol = rtol = 1e-2 and suggests Welford for "
                                    "near-constant data."),
    ("lesson06_mean_var", "q2", "因为 other=0.0 只对第一次求和是单位元，所以减均值后 padding 变成 −μ，所以平方后是 μ²，因此第二次"
                                "求和多了 (BLOCK−N)·μ²，所以要用 tl.where 重新 mask。"),
    ("lesson06_mean_var", "q2", "Because 0.0 is only the identity of the first sum, so after centring the pads become -mu, "
                                "so squaring gives mu^2, therefore the second sum gains (BLOCK-N)*mu^2, so we re-mask "
                                "with tl.where."),
    ("puzzle_long_sum", "q1", "因为 B1 < T，一个块装不下一行，所以要循环；循环 cdiv(T, B1) 次，因为要向上取整；最后一块越界会读到"
                              "下一行的数，所以行和错了，因此要用 cols < T 的 mask，other=0.0。"),
    ("puzzle_long_sum", "q1", "Because B1 < T a block can't hold a row, so we loop cdiv(T, B1) times. Since the last "
                              "block runs past the row it reads the next row's values, so the sum is wrong; therefore "
                              "mask with cols < T and other=0.0."),
    ("welford_merge", "q2", "因为 M2_a、M2_b 是各自相对自己的均值算的，所以两块均值不同时每个元素离新均值更远，因此要加 "
                            "delta²·n_a·n_b/(n_a+n_b)，所以不加的话方差偏小。"),
    ("fused_mean_var_atomic", "q2", "因为 atomic_add 是在原值上累加，所以不清零的话上次的和还在，所以第二次 Σx 翻倍，因此每次 launch "
                                    "前 sums 和 sumsqs 都要清零；第一次能过是因为 buffer 刚好是 0。"),
]


@pytest.mark.parametrize(("exercise", "question", "answer"), BAGS)
def test_a_bag_strung_with_connectives_is_keyword_stuffing(exercise: str, question: str, answer: str) -> None:
    result, points = _scored(exercise, question, answer)
    assert "keyword_stuffing" in result.flags, answer
    assert result.points <= 0.25 * points, answer


@pytest.mark.parametrize(("exercise", "question", "answer"), HONEST)
def test_an_honest_chain_told_with_connectives_stays_prose(exercise: str, question: str, answer: str) -> None:
    result, points = _scored(exercise, question, answer)
    assert "keyword_stuffing" not in result.flags, answer
    assert result.points == points, answer


def test_the_bag_reading_takes_the_opening_connective_away() -> None:
    assert freetext._connective_bag(freetext._Text.of(BAGS[1][2]))
    assert not freetext._connective_bag(freetext._Text.of(HONEST[1][2]))
    # fewer than five steps: too short to call a list
    assert not freetext._connective_bag(freetext._Text.of("Because cancellation, so Welford, so tolerance."))
    # five bare steps, but fewer than half opened by a connective: the list readings' business, not this one's
    assert not freetext._connective_bag(freetext._Text.of("cancellation, Welford, tolerance, fp32, so trade-off"))


def test_an_exponent_is_part_of_its_term() -> None:
    assert freetext._step_points("mu^2") == 0.0
    assert freetext._step_points("(block-n)*mu**2") == 0.0
    assert freetext._step_points("fp32 ulp 8") == 0.5


def test_the_switch_restores_the_old_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(freetext, "CONNECTIVE_BAG_POINTS", None)
    result, points = _scored(*BAGS[1])
    assert "keyword_stuffing" not in result.flags
    assert result.points == points
