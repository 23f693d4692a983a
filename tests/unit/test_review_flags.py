"""Migration 0003 and the review columns: the backfill reads the current reports, and every
report that becomes current (grading or a TA decision) keeps the columns in sync."""
from __future__ import annotations

from datetime import timedelta

import pytest
from alembic import command
import sqlalchemy as sa
from sqlalchemy import insert, select, update

from service.db import decisions, store
from service.db.base import Base, utcnow
from service.db.migrate import alembic_config, upgrade
from service.db.models import ReportFact, ReviewFlag, Submission
from service.db.session import make_engine, make_sessionmaker
from service.report import Item, Report, Veto
from service.review import DecisionRequest
from service.submission import Submission as SubmissionBody
from tests.api.support import postgres_up
from tests.support.servers import POSTGRES_ADMIN, database

KINDS = [pytest.param("sqlite", id="sqlite"), pytest.param("postgresql", id="postgresql", marks=pytest.mark.postgres)]

FLAGGED = {
    "items": [{"id": "q2", "status": "needs_review", "points": 1, "max_points": 2},
              {"id": "q1", "status": "pass", "points": 2, "max_points": 2}],
    "vetoes": [{"rule": "coincidental_pass", "status": "suspected"}, {"rule": "modified_outside_blank", "status": "confirmed"}],
}


@pytest.fixture(params=KINDS)
def url(request, tmp_path):
    if request.param == "postgresql" and not postgres_up():
        pytest.fail(f"PostgreSQL is not reachable at {POSTGRES_ADMIN}")
    with database(request.param, tmp_path) as url:
        yield url


def test_flags_computed_from_a_report():
    assert store.review_flags(FLAGGED) == [("veto:coincidental_pass", "coincidental_pass"), ("item:q2", "needs_review")]
    assert store.review_flags({"items": [], "vetoes": [{"rule": "unverified_claim", "status": "dismissed"}]}) == []


def test_0003_backfills_from_current_reports(url):
    config = alembic_config(url)
    command.upgrade(config, "0002")
    engine = make_engine(url)
    try:
        # The 0002 schema, written as 0002 knew it (the models already have 0003's columns).
        columns = {"courses": ("id", "name", "webhook_secret", "created_at"),
                   "submissions": ("id", "course_id", "exercise_id", "body", "body_sha256", "feedback_token", "secret_seed",
                                   "status", "attempts", "current_report_id", "created_at", "updated_at"),
                   "reports": ("id", "submission_id", "seq", "reason", "status", "report", "created_at")}
        t = {name: sa.table(name, *(Base.metadata.tables[name].c[c]._copy() for c in cols)) for name, cols in columns.items()}
        now = utcnow()
        with engine.begin() as conn:
            conn.execute(insert(t["courses"]), [{"id": "c1", "name": "c", "webhook_secret": "s", "created_at": now}])
            for seq, (sid, report) in enumerate((("flagged", FLAGGED), ("clean", {"items": [], "vetoes": []})), 1):
                conn.execute(insert(t["submissions"]), [{
                    "id": sid, "course_id": "c1", "exercise_id": "e", "body": {}, "body_sha256": "x", "feedback_token": f"t-{sid}",
                    "secret_seed": 1, "status": "graded", "attempts": 1, "current_report_id": None, "created_at": now, "updated_at": now}])
                conn.execute(insert(t["reports"]), [{"id": seq, "submission_id": sid, "seq": 1, "reason": "initial",
                                                     "status": "graded", "report": report, "created_at": now}])
                conn.execute(update(t["submissions"]).where(t["submissions"].c.id == sid).values(current_report_id=seq))
        command.upgrade(config, "head")
        with make_sessionmaker(engine)() as session:
            flagged, clean = session.get(Submission, "flagged"), session.get(Submission, "clean")
            assert flagged.needs_review and not clean.needs_review
            assert flagged.graded_at is not None and clean.graded_at is not None
            assert sorted(session.scalars(select(ReviewFlag.kind))) == ["coincidental_pass", "needs_review"]
        command.downgrade(config, "0002")
        command.upgrade(config, "head")
    finally:
        engine.dispose()


