"""The pass rule's causal-chain requirement on answers the real scorer read: an unanswered or
off-topic answer explains no link, so the requirement is unmet (it used to read "0 of 0 links,
0 needed" and count as met)."""
from __future__ import annotations

import pytest

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from service.grading.freetext import score_text
from service.grading.passrule import chain_requirement

EXERCISE = ExerciseCatalog(REPO_ROOT / "exercises").get("lesson06_mean_var")


@pytest.mark.parametrize("answer", ["", "   ", "今天天气很好，我喜欢吃苹果和香蕉。"])
@pytest.mark.parametrize("language", ["zh", "en"])
def test_an_unanswered_or_off_topic_question_does_not_meet_its_chain(answer, language):
    item = score_text(item_id="q1", title="Q1", max_points=2, question=EXERCISE.question("q1"), answer=answer,
                      language=language)
    assert item.evidence["kind"] in ("empty", "off_topic"), item.evidence
    req = chain_requirement(item, question_id="q1", share=0.5, language=language)
    assert not req.met, req
    assert "0 of 0" not in req.message and "0/0" not in req.message, req.message


def test_a_full_answer_still_meets_it():
    example = EXERCISE.root / "example_submission.json"
    import json

    answer = json.loads(example.read_text(encoding="utf-8"))["answers"]["q1"]
    item = score_text(item_id="q1", title="Q1", max_points=2, question=EXERCISE.question("q1"), answer=answer)
    assert chain_requirement(item, question_id="q1", share=0.5, language="zh").met


CATALOG = ExerciseCatalog(REPO_ROOT / "exercises")
# Honest answers (probes of 2026-12-04) that tell the chain in the question's order, not the rubric's:
# the points' links (_link: in chain order) find none, and the requirement failed a correct student.
TOLD_OTHERWISE = [
    ("lesson07_softmax", "q1", "因为 exp 在 float32 里超过大约 88 就溢出成 inf。例如 logits 约为 1000：exp(1000) = inf，"
     "inf/inf = nan，整行输出 nan。减去行最大值后 shifted ≤ 0，exp 的值在 (0, 1] 之间，分母至少是 1，不会溢出。logits 约为 "
     "−1000 时，exp(−1000) 下溢成 0，分母为 0，0/0 = nan；减去最大值后最大那一项 exp(0) = 1，分母不会是 0。数学上 softmax "
     "对平移不变，所以结果不变。"),
    ("lesson07_softmax", "q2", "Because the padding lanes take part in both tl.max and tl.sum. -inf is the identity for "
     "max and exp(-inf) = 0 is the identity for the sum, so the padding changes neither. With 0.0: for a row that is "
     "all negative, say [-3, -5, -4], the padding 0 becomes the row max, and each padding lane adds exp(0 - 0) = 1 to "
     "the denominator, so every probability is far too small. For a general row the max usually stays a real value, "
     "but each padding lane still adds exp(0 - max) to the denominator, (BLOCK - N) * exp(-max) in total, so the "
     "outputs are too small and no longer sum to 1."),
    ("fused_mean_var_atomic", "q1", "因为 Σx、Σx² 是可加的（线性），各个 program 的部分和按任意顺序 atomic_add 起来就是整行的和；"
     "而方差依赖整行的均值，每块的方差是围绕块内均值计算的，直接相加会丢掉块均值之间的差异项，结果偏小。"),
]


@pytest.mark.parametrize(("exercise_id", "question_id", "answer"), TOLD_OTHERWISE)
def test_a_chain_told_in_another_order_meets_the_requirement_and_keeps_its_points(exercise_id, question_id, answer):
    exercise = CATALOG.get(exercise_id)
    item = score_text(item_id=question_id, title=question_id, max_points=2, question=exercise.question(question_id),
                      answer=answer)
    assert item.evidence["loose_links"], item.evidence  # told in prose, not in the rubric's order
    assert not any(link in item.evidence["links"] for link in item.evidence["loose_links"])
    req = chain_requirement(item, question_id=question_id, share=0.5, language="zh")
    assert req.met, req


def test_a_keyword_list_is_not_rescued_by_a_loose_link():
    """The same steps as terms, commas between: a keyword list, whatever _loose_link finds in it."""
    exercise = CATALOG.get("lesson07_softmax")
    listed = ("padding lanes in tl.max and tl.sum, (BLOCK - N)·exp(-max) in the denominator, -inf identity of max, "
              "exp(-inf) = 0 identity of sum.")
    item = score_text(item_id="q2", title="Q2", max_points=2, question=exercise.question("q2"), answer=listed)
    assert "keyword_stuffing" in item.evidence["flags"] and not item.evidence["links"], item.evidence
    assert not chain_requirement(item, question_id="q2", share=0.5, language="en").met
