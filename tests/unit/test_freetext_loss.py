"""What a statement loses, said after it in its clause, is its failure (freetext.LOSS_AFTER, review of 5bb6af0:
loss words were in the clause check and, by hand, in one add_variances pattern's lookahead; now one list,
_LOSS_WORDS, read by both paths). Written for this change from the questions' labels, in zh and en; not from
the calibration set.

- A pattern's match followed in its clause by a loss word ("adding the chunk variances omits the spread of the
  chunk means", "方差直接相加忽略了块间均值差那一项") explains why it is wrong: no misconception.
- A misconception stated, with a loss word in another clause (after ';', '；', 'but'), negated ("nothing is
  lost", "不会漏掉"), told as a later step or in the passive, or restating the match's own omission ("修正项可以
  忽略，忽略它…"), is still the misconception."""
from __future__ import annotations

import pytest

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from service.grading import freetext
from service.grading.freetext import score_answer

CATALOG = ExerciseCatalog(REPO_ROOT / "exercises")


def _stated(exercise: str, question: str, text: str) -> set[str]:
    """The misconceptions flagged: a pattern's or a clause's, or one like a label (misconception_like)."""
    result = score_answer(CATALOG.get(exercise).question(question), text, 2.0)
    return {m["misconception"] for m in result.misconceptions} | \
        {s["misconception"] for s in result.suspected if s.get("kind") == "misconception_like"}


# a pattern matches each; the loss word after it, in its clause, states the failure
LOSS_STATES_THE_FAILURE = [
    ("fused_mean_var_atomic", "q1", "Adding the chunk variances omits the spread of the chunk means."),
    ("fused_mean_var_atomic", "q1", "Summing the per-block variances leaves the between-block term out."),
    ("fused_mean_var_atomic", "q1", "Adding the local variances forgets the difference between the block means."),
    ("fused_mean_var_atomic", "q1", "方差直接相加忽略了块间均值差那一项。"),
    ("fused_mean_var_atomic", "q1", "方差直接相加就把块间均值差那一项丢了。"),
    ("fused_mean_var_atomic", "q1", "方差直接相加少了块间均值差那一项。"),
    ("fused_mean_var_atomic", "q1", "各块方差直接累加缺了块间那一项。"),
    ("welford_merge", "q2", "The merged M2 is simply the sum of the two M2 values, which leaves the delta² term out."),
]


@pytest.mark.parametrize(("exercise", "question", "text"), LOSS_STATES_THE_FAILURE)
def test_a_loss_word_after_the_match_states_the_failure(exercise, question, text):
    assert not _stated(exercise, question, text)


@pytest.mark.parametrize(("exercise", "question", "text"), LOSS_STATES_THE_FAILURE)
def test_switched_off_the_match_is_the_misconception(monkeypatch, exercise, question, text):
    monkeypatch.setattr(freetext, "LOSS_AFTER", False)
    assert _stated(exercise, question, text)


@pytest.mark.parametrize(("exercise", "question", "misconception", "text"), [
    # the loss word in another clause
    ("fused_mean_var_atomic", "q1", "add_variances",
     "Adding the per-block variances gives the total variance; the mask leaves the padding lanes out."),
    ("fused_mean_var_atomic", "q1", "add_variances",
     "You can just add the block variances; the masked lanes are ignored by tl.where."),
    ("fused_mean_var_atomic", "q1", "add_variances", "把各块方差加起来就是整体方差；mask 已经把越界的 lane 丢掉了。"),
    ("welford_merge", "q2", "m2_just_add",
     "Merging is just adding the two M2s; the padding lanes are left out by the mask."),
    # negated
    ("fused_mean_var_atomic", "q1", "add_variances",
     "Summing the per-block variances gives the total variance, and nothing is lost."),
    ("fused_mean_var_atomic", "q1", "add_variances", "方差可以直接相加，不会漏掉任何东西。"),
    ("welford_merge", "q2", "m2_just_add", "两个 m2 直接相加就是合并后的 M2，不会丢任何信息。"),
    # a later step or the passive: what the stated mechanism does
    ("fused_mean_var_atomic", "q1", "add_variances",
     "Each program can atomic_add its block variance; then the padding lanes are dropped."),
    ("lesson05_row_sum", "q2", "masked_lane_allocates", "masked lane 仍然从显存加载，然后再丢掉"),
    ("lesson05_row_sum", "q1", "masked_lane_allocates", "lane 3 的 load 照样发出去，只是值被丢掉"),
    # the match leaves the term out itself: the loss after it restates the choice
    ("welford_merge", "q2", "m2_just_add", "修正项可以忽略，忽略它几乎不影响结果。"),
    ("welford_merge", "q2", "m2_just_add", "The correction can be omitted, omitting it barely changes the result."),
])
def test_a_loss_word_elsewhere_leaves_the_misconception_stated(exercise, question, misconception, text):
    assert misconception in _stated(exercise, question, text)


def test_one_list_of_loss_words_for_both_paths():
    # the clause check denies a clause for the words _loses_after reads after a match
    for word in ("leaves that term out", "omits", "forgets", "overlooks", "漏掉", "忽略", "少了", "不计"):
        assert freetext._LOSES.search(word) and freetext._CLAUSE_DENIES.search(word), word
    # and no pattern of add_variances lists them by hand again (5bb6af0's lookahead)
    add_variances = next(wrong for wrong in CATALOG.get("fused_mean_var_atomic").question("q1").misconceptions
                         if wrong.id == "add_variances")
    assert not any(word in pattern for pattern in add_variances.patterns for word in ("omit", "overlook", "forg"))
