"""Fair claiming (store.claim), on real SQLite and real PostgreSQL, with real threads racing and the
real in-process lanes.

Red team: a free worker took the oldest claimable submission of any course, so one course's burst
(up to max_queue_per_course) made every other course wait behind all of it. Now a free worker takes
the oldest queued submission of the course with the fewest running; within a course the order is
oldest first, and a submission whose lease expired is taken again before anything queued.
"""
from __future__ import annotations

import threading
import time
import uuid

import pytest
from sqlalchemy import select, text, update

from service.bootstrap import build_grader
from service.config import Settings
from service.db import store
from service.db.migrate import upgrade
from service.db.models import Submission
from service.db.session import make_engine, make_sessionmaker
from service.submission import Submission as SubmissionBody
from service.worker.lanes import Lanes
from tests.api.support import postgres_up
from tests.support.servers import POSTGRES_ADMIN, database
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.workers, pytest.mark.timeout(120)]

BACKENDS = [pytest.param("sqlite", id="sqlite"), pytest.param("postgresql", id="postgresql", marks=pytest.mark.postgres)]


@pytest.fixture(scope="module", params=BACKENDS)
def database_of_module(request, tmp_path_factory):
    """One migrated database per backend for the module (a fresh PostgreSQL database costs seconds)."""
    kind = request.param
    if kind == "postgresql" and not postgres_up():
        pytest.skip(f"PostgreSQL is not reachable at {POSTGRES_ADMIN}")
    with database(kind, tmp_path_factory.mktemp(f"fair-{kind}")) as url:
        upgrade(url)
        engine = make_engine(url)
        try:
            yield kind, make_sessionmaker(engine)
        finally:
            engine.dispose()


@pytest.fixture
def db(database_of_module):
    """(kind, sessions, (big, small, third)): three new courses; every submission still in progress
    when the test ends is marked graded (claims see every course's rows)."""
    kind, sessions = database_of_module
    names = tuple(f"{name}-{uuid.uuid4().hex[:8]}" for name in ("big", "small", "third"))
    with sessions() as session:
        for name in names:
            store.create_course(session, name, name)
    yield kind, sessions, names
    with sessions() as session:
        session.execute(update(Submission).where(Submission.status.in_(("queued", "running")))
                        .values(status="graded", lease_token=None, lease_expires_at=None))
        session.commit()


def submit(sessions, course: str, n: int = 1) -> list[str]:
    """`n` cheap submissions of `course` (code that drops the template: graded without a sandbox)."""
    ids = []
    with sessions() as session:
        for _ in range(n):
            body = SubmissionBody.model_validate({"exercise": "lesson06_mean_var", "code": f"x = {len(ids)}\n"})
            row, _ = store.create_submission(session, course_id=course, body=body, callback_url=None,
                                             idempotency_key=None)
            ids.append(row.id)
    return ids


def graded(sessions, claim: store.Claim) -> None:
    """The grading of `claim` is done (its row leaves the running ones)."""
    with sessions() as session:
        session.execute(update(Submission).where(Submission.id == claim.submission_id)
                        .values(status="graded", lease_token=None, lease_expires_at=None))
        session.commit()


def test_a_burst_waits_its_turn_and_each_course_keeps_its_own_order(db):
    _, sessions, (big, small_course, third_course) = db
    burst = submit(sessions, big, 12)
    small = submit(sessions, small_course, 2)
    third = submit(sessions, third_course, 1)
    order = []
    with sessions() as session:
        for _ in range(15):  # nothing finishes: running counts grow as workers take them
            claim = store.claim(session, lease_s=60)
            assert claim is not None and claim.attempt == 1
            order.append(claim.submission_id)
        assert store.claim(session, lease_s=60) is None
    # all three have none running: oldest first (big), then the two with none running, oldest first
    assert order[:3] == [burst[0], small[0], third[0]]
    assert order[3:5] == [burst[1], small[1]]  # big and small have one running each: big's head is older
    assert order[5:] == burst[2:], "the rest of the burst, once it is the only course left, oldest first"


def test_a_lone_course_is_served_oldest_first_as_before(db):
    _, sessions, (big, _, _) = db
    ids = submit(sessions, big, 6)
    with sessions() as session:
        claims = [store.claim(session, lease_s=60) for _ in range(6)]
    assert [c.submission_id for c in claims] == ids


