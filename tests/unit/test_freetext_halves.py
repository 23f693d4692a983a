"""Issue 15 item 6, branch `recallC`: a misconception in one half of a two-part answer leaves the other half
some credit (MISCONCEPTION_UNIT), a short answer that states half or less of what is asked earns at most
half the points (SHORT_UNSAID), and a right derivation is not the turned-around factor (ORDER_CLAIM). All
three are off (together they lost held-out answers, docs/grading.md "Calibration"): these probes switch
each on and check it does what it says. New answers written for these probes, not the calibration set's."""
from __future__ import annotations

import pytest

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from service.grading import freetext
from service.grading.freetext import score_answer

CATALOG = ExerciseCatalog(REPO_ROOT / "exercises")


def _score(exercise_id: str, question: str, answer: str) -> freetext.TextScore:
    exercise = CATALOG.get(exercise_id)
    points = next(i.points for i in exercise.spec.rubric if i.question == question)
    return score_answer(exercise.question(question), answer, points, course_text=exercise.spec.course_text)


# welford Q3: the count half wrong (n_b = BLOCK), the re-mask half right, in separate sentences
HALF_WRONG = ("n_b 用 BLOCK 就行，padding 读进来是 0，不影响 tl.sum，块均值不会错。"
              "M2_b 那边必须用 tl.where 重新 mask，因为减去 mean_b 以后 padding lane 变成 −mean_b，平方后会加进 M2_b。")


def test_a_misconception_in_one_half_leaves_the_other_half_half_a_point(monkeypatch):
    monkeypatch.setattr(freetext, "MISCONCEPTION_UNIT", 0.2)
    result = _score("welford_merge", "q3", HALF_WRONG)
    assert "misconception" in result.flags and result.points == 0.5
    monkeypatch.setattr(freetext, "MISCONCEPTION_UNIT", None)
    assert _score("welford_merge", "q3", HALF_WRONG).points == 0.0


def test_a_misconception_alone_still_scores_nothing(monkeypatch):
    monkeypatch.setattr(freetext, "MISCONCEPTION_UNIT", 0.2)
    result = _score("welford_merge", "q3", "n_b 用 BLOCK 就行，padding 读进来是 0，不影响 tl.sum，块均值不会错。")
    assert "misconception" in result.flags and result.points == 0.0


# fused Q1: nonlinear and linear told and linked, no between term, no host combine: half the question
SHORT_HALF = "方差不是线性的，Var(A∪B) ≠ Var(A)+Var(B)，所以不能 atomic_add 方差；Σx 和 Σx² 是线性的，所以可以直接 atomic_add。"


def test_a_short_answer_stating_half_of_what_is_asked_earns_at_most_half(monkeypatch):
    monkeypatch.setattr(freetext, "SHORT_UNSAID", 0.5)
    assert _score("fused_mean_var_atomic", "q1", SHORT_HALF).points <= 1.0
    monkeypatch.setattr(freetext, "SHORT_UNSAID", None)
    assert _score("fused_mean_var_atomic", "q1", SHORT_HALF).points > 1.0


@pytest.mark.parametrize("answer", [
    "pad 0 → x−μ = −μ → μ² ≠ 0 → re-mask with tl.where",
    "padding 读成 0 → 减均值后是 −μ → 平方 μ² 加进方差 → 要用 tl.where 再 mask 一次",
])
def test_terse_complete_chains_keep_their_points(answer, monkeypatch):
    monkeypatch.setattr(freetext, "SHORT_UNSAID", 0.5)
    exercise = CATALOG.get("lesson06_mean_var")
    question = next(q for q in ("q1", "q2") if "mask" in str(exercise.question(q).reference_answer))
    result = _score("lesson06_mean_var", question, answer)
    assert result.points >= 1.5


# Long Softmax Q1: the rescale derived right, read by word similarity as rescale_inverted (ORDER_CLAIM)
DERIVED = ("old sum terms = exp(x − m_old) → the max moves to m_new → each term should now be exp(x − m_new) = "
           "exp(x − m_old)·exp(m_old − m_new) → so the whole old sum gets multiplied by exp(m_old − m_new) before "
           "adding the new block.")


def test_a_right_derivation_is_not_the_turned_around_factor(monkeypatch):
    monkeypatch.setattr(freetext, "ORDER_CLAIM", True)
    result = _score("puzzle_long_softmax", "q1", DERIVED)
    assert not result.flags and result.points >= 1.0
    monkeypatch.setattr(freetext, "ORDER_CLAIM", False)
    assert _score("puzzle_long_softmax", "q1", DERIVED).flags


def test_the_turned_around_factor_is_still_flagged(monkeypatch):
    monkeypatch.setattr(freetext, "ORDER_CLAIM", True)
    result = _score("puzzle_long_softmax", "q1", "m 变大以后旧的 sum 要乘 exp(m_new − m_old)，把它放大到新的尺度。")
    assert result.flags
