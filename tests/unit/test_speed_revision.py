"""The speed card's report revision on a real (SQLite) database (store.add_speed_revision, #20.1):
it becomes current with reason `speed` and the webhook `submission.speed_measured`, and nothing
that follows a grade moves: no LMS score is queued, the grade columns, review flags and dashboard
facts stay; over a TA decision issued meanwhile it keeps the decision; only a `pending` card is
ever replaced."""
from __future__ import annotations

import pytest
from sqlalchemy import func, select

from service.config import REPO_ROOT
from service.db import store
from service.db.decisions import decide
from service.db.lti_models import LtiScorePost
from service.db.models import ReportFact, ReportRow, ReviewFlag, Submission, WebhookDelivery
from service.exercises import ExerciseCatalog
from service.grades.policy import grade_columns
from service.grading.speed import unmeasured
from service.report import BenchTiming, Performance, Report, in_language
from service.review import DecisionRequest
from tests.unit import test_lti_scores as lti
from tests.unit.test_lti_scores import issue, report, submitted


@pytest.fixture
def db(tmp_path):
    """test_lti_scores's database: a course with an LTI placement of lesson 6, on SQLite."""
    return lti.db.__wrapped__(tmp_path)


SPEED = ExerciseCatalog(REPO_ROOT / "exercises").get("lesson06_mean_var").spec.speed


def _pending(total: float, **kwargs) -> dict:
    body = report(total, **kwargs)
    body["performance"] = unmeasured(SPEED, "speed.pending", language="en", cases_passed=True).model_dump(mode="json")
    return body


def _measured() -> dict:
    timing = BenchTiming(median_ms=0.072, p20_ms=0.071, p80_ms=0.073, min_ms=0.07, max_ms=0.08, reps=600)
    card = unmeasured(SPEED, "speed.pending", language="en", cases_passed=True)
    return Performance.model_validate({**card.model_dump(), "status": "measured", "reason": None,
                                       "kernel": timing.model_dump(), "achieved_gbps": 3720.0}).model_dump(mode="json")


def _count(session, model, submission_id: str) -> int:
    return session.scalar(select(func.count()).select_from(model).where(model.submission_id == submission_id)) or 0


def _follows_a_grade(session, row: Submission) -> tuple:
    """What a grade that becomes current sets: grade columns, review state, LMS scores, facts."""
    columns = {name: getattr(row, name) for name in grade_columns(session.get_one(ReportRow, row.current_report_id)
                                                                   .report)}
    return (columns, row.needs_review, row.graded_at, row.attempts, _count(session, ReportFact, row.id),
            _count(session, LtiScorePost, row.id), _count(session, ReviewFlag, row.id))


def test_the_revision_is_current_and_moves_nothing_that_follows_a_grade(db):
    with db() as session:
        row = submitted(session, "stu", attempt=1)
        row.callback_url = "http://127.0.0.1:9/hook"
        assert issue(session, row, _pending(9.0)) is not None  # the grade went to the LMS once
        before = _follows_a_grade(session, row)
        graded_id = row.current_report_id
        revision = store.add_speed_revision(session, row.id, _measured(), graded_report_id=graded_id)
        assert revision is not None and (revision.seq, revision.reason) == (2, "speed")
    with db() as session:
        row = session.get_one(Submission, "s1stu")
        assert row.current_report_id == revision.id
        assert _follows_a_grade(session, row) == before, "no LMS score, no grade column, flag or fact changed"
        graded = Report.model_validate(session.get_one(ReportRow, graded_id).report)
        current = Report.model_validate(session.get_one(ReportRow, revision.id).report)
        assert current.score == graded.score and current.performance.status == "measured"
        assert current.model_dump(exclude={"performance"}) == graded.model_dump(exclude={"performance"})
        assert [d.event for d in session.scalars(select(WebhookDelivery).where(
            WebhookDelivery.submission_id == row.id))] == ["submission.speed_measured"]
        # Not pending any more: a late second card writes nothing.
        assert store.add_speed_revision(session, row.id, _measured()) is None
        assert _count(session, ReportRow, row.id) == 2


