from __future__ import annotations

from datetime import datetime, timezone

import pytest
from pydantic import ValidationError

from service.report import Environment, ExerciseRef, Item, Report, Score, Veto
from service.review import DecisionError, DecisionRequest, apply_decision


def report() -> Report:
    items = [Item(id="code.regular", title="r", points=2, max_points=2, status="pass", feedback=""),
             Item(id="q2", title="q2", points=0.5, max_points=2, status="needs_review", feedback="auto")]
    vetoes = [Veto(rule="coincidental_pass", status="suspected", needs_review=True, evidence={"x": 1})]
    return Report(submission_id="s", exercise=ExerciseRef(id="e", version=1), status="graded",
                  score=Score(total=2.5, max=4, pass_threshold=3, passed=False, provisional=True), items=items,
                  vetoes=vetoes, environment=Environment(backend="interpreter", sandbox="bwrap"),
                  created_at=datetime.now(timezone.utc))


def test_overriding_points_rescores_and_keeps_the_trail():
    new, before, after = apply_decision(report(), DecisionRequest(item="q2", points=2, reason="full chain, just terse"),
                                        actor="ta-key")
    q2 = next(i for i in new.items if i.id == "q2")
    assert (q2.points, q2.status) == (2, "pass") and q2.evidence["ta_decision"]["points_before"] == 0.5
    assert before == {"points": 0.5, "status": "needs_review"} and after == {"points": 2, "status": "pass"}
    assert new.score.total == 4 and new.score.provisional, "the suspected veto still waits"
    assert not new.score.passed


def test_dismissing_the_last_suspected_veto_settles_the_score():
    first, _, _ = apply_decision(report(), DecisionRequest(item="q2", points=1.5, reason="partial"), actor="ta")
    final, before, after = apply_decision(first, DecisionRequest(veto="coincidental_pass", action="dismiss",
                                                                 reason="probe failed on a typo"), actor="ta")
    assert before == {"status": "suspected"} and after == {"status": "dismissed"}
    assert final.score.total == 3.5 and final.score.passed and not final.score.provisional


def test_confirming_a_veto_blocks_the_pass():
    final, _, _ = apply_decision(report(), DecisionRequest(veto="coincidental_pass", action="confirm", reason="guessed"),
                                 actor="ta")
    assert final.vetoes[0].status == "confirmed" and not final.score.passed


@pytest.mark.parametrize("request_", [
    DecisionRequest(item="q9", points=1, reason="nope"),
    DecisionRequest(item="q2", points=3, reason="too many"),
    DecisionRequest(veto="unverified_claim", action="confirm", reason="not raised"),
])
def test_decisions_on_things_that_are_not_there_are_refused(request_):
    with pytest.raises(DecisionError):
        apply_decision(report(), request_, actor="ta")


@pytest.mark.parametrize("fields", [
    {"item": "q2", "reason": "no points"},
    {"item": "q2", "points": 1, "veto": "coincidental_pass", "action": "confirm", "reason": "two targets"},
    {"veto": "coincidental_pass", "reason": "no action"},
    {"item": "q2", "points": 1},
])
def test_malformed_decisions_are_invalid(fields):
    with pytest.raises(ValidationError):
        DecisionRequest(**fields)
