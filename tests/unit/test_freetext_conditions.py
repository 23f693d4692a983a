"""A condition read to its end (branch `recall9`, issue 15 item 6): `freetext._conditional` looked for a
conditional word in the ten characters before a match only, so a long condition ("如果把每一行的平方和按样本方差
那样除以 N − 1，…") was read as a statement, and a formula in a supposition's consequence ("如果不开根号，var 就是
…") as the fill. Answers written for these tests, not taken from the calibration set."""
from __future__ import annotations

import pytest

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from service.grading import freetext
from service.grading.freetext import NOT_THE_FILL, _in_condition, _in_supposition, _sentences, score_answer
from tests.unit.test_describes_concepts import _explain, _mutant

CATALOG = ExerciseCatalog(REPO_ROOT / "exercises")


def _at(text: str, word: str) -> tuple[str, int, list[tuple[int, int]]]:
    return text, text.index(word), _sentences(text)


IN_THE_CONDITION = [
    ("如果第二次求和之前没有用 tl.where 把 padding lane 重新置零，方差会偏大。", "padding"),
    ("假如 BLOCK 比 N 大很多而且 other 填的是 0.0，那么均值还是对的。", "other"),
    ("若每个 program 都把自己那一块的方差直接 atomic_add 进去，结果不对。", "atomic_add"),
    ("要是旧的 sum 在最大值变大以后没有乘上那个因子，就会偏大。", "因子"),
    ("If the padding lanes that the load filled with zeros are summed after centring, the variance grows.", "summed"),
    ("When the running maximum of the row grows in a later block, the old sum is rescaled.", "block"),
    ("Suppose the last block of every row runs past T without any mask then the sum is wrong.", "mask"),
]


@pytest.mark.parametrize(("text", "word"), IN_THE_CONDITION)
def test_a_match_far_into_a_condition_is_in_it(text, word):
    assert _in_condition(*_at(text, word))


IN_THE_CONSEQUENCE = [
    ("如果第二次求和之前没有重新 mask，padding lane 会变成 −mean。", "padding"),
    ("如果 BLOCK 比 N 大就会有 padding lane。", "padding"),
    ("假如 other 填 0.0 则均值是对的。", "均值"),
    ("If the pads are not masked again, the variance grows.", "variance"),
    ("If the pads are not masked again then the variance grows.", "variance"),
    ("若干个 program 把各自的 Σx atomic_add 到同一个位置。", "atomic_add"),  # 若干 (several) supposes nothing
    ("The padding lanes join the second sum. If they were masked it would be fine.", "padding"),
]


@pytest.mark.parametrize(("text", "word"), IN_THE_CONSEQUENCE)
def test_a_match_after_the_condition_or_outside_it_is_not_in_it(text, word):
    assert not _in_condition(*_at(text, word))


def test_a_supposition_holds_its_consequence_but_a_when_clause_does_not():
    assert _in_supposition(*_at("如果不开根号，var 就是 sumsqs / N - mean * mean。", "sumsqs"))
    assert _in_supposition(*_at("If I took no square root, var would be sumsqs / N - mean * mean.", "sumsqs"))
    assert not _in_supposition(*_at("When the buffers are reused, var is sumsqs / N - mean * mean.", "sumsqs"))
    assert not _in_supposition(*_at("我开了根号。var 就是 sumsqs / N - mean * mean。", "sumsqs"))


def _scored(exercise: str, question: str, answer: str) -> freetext.TextScore:
    ex = CATALOG.get(exercise)
    points = next(i.points for i in ex.spec.rubric if i.source == "text" and i.question == question)
    return score_answer(ex.question(question), answer, points, course_text=ex.spec.course_text)


BESSEL_SUPPOSED = [
    "如果把每一行的平方和按样本方差那样除以 N − 1，结果就和测试的 torch.var(unbiased=False) 对不上，所以除以 N。",
    "If the kernel divided the sum of squares by N - 1 like the sample variance, it would not match the check, "
    "so we divide by N.",
]


@pytest.mark.parametrize("answer", BESSEL_SUPPOSED)
def test_a_misconception_far_into_a_condition_is_supposed_not_stated(answer, monkeypatch):
    assert _scored("lesson06_mean_var", "q1", answer).misconceptions == []
    monkeypatch.setattr(freetext, "CONDITION_WHOLE_CLAUSE", False)  # ten characters back: read as stated
    assert [m["misconception"] for m in _scored("lesson06_mean_var", "q1", answer).misconceptions] == ["bessel"]


def test_a_misconception_stated_outright_is_still_found():
    result = _scored("lesson06_mean_var", "q1", "方差要除以 N − 1，这是无偏估计。")
    assert [m["misconception"] for m in result.misconceptions] == ["bessel"]


SUPPOSED_FORMULA = [
    "如果不开根号，var 就是 sumsqs / N - mean * mean，我开了根号。",
    "If I did not take the square root, var would be sumsqs / N - mean * mean; I take it.",
]


