"""The lease rules of the store, on real SQLite and real PostgreSQL, with real threads racing.

The promise these rules carry: of two workers racing for one submission exactly one holds it; a
worker whose lease expired and was taken over writes nothing; a submission that lost too many
leases ends not_gradable (one report) instead of cycling for ever.
"""
from __future__ import annotations

import json
import threading
import time

import pytest
from sqlalchemy import func, select

from service.bootstrap import build_grader
from service.config import Settings
from service.db import store
from service.db.base import as_utc
from service.db.migrate import upgrade
from service.db.models import ReportRow, Submission
from service.db.session import make_engine, make_sessionmaker
from service.grading.not_gradable import not_gradable_report
from service.report import ExerciseRef
from service.submission import Submission as SubmissionBody
from service.worker.grading import grade_claimed
from tests.support.servers import database
from tests.workers.procs import EXAMPLE

pytestmark = [pytest.mark.exclusive, pytest.mark.workers, pytest.mark.timeout(120)]

BACKENDS = [pytest.param("sqlite", id="sqlite"), pytest.param("postgresql", id="postgresql", marks=pytest.mark.postgres)]


@pytest.fixture(params=BACKENDS)
def sessions(request, tmp_path):
    kind = request.param
    if kind == "postgresql":
        request.getfixturevalue("pg_url")  # skips when PostgreSQL is not reachable
    with database(kind, tmp_path) as url:
        upgrade(url)
        engine = make_engine(url)
        try:
            maker = make_sessionmaker(engine)
            with maker() as session:
                store.create_course(session, "c1", "course one")
            yield maker
        finally:
            engine.dispose()


def new_submission(sessions) -> str:
    body = SubmissionBody.model_validate(json.loads(EXAMPLE.read_text(encoding="utf-8")))
    with sessions() as session:
        row, created = store.create_submission(session, course_id="c1", body=body, callback_url=None, idempotency_key=None)
    assert created
    return row.id


def a_report(sessions, submission_id: str, status: str = "graded"):
    with sessions() as session:
        row = session.get(Submission, submission_id)
        return not_gradable_report(submission_id=row.id, exercise=ExerciseRef(id=row.exercise_id, version=1),
                                   max_points=10, pass_threshold=8, language="zh",
                                   reason="test").model_copy(update={"status": status})


def race(sessions, n_threads: int, **claim_kwargs) -> list[store.Claim | None]:
    """`n_threads` threads, each with its own session (connection), call claim at the same instant."""
    barrier = threading.Barrier(n_threads)
    results: list[store.Claim | None] = [None] * n_threads
    errors: list[BaseException] = []

    def one(i: int) -> None:
        try:
            with sessions() as session:
                barrier.wait(timeout=30)
                results[i] = store.claim(session, lease_s=60, **claim_kwargs)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n_threads)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a claim hung"
    assert not errors, errors
    return results


def test_two_threads_claiming_the_same_submission_exactly_one_wins(sessions):
    for _ in range(20):
        submission_id = new_submission(sessions)
        results = race(sessions, 2, submission_id=submission_id)
        winners = [r for r in results if r is not None]
        assert len(winners) == 1, results
        with sessions() as session:
            row = session.get(Submission, submission_id)
            assert (row.status, row.attempts, row.lease_token) == ("running", 1, winners[0].token)
        assert winners[0].attempt == 1


def test_racing_for_the_oldest_queued_submission_hands_each_out_once(sessions):
    ids = {new_submission(sessions) for _ in range(3)}
    results = race(sessions, 6)  # six workers, three submissions
    winners = [r for r in results if r is not None]
    assert sorted(w.submission_id for w in winners) == sorted(ids)
    assert len({w.token for w in winners}) == 3


def test_two_threads_taking_over_an_expired_lease_exactly_one_wins(sessions):
    for _ in range(10):
        submission_id = new_submission(sessions)
        with sessions() as session:
            dead = store.claim(session, lease_s=0.05, submission_id=submission_id)
        time.sleep(0.1)  # its worker died: the lease ran out
        results = race(sessions, 2, submission_id=submission_id)
        winners = [r for r in results if r is not None]
        assert len(winners) == 1 and winners[0].attempt == 2 and winners[0].token != dead.token, results


def test_a_live_lease_cannot_be_taken(sessions):
    submission_id = new_submission(sessions)
    with sessions() as session:
        first = store.claim(session, lease_s=60, submission_id=submission_id)
        assert first is not None
        assert store.claim(session, lease_s=60, submission_id=submission_id) is None
        assert store.claim(session, lease_s=60) is None


def test_an_expired_lease_taken_over_cannot_finish_but_the_new_holder_can(sessions):
    submission_id = new_submission(sessions)
    with sessions() as session:
        old = store.claim(session, lease_s=0.3, submission_id=submission_id)
    assert old is not None and old.attempt == 1
    time.sleep(0.6)  # the old worker stalls past its lease (no heartbeat)
    with sessions() as session:
        new = store.claim(session, lease_s=60, submission_id=submission_id)
    assert new is not None and new.attempt == 2 and new.token != old.token

    with sessions() as session:
        assert store.renew_lease(session, old, lease_s=60) is False  # the old heartbeat learns it lost
        assert store.finish(session, old, a_report(sessions, submission_id)) is None
    with sessions() as session:
        row = session.get(Submission, submission_id)
        assert row.status == "running" and row.current_report_id is None and row.lease_token == new.token
    with sessions() as session:
        written = store.finish(session, new, a_report(sessions, submission_id))
    assert written is not None and written.seq == 1
    with sessions() as session:  # the old worker finishing late, after the new one: still nothing
        assert store.finish(session, old, a_report(sessions, submission_id)) is None
        assert store.finish(session, new, a_report(sessions, submission_id)) is None  # and never twice
    with sessions() as session:
        row = session.get(Submission, submission_id)
        reports = list(session.scalars(select(ReportRow).where(ReportRow.submission_id == submission_id)))
        assert [r.id for r in reports] == [written.id] and row.current_report_id == written.id
        assert (row.status, row.attempts, row.lease_token, row.lease_expires_at) == ("graded", 2, None, None)


