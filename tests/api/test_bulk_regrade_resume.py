"""A bulk regrade lives in the database, so it resumes after a restart: driven step by step here
on a real database (SQLite and PostgreSQL), with a fresh engine standing for each restart and the
store's own claim/finish standing for the workers."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest

from service.db import regrades, store
from service.db.migrate import upgrade
from service.db.models import RegradeItem, Submission
from service.db.session import make_engine, make_sessionmaker
from service.report import Environment, ExerciseRef, Report, Score
from service.submission import Submission as SubmissionBody
from tests.api.support import cheap_body
from tests.support.servers import database


def _report(submission_id: str) -> Report:
    return Report(submission_id=submission_id, exercise=ExerciseRef(id="lesson06_mean_var", version=1), status="graded",
                  score=Score(total=0, max=10, pass_threshold=8, passed=False, provisional=False),
                  environment=Environment(backend="interpreter", sandbox="none"), created_at=datetime.now(timezone.utc))


def _work(sessions) -> int:
    """What the workers do: grade every queued submission (here: a fixed report)."""
    graded = 0
    while True:
        with sessions() as session:
            claim = store.claim(session, lease_s=60)
            if claim is None:
                return graded
            assert store.finish(session, claim, _report(claim.submission_id)) is not None
            graded += 1


@pytest.fixture
def restartable(db_kind, tmp_path):
    with database(db_kind, tmp_path) as url:
        upgrade(url)
        engines = []

        def start():
            """A fresh engine and sessionmaker: what a restarted process has."""
            engine = make_engine(url)
            engines.append(engine)
            return make_sessionmaker(engine)

        yield start
        for engine in engines:
            engine.dispose()


def test_a_bulk_regrade_resumes_after_restarts(restartable):
    sessions = restartable()
    with sessions() as session:
        store.create_course(session, "c1", "Course")
        for index in range(5):
            store.create_submission(session, course_id="c1", body=SubmissionBody.model_validate(
                {**cheap_body(f"s{index}"), "assignment": "hw"}), callback_url=None, idempotency_key=None)
    assert _work(sessions) == 5
    with sessions() as session:
        job, created = regrades.start(session, "c1", assignment="hw", requested_by="test")
        assert created and job.total == 5
        job_id = job.id
        assert regrades.start(session, "c1", assignment="hw")[0].id == job_id, "idempotent while running"
        assert len(regrades.advance(session, window=2)) == 2, "two in the queue at a time"
        assert len(regrades.advance(session, window=2)) == 0, "the window is full"
        # The crash window: a submission queued by a step whose process died before it noted it.
        pending = session.query(RegradeItem).filter_by(job_id=job_id, state="pending").first().submission_id
        assert store.request_regrade(session, pending)

    sessions = restartable()  # restart
    assert _work(sessions) == 3, "the two queued by the job and the one queued before the crash"
    with sessions() as session:
        regrades.advance(session, window=2)
        counts = regrades.progress(session, session.get(regrades.RegradeJob, job_id))
        assert (counts.done, counts.total) == (3, 5), "the one queued before the crash counts once"

    for _ in range(5):  # restart between every step
        sessions = restartable()
        _work(sessions)
        with sessions() as session:
            regrades.advance(session, window=2)
    with sessions() as session:
        job = session.get(regrades.RegradeJob, job_id)
        counts = regrades.progress(session, job)
        assert (job.status, counts.done, counts.total) == ("done", 5, 5) and job.finished_at is not None
        reasons = [r.reason for r in store.report_history(session, pending)]
        assert reasons == ["initial", "regrade"], "regraded exactly once"
        assert all(row.status == "graded" for row in session.query(Submission))