def a_report(submission_id: str) -> Report:
    return Report(submission_id=submission_id, exercise={"id": "lesson06_mean_var", "version": 1}, status="graded",
                  score={"total": 7, "max": 10, "pass_threshold": 8, "passed": False, "provisional": True},
                  items=[Item(id="q2", title="Q2", points=1, max_points=2, status="needs_review", feedback="")],
                  vetoes=[Veto(rule="unverified_claim", status="suspected", needs_review=True)],
                  environment={"backend": "interpreter", "sandbox": "bwrap"}, created_at=utcnow())


def test_grading_and_decisions_keep_the_columns_in_sync(url):
    upgrade(url)
    engine = make_engine(url)
    try:
        sessions = make_sessionmaker(engine)
        with sessions() as session:
            store.create_course(session, "c1", "course one")
            body = SubmissionBody(exercise="lesson06_mean_var", code="x = 1")
            row, _ = store.create_submission(session, course_id="c1", body=body, callback_url=None, idempotency_key=None)
            claim = store.claim(session, lease_s=60, submission_id=row.id)
            assert store.finish(session, claim, a_report(row.id)) is not None
            graded_at = session.get(Submission, row.id).graded_at
            assert [(s.id, r) for s, r in decisions.review_queue(session, "c1")] == [(row.id, ["veto:unverified_claim", "item:q2"])]
            assert decisions.review_queue(session, "c1", kind="coincidental_pass") == []
            assert len(decisions.review_queue(session, "c1", kind="needs_review")) == 1
            assert decisions.review_queue(session, "c1", graded_before=graded_at - timedelta(seconds=1)) == []

            decisions.decide(session, row.id, DecisionRequest(veto="unverified_claim", action="dismiss", reason="ran it myself"), actor="ta")
            assert [r for _, r in decisions.review_queue(session, "c1")] == [["item:q2"]]
            decisions.decide(session, row.id, DecisionRequest(item="q2", points=2, reason="complete chain"), actor="ta")
            session.expire_all()
            row = session.get(Submission, row.id)
            assert not row.needs_review and decisions.review_queue(session, "c1") == []
            assert row.graded_at.replace(tzinfo=None) == graded_at.replace(tzinfo=None), "a TA's re-issue is not a new grading: the age stays"
    finally:
        engine.dispose()


def test_a_regrade_replaces_the_flags_and_facts_of_the_first_report(url):
    """The first report of a submission writes its flags and facts with nothing to delete; the
    regrade's report replaces them all (a flag or fact the regrade no longer has is gone), also when
    written through a session that still holds the submission as it was before its first report,
    and a second submission's are left alone."""
    upgrade(url)
    engine = make_engine(url)
    try:
        sessions = make_sessionmaker(engine)
        with sessions() as session:
            store.create_course(session, "c1", "course one")
            body = SubmissionBody(exercise="lesson06_mean_var", code="x = 1")
            ids = [store.create_submission(session, course_id="c1", body=body, callback_url=None,
                                           idempotency_key=None)[0].id for _ in range(2)]

        def grade(submission_id: str, report: Report, session=None) -> None:
            with sessions() as claiming:
                claim = store.claim(claiming, lease_s=60, submission_id=submission_id)
            assert claim is not None
            with session or sessions() as finishing:
                assert store.finish(finishing, claim, report) is not None

        def state(submission_id: str):
            with sessions() as session:
                flags = sorted(session.scalars(select(ReviewFlag.target).where(ReviewFlag.submission_id == submission_id)))
                facts = sorted((f.kind, f.key, f.ok) for f in session.scalars(
                    select(ReportFact).where(ReportFact.submission_id == submission_id)))
                return session.get_one(Submission, submission_id).needs_review, flags, facts

        held = sessions()  # a session that read the submission before its first report, and keeps it
        kept = held.get_one(Submission, ids[0])
        assert kept.current_report_id is None
        for submission_id in ids:
            grade(submission_id, a_report(submission_id))
        flagged = (True, ["item:q2", "veto:unverified_claim"], [("veto", "unverified_claim", False)])
        assert state(ids[0]) == state(ids[1]) == flagged
        with sessions() as session:
            assert store.request_regrade(session, ids[0])
        clean = a_report(ids[0]).model_copy(update={"items": [], "vetoes": [Veto(rule="coincidental_pass", status="dismissed", needs_review=False)]})
        grade(ids[0], clean, session=held)
        assert kept.current_report_id is not None, "the session's object was the one finish read"
        assert state(ids[0]) == (False, [], [("veto", "coincidental_pass", True)])
        assert state(ids[1]) == flagged
    finally:
        engine.dispose()
