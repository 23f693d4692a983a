"""Two consecutive steps of a chain unsaid (issue 15 item 6, branch `misc11`, freetext.CHAIN_GAP): the share rule's
slack (full points from a share of 0.6) forgives a step a terse answer leaves implicit; an answer that tells the ends
of a chain and never the two steps between them has a gap, and earned full points where readers take a point off.
Written for this change from the prompts and the rubric's chains; not from the calibration set."""
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


# lesson 6 Q1's chain: masked_load, mean_over_n, padding_neg_mean, mean_squared, remask, output_store
STAGES_WITHOUT_THE_MIDDLE = (
    "Input: each program loads one row with mask = cols < N and other = 0, so the lanes past N read 0. State: the mean "
    "is tl.sum(x) / N, then the variance sums (x - mean)^2 after tl.where(mask, ..., 0.0) and divides by N. Output: "
    "the mean and the variance are stored to means[row] and variances[row].")
STAGES_WHOLE = (
    "Input: each program loads one row with mask = cols < N and other = 0, so the lanes past N read 0. State: the mean "
    "is tl.sum(x) / N; after centring the padding lanes hold 0 - mean = -mean, and squared they give mean^2 each, so "
    "the variance re-masks with tl.where(mask, ..., 0.0) before the second sum and divides by N. Output: the mean and "
    "the variance are stored to means[row] and variances[row].")


def test_the_ends_of_a_chain_without_its_middle_lose_a_point() -> None:
    result, points = _scored("lesson06_mean_var", "q1", STAGES_WITHOUT_THE_MIDDLE)
    assert {"padding_neg_mean", "mean_squared"} <= {m["concept"] for m in result.missing}
    assert result.points == points - 1.0


def test_the_whole_chain_keeps_full_points() -> None:
    result, points = _scored("lesson06_mean_var", "q1", STAGES_WHOLE)
    assert result.points == points


def test_one_step_implicit_is_no_gap() -> None:
    # lesson 6 Q2 told tersely: identity_first_sum and excess unsaid, not neighbours in the chain
    result, points = _scored("lesson06_mean_var", "q2", "pad 0 → x−μ = −μ → μ² ≠ 0 → re-mask with tl.where")
    assert result.points == points


def test_a_chains_tail_left_off_is_no_gap(monkeypatch: pytest.MonkeyPatch) -> None:
    # lesson 6 Q2 told up to mean^2: excess and remask, the chain's last two steps, left to the reader
    answer = "0.0 is the identity only for the first sum; once centred the pads hold -mean, and squared each one is mean^2."
    result, _ = _scored("lesson06_mean_var", "q2", answer)
    assert {"excess", "remask"} <= {m["concept"] for m in result.missing}
    monkeypatch.setattr(freetext, "CHAIN_GAP", None)
    assert _scored("lesson06_mean_var", "q2", answer)[0].points == result.points


def test_the_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(freetext, "CHAIN_GAP", None)
    result, points = _scored("lesson06_mean_var", "q1", STAGES_WITHOUT_THE_MIDDLE)
    assert result.points > points - 1.0