def test_an_expired_lease_is_taken_again_before_anything_queued(db):
    _, sessions, (big, small, _) = db
    dead = submit(sessions, big, 1)[0]
    with sessions() as session:
        first = store.claim(session, lease_s=0.05)
    assert first is not None and first.submission_id == dead
    waiting = submit(sessions, small, 1)[0]  # a course with none running: it would be next otherwise
    time.sleep(0.1)  # the worker died: its lease ran out
    with sessions() as session:
        again = store.claim(session, lease_s=60)
        assert again is not None and (again.submission_id, again.attempt) == (dead, 2)
        assert store.claim(session, lease_s=60).submission_id == waiting


def test_racing_workers_serve_the_other_course_before_most_of_the_burst(db):
    """Four workers (threads, each its own connection) claim and finish; a burst of 40 of one course
    is queued, then one submission of another: it is claimed within the first few claims, and every
    submission is handed out exactly once."""
    _, sessions, (big, small, _) = db
    burst = submit(sessions, big, 40)
    other = submit(sessions, small, 1)[0]
    taken: list[str] = []
    lock = threading.Lock()
    errors: list[BaseException] = []
    barrier = threading.Barrier(4)

    def worker() -> None:
        try:
            with sessions() as session:
                barrier.wait(timeout=30)
                while (claim := store.claim(session, lease_s=60)) is not None:
                    with lock:
                        taken.append(claim.submission_id)
                    graded(sessions, claim)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=90)
    assert not any(t.is_alive() for t in threads) and not errors, errors
    assert sorted(taken) == sorted(burst + [other]), "each submission handed out exactly once"
    assert taken.index(other) <= 4, taken.index(other)  # one free worker after the four first claims at most


def test_a_fair_pick_locked_by_another_claim_is_skipped_not_waited_for(db):
    """PostgreSQL: the least served course's only queued row is locked by a claim in flight (another
    transaction): this claim takes the oldest claimable row of another course instead of none."""
    kind, sessions, (big, small, _) = db
    if kind != "postgresql":
        pytest.skip("row locks: PostgreSQL (SQLite takes the whole pick under its write lock)")
    burst = submit(sessions, big, 3)
    with sessions() as session:
        assert store.claim(session, lease_s=60).submission_id == burst[0]  # big: one running
    lonely = submit(sessions, small, 1)[0]
    with sessions() as holder, sessions() as session:
        holder.execute(select(Submission.id).where(Submission.id == lonely).with_for_update())
        claim = store.claim(session, lease_s=60)
        assert claim is not None and claim.submission_id == burst[1]
        holder.rollback()
        assert store.claim(session, lease_s=60).submission_id == lonely


def test_the_in_process_lanes_grade_the_other_course_before_most_of_the_burst(db, tmp_path):
    """`kernelgrade serve`'s lanes with one fast thread, which finishes each (cheap) grading before it
    claims the next, so no course ever has one running: the courses take turns (the one claimed
    longest ago first), and the other course's submission, queued after the burst, is graded second."""
    _, sessions, (big, small, _) = db
    settings = Settings(device="interpreter", warm_pool=0, compile_cache=False, data_dir=tmp_path, fast_workers=1)
    grader = build_grader(settings, sessions=sessions)
    lanes = Lanes(sessions=sessions, grader=grader, lane_devices=settings.lane_devices(), lane_threads=1,
                  fast_threads=1, lease_s=settings.lease_s, max_attempts=settings.max_attempts)
    burst = submit(sessions, big, 20)
    other = submit(sessions, small, 1)[0]
    lanes.start()
    try:
        lanes.wake()
        wait_for(lambda: _all_final(sessions, burst + [other]), timeout=90, what="the burst and the other to be graded")
    finally:
        lanes.stop()
    with sessions() as session:
        order = [row[0] for row in session.execute(
            select(Submission.id).where(Submission.id.in_(burst + [other]))
            .order_by(Submission.first_graded_at, Submission.updated_at))]
    assert order.index(other) == 1, order.index(other)
    assert [s for s in order if s != other] == burst


def _all_final(sessions, ids: list[str]) -> bool:
    with sessions() as session:
        statuses = session.scalars(select(Submission.status).where(Submission.id.in_(ids))).all()
    return len(statuses) == len(ids) and all(s in ("graded", "not_gradable") for s in statuses)


def test_claiming_reads_the_fair_pick_from_an_index(db):
    """The pick reads each course's head and running count from (course_id, status, created_at):
    the migration made it, on both databases."""
    kind, sessions, _ = db
    with sessions() as session:
        if kind == "sqlite":
            names = session.scalars(text("SELECT name FROM sqlite_master WHERE type = 'index'")).all()
        else:
            names = session.scalars(text("SELECT indexname FROM pg_indexes WHERE tablename = 'submissions'")).all()
    assert "ix_submissions_course_id_status_created_at" in names
