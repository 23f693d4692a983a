"""A belief the student gave up, told by a clause rule of one sentence (issue 15 item 6, branch `misc11`). A
misconception's `clauses:` rule with `sentence: true` reads the whole sentence, so its statement starts where the
sentence does, and the opener that gives the belief up ("My first thought was that …", "我一开始的想法是…") stood
before nothing: a correct fused Q1 that tells its first idea and takes it back was flagged and scored 0.5 of 2.
The statement is now also read as reported from where its terms are said (freetext.REPORTED_FROM_TERMS), and a
first idea told as such is an attribution. Written for this change from the exercise's question and labels; not
from the calibration set."""
from __future__ import annotations

import pytest

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from service.grading import freetext
from service.grading.freetext import TextScore, score_answer

CATALOG = ExerciseCatalog(REPO_ROOT / "exercises")


def _scored(answer: str) -> tuple[TextScore, float]:
    ex = CATALOG.get("fused_mean_var_atomic")
    points = next(item.points for item in ex.spec.rubric if item.source == "text" and item.question == "q1")
    return score_answer(ex.question("q1"), answer, points, course_text=ex.spec.course_text), points


FIRST_IDEA = ("My first thought was that it's about atomics being unordered: if every program atomic_adds its own "
              "variance, the order is random, so the result would be nondeterministic.")
GIVEN_UP = [
    FIRST_IDEA + " That's not actually the problem. Variance is not linear: each chunk's variance is about its own "
                 "mean, so summing them misses the between-chunk term. Σx and Σx² are linear, so atomic_add can sum "
                 "them in any order, and the host computes E[x²] − mean² afterwards.",
    "At first I thought the problem was that atomic_add runs in a random order, so adding the per-program variances "
    "gives a different result every run. That's wrong: addition does not care about order. The variance is not "
    "linear, so per-chunk variances don't add; only Σx and Σx² do, and the host combines them.",
    "我一开始的想法是 atomic_add 的顺序是随机的，所以把各块的方差原子加起来结果不确定。其实不是这个原因：加法和顺序无关。真正的问题是"
    "方差不是线性的，每块方差是相对自己的均值算的，相加会漏掉块间项；Σx、Σx² 是线性的，所以用 atomic_add 累加，最后在 host 上算 "
    "E[x²] − mean²。",
]


@pytest.mark.parametrize("answer", GIVEN_UP)
def test_a_first_idea_taken_back_is_not_the_students(answer: str) -> None:
    result, _ = _scored(answer)
    assert "misconception" not in result.flags, result.misconceptions
    assert result.points >= 1.0  # the second leaves the between-chunk term and the linearity half said (CHAIN_GAP)


def test_the_first_idea_kept_or_told_plainly_is_still_stated() -> None:
    for answer in (FIRST_IDEA + " I still think so.", FIRST_IDEA.removeprefix("My first thought was that ")):
        result, _ = _scored(answer)
        assert "misconception" in result.flags, answer
        assert result.points == 0


def test_the_switch_reads_from_the_sentence_start_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(freetext, "REPORTED_FROM_TERMS", False)
    result, _ = _scored(GIVEN_UP[0])
    assert "misconception" in result.flags