def test_over_a_ta_decision_issued_meanwhile_the_revision_keeps_the_decision(db):
    with db() as session:
        row = submitted(session, "stu", attempt=1)
        issue(session, row, _pending(9.0, veto="suspected"))
        assert _count(session, ReviewFlag, row.id) == 1
        decide(session, row.id, DecisionRequest(veto="coincidental_pass", action="dismiss", reason="fine"), actor="ta")
        decided = session.get_one(ReportRow, session.get_one(Submission, row.id).current_report_id)
        revision = store.add_speed_revision(session, row.id, _measured())
        assert revision is not None and (revision.seq, revision.reason) == (3, "speed")
    with db() as session:
        row = session.get_one(Submission, "s1stu")
        current = Report.model_validate(session.get_one(ReportRow, row.current_report_id).report)
        assert current.vetoes[0].status == "dismissed" and current.score == Report.model_validate(decided.report).score
        assert current.performance.status == "measured" and _count(session, ReviewFlag, row.id) == 0


def test_the_card_of_an_earlier_grading_never_lands_on_a_regrade(db):
    with db() as session:
        row = submitted(session, "stu", attempt=1)
        issue(session, row, _pending(9.0))
        first_id = row.current_report_id
        regrade = ReportRow(submission_id=row.id, seq=2, reason="regrade", status="graded", report=_pending(9.0))
        session.add(regrade)
        session.flush()
        row.current_report_id = regrade.id
        session.commit()
        # A later regrade that failed on our side (not_gradable, history only) does not stop the current one's card.
        failed = ReportRow(submission_id=row.id, seq=3, reason="regrade", status="not_gradable", report=_pending(9.0))
        session.add(failed)
        session.commit()
        assert store.add_speed_revision(session, row.id, _measured(), graded_report_id=first_id) is None
        revision = store.add_speed_revision(session, row.id, _measured(), graded_report_id=regrade.id)
        assert revision is not None and (revision.seq, revision.reason) == (4, "speed")


def test_the_revision_replaces_the_card_in_the_other_language_too(db):
    """#21.2: the report's translations get the revision's card in their language, or none (the card
    then shows in the report's language), never the pending card they had; also over a TA decision."""
    pending_zh = unmeasured(SPEED, "speed.pending", language="zh", cases_passed=True).model_dump(mode="json")
    measured_zh = {**_measured(), "claim": SPEED.claim.in_("zh"), "claim_source": SPEED.claim_source.in_("zh"),
                   "bytes_note": SPEED.bytes_note.in_("zh"), "baseline_label": SPEED.baseline.label.in_("zh")}
    with db() as session:
        first = submitted(session, "stu", attempt=1)
        second = submitted(session, "two", attempt=1)
        for row in (first, second):
            issue(session, row, {**_pending(9.0, veto="suspected"),
                                 "translations": {"zh": {"performance": pending_zh}}})
        decide(session, first.id, DecisionRequest(veto="coincidental_pass", action="dismiss", reason="fine"),
               actor="ta")
        assert store.add_speed_revision(session, first.id, _measured(), translations={"zh": measured_zh}) is not None
        assert store.add_speed_revision(session, second.id, _measured()) is not None
    with db() as session:
        said, unsaid = (Report.model_validate(session.get_one(ReportRow, session.get_one(
            Submission, sid).current_report_id).report) for sid in ("s1stu", "s1two"))
    assert said.vetoes[0].status == "dismissed"
    switched = in_language(said, "zh").performance
    assert switched.status == "measured" and switched.claim == SPEED.claim.in_("zh") != said.performance.claim
    assert switched.kernel == said.performance.kernel
    assert unsaid.translations["zh"].performance is None
    assert in_language(unsaid, "zh").performance == unsaid.performance