def test_a_session_holding_the_submission_sees_what_claim_and_finish_wrote(sessions):
    """claim and finish write by plain statements: a copy of the row the session already held is
    brought up to date, as the ORM's own writes did."""
    submission_id = new_submission(sessions)
    report = a_report(sessions, submission_id)
    with sessions() as session:
        row = session.get(Submission, submission_id)
        assert row.status == "queued"
        claim_ = store.claim(session, lease_s=60, submission_id=submission_id)
        assert (row.status, row.lease_token, row.attempts) == ("running", claim_.token, 1)
        written = store.finish(session, claim_, report)
        assert written is not None and (written.seq, written.reason, written.status) == (1, "initial", "graded")
        assert (row.status, row.current_report_id, row.lease_token, row.lease_expires_at) == (
            "graded", written.id, None, None)
        assert row.graded_at is not None and row.first_graded_at == row.graded_at
    with sessions() as session:
        stored = session.get(ReportRow, written.id)
        assert stored.report == report.to_record() and as_utc(stored.created_at) == written.created_at


def test_both_holders_finishing_at_once_write_one_report(sessions):
    """The old holder (expired) and the new one call finish at the same instant: one report."""
    for _ in range(10):
        submission_id = new_submission(sessions)
        with sessions() as session:
            old = store.claim(session, lease_s=0.05, submission_id=submission_id)
        time.sleep(0.1)
        with sessions() as session:
            new = store.claim(session, lease_s=60, submission_id=submission_id)
        report = a_report(sessions, submission_id)
        barrier = threading.Barrier(2)
        written: dict[str, object] = {}

        def finish(name: str, claim_: store.Claim) -> None:
            with sessions() as session:
                barrier.wait(timeout=30)
                written[name] = store.finish(session, claim_, report)

        threads = [threading.Thread(target=finish, args=("old", old)), threading.Thread(target=finish, args=("new", new))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert written["old"] is None and written["new"] is not None
        with sessions() as session:
            count = session.scalar(select(func.count()).select_from(ReportRow).where(ReportRow.submission_id == submission_id))
            assert count == 1


def test_too_many_lost_leases_end_not_gradable_with_one_report(sessions):
    """Workers died twice (leases expired); the third claim is over max_attempts=2: the worker
    writes a not_gradable report instead of running the sandbox again."""
    submission_id = new_submission(sessions)
    for attempt in (1, 2):
        with sessions() as session:
            claim = store.claim(session, lease_s=0.05, submission_id=submission_id)
        assert claim is not None and claim.attempt == attempt
        time.sleep(0.1)  # ...and the worker died
    with sessions() as session:
        claim = store.claim(session, lease_s=60, submission_id=submission_id)
    assert claim is not None and claim.attempt == 3
    grader = build_grader(Settings(device="interpreter"))
    status = grade_claimed(sessions, grader, claim, lease_s=60, max_attempts=2)
    assert status == "not_gradable"
    with sessions() as session:
        row = session.get(Submission, submission_id)
        reports = list(session.scalars(select(ReportRow).where(ReportRow.submission_id == submission_id)))
        assert len(reports) == 1 and row.current_report_id == reports[0].id
        assert row.status == "not_gradable" and reports[0].status == "not_gradable"
        assert "interrupted 2 times" in reports[0].report["message"]
        assert row.lease_token is None


def test_the_lease_keeper_reports_a_lease_taken_over_and_stops_renewing_it(sessions, caplog):
    from service.worker.lanes import LeaseKeeper

    submission_id = new_submission(sessions)
    with sessions() as session:
        mine = store.claim(session, lease_s=0.01, submission_id=submission_id)
    time.sleep(0.05)  # expired: another worker takes it over
    with sessions() as session:
        theirs = store.claim(session, lease_s=60, submission_id=submission_id)
    assert mine is not None and theirs is not None and theirs.token != mine.token
    keeper = LeaseKeeper(sessions, lease_s=60)
    keeper.hold(mine, 60)
    with caplog.at_level("WARNING", logger="kernelgrade"):
        keeper.renew_now()
        keeper.renew_now()  # dropped after the first: not renewed, not reported again
    assert [r.getMessage() for r in caplog.records] == [f"lost the lease on {submission_id}"]


def test_the_lease_keeper_does_not_report_a_claim_finished_while_it_renews(sessions, caplog):
    """A grading drops its claim and writes its report while the keeper is renewing the claims it
    listed a moment before: the failed renewal of that claim is no lost lease."""
    from service.worker.lanes import LeaseKeeper

    submission_id = new_submission(sessions)
    with sessions() as session:
        claim = store.claim(session, lease_s=60, submission_id=submission_id)
    assert claim is not None
    report = a_report(sessions, submission_id)
    keeper = LeaseKeeper(sessions, lease_s=60)

    def finishing_first():  # the keeper's session for the renewal: the grading finishes just before it
        keeper.drop(claim)
        with sessions() as session:
            assert store.finish(session, claim, report) is not None
        return sessions()

    keeper.hold(claim, 60)
    keeper.sessions = finishing_first
    with caplog.at_level("WARNING", logger="kernelgrade"):
        keeper.renew_now()
    assert caplog.records == []
    with sessions() as session:
        assert session.get(Submission, submission_id).status == "graded"
