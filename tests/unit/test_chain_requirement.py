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