@pytest.mark.parametrize("answer", SUPPOSED_FORMULA)
def test_a_formula_in_a_suppositions_consequence_is_not_given_as_the_fill(answer, monkeypatch):
    mutant = _mutant("fused_mean_var_atomic", "wrong.std_not_var")
    assert NOT_THE_FILL not in _explain("fused_mean_var_atomic", answer, mutant).flags
    monkeypatch.setattr(freetext, "CONDITION_WHOLE_CLAUSE", False)
    assert NOT_THE_FILL in _explain("fused_mean_var_atomic", answer, mutant).flags


def test_the_formula_given_plainly_over_the_square_root_is_still_another_fill():
    mutant = _mutant("fused_mean_var_atomic", "wrong.std_not_var")
    assert NOT_THE_FILL in _explain("fused_mean_var_atomic", "var 就是 sumsqs / N - mean * mean。", mutant).flags


# A concept told as a negative value ("the padding lanes become −μ") is not said by the subtraction that
# centres every lane ("(x − mean)²"): the minus after an operand subtracts (SUBTRACTION_NOT_NEGATIVE).
CENTRING_ONLY = [
    "先算 diff = x - mean，再 tl.sum(diff * diff) / N，最后用 tl.where 把它包一下。",
    "The kernel computes (values - mean)^2 over the row, then tl.where and a second tl.sum.",
    "方差是 (x_i − μ)² 的平均，第二次 tl.sum 前用 tl.where。",
]


@pytest.mark.parametrize("answer", CENTRING_ONLY)
def test_the_centring_subtraction_does_not_say_the_pads_become_minus_mean(answer, monkeypatch):
    assert "padding_neg_mean" not in [f["concept"] for f in _scored("lesson06_mean_var", "q2", answer).found]
    monkeypatch.setattr(freetext, "SUBTRACTION_NOT_NEGATIVE", False)
    assert "padding_neg_mean" in [f["concept"] for f in _scored("lesson06_mean_var", "q2", answer).found]


NEGATIVE_SAID = [
    "padding lane 是 0，0 − mean = −mean，平方后 mean²，所以要 tl.where 重新 mask。",
    "The pads hold 0, so x - mean gives -mean there; squared it is mean^2, so mask again with tl.where.",
    "A pad is - mean after centring, so it is -mu; squared mu^2; re-mask.",
    "pads: x_i - mu for x_i = 0 is -mu, squared mu^2, so re-mask",
    "centred, a pad becomes 0 - mu = -mu; squared mu^2; re-mask.",
]


@pytest.mark.parametrize("answer", NEGATIVE_SAID)
def test_the_pads_said_to_become_minus_mean_keep_it(answer):
    result = _scored("lesson06_mean_var", "q2", answer)
    assert "padding_neg_mean" in [f["concept"] for f in result.found]
    assert ("padding_neg_mean", "mean_squared") in [(k["from"], k["to"]) for k in result.links]


def test_a_subtraction_that_is_the_concept_is_kept():
    # lesson 7's subtract_max is the subtraction itself ("subtract the row max"): "x - max" states it
    result = _scored("lesson07_softmax", "explanation", "I fill in x - max before the exp, so no exponent is "
                                                        "above 0 and exp cannot overflow.")
    assert "subtract_max" in [f["concept"] for f in result.found]


# A call one concept reads whole is that concept's: Welford's n_b counted with tl.where(mask, 1.0, 0.0)
# re-masks nothing (WIDER_MATCH_CLAIMS).
COUNT_ONLY = [
    "最后一块只有 N − start 个有效元素，n_b 要用 tl.sum(tl.where(mask, 1.0, 0.0)) 数出来，不能写 BLOCK，"
    "否则 mean_b 被拉小。",
    "In the last chunk only N - start lanes are real, so n_b = tl.sum(tl.where(mask, 1.0, 0.0)) rather than "
    "BLOCK; with BLOCK the chunk mean comes out too small.",
]


@pytest.mark.parametrize("answer", COUNT_ONLY)
def test_a_count_with_tl_where_is_no_remask(answer, monkeypatch):
    found = [f["concept"] for f in _scored("welford_merge", "q3", answer).found]
    assert "valid_count" in found and "remask" not in found, found
    monkeypatch.setattr(freetext, "WIDER_MATCH_CLAIMS", False)
    assert "remask" in [f["concept"] for f in _scored("welford_merge", "q3", answer).found]


def test_a_remask_beside_the_count_is_still_a_remask():
    answer = ("n_b = tl.sum(tl.where(mask, 1.0, 0.0)), not BLOCK. For M2_b the pads become −mean_b after "
              "centring, so tl.where(mask, diff * diff, 0.0) zeroes them before the sum.")
    found = [f["concept"] for f in _scored("welford_merge", "q3", answer).found]
    assert {"valid_count", "remask", "padding_mean_sq"} <= set(found), found
