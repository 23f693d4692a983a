"""Celery over Redis, for several GPU machines: `kernelgrade worker` on each.

Tasks carry only a submission id and open their own session; the database decides who grades
(leases), so a task delivered twice, or re-delivered after its worker was killed, never produces
two current reports. acks_late + reject_on_worker_lost make a killed worker's task come back.

Two queues, as the in-process lanes (service/worker/lanes.py): `kernelgrade.grade` (queue
FAST_QUEUE) claims the submission and does everything that needs no sandbox: a memo hit, a
refused fill, written answers, the report. A program to run is handed back to the queue
(store.hand_over: not counted as an attempt) for `kernelgrade.run` (queue SANDBOX_QUEUE), which
only `kernelgrade worker --lane sandbox|all` consumes; the memo claim goes with it (its owner is
the submission). A grading whose identical program is in flight elsewhere is parked: its task is
re-enqueued every PARK_POLL_S (a countdown: it holds no worker thread meanwhile) under the same
lease, renewed at each look, and goes on once the awaited claim is gone.
"""
from __future__ import annotations

import atexit
import logging
import threading
import time
from functools import lru_cache

from celery import Celery

from service.config import Settings, get_settings
from service.status import SubmissionStatus

log = logging.getLogger("kernelgrade.celery")


def make_celery(settings: Settings) -> Celery:
    app = Celery("kernelgrade", broker=settings.broker_url)
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_ignore_result=True,
        broker_connection_retry_on_startup=True,
        broker_transport_options={"visibility_timeout": max(60, int(settings.lease_s * 2))},
        task_routes={"kernelgrade.grade": {"queue": FAST_QUEUE}, "kernelgrade.run": {"queue": SANDBOX_QUEUE}},
    )
    app.task(name="kernelgrade.grade", bind=True, max_retries=None)(_grade_task)
    app.task(name="kernelgrade.run", bind=True, max_retries=None)(_run_task)
    return app


FAST_QUEUE, SANDBOX_QUEUE = "kernelgrade.fast", "kernelgrade.sandbox"
PARK_POLL_S = 0.5  # a parked grading's task comes back this often while the awaited claim lives


def worker_queues(lane: str) -> list[str]:
    """The queues `kernelgrade worker --lane LANE` consumes."""
    return {"fast": [FAST_QUEUE], "sandbox": [SANDBOX_QUEUE]}.get(lane, [FAST_QUEUE, SANDBOX_QUEUE])


_state_lock = threading.Lock()


def _worker_state():
    """Per worker process: settings, sessions and a grader, built once (the lock keeps the
    worker's threads from migrating and building it concurrently)."""
    with _state_lock:
        return _build_worker_state()


@lru_cache
def _build_worker_state():
    from service.bootstrap import build_grader
    from service.db.migrate import upgrade
    from service.db.session import make_engine, make_sessionmaker
    from service.worker.metrics import Metrics

    settings = get_settings()
    upgrade(settings.db_url())
    sessions = make_sessionmaker(make_engine(settings.db_url()))
    grader = build_grader(settings, sessions=sessions)
    try:
        if settings.worker_lane != "fast":  # a fast-only worker runs no program: no sandboxes to keep warm
            grader.start()  # warm sandboxes for this worker process; they die with it (bwrap --die-with-parent)
        atexit.register(grader.close)
    except Exception:  # noqa: BLE001 - grading still works cold
        log.exception("could not start the warm sandbox pool")
    return settings, sessions, grader, Metrics()


def _grade_task(task, submission_id: str, token: str | None = None, parked_on: str | None = None,
                parked_until: float = 0.0) -> str | None:
    """The fast part. `token`: a parked grading coming back under the lease it kept; while the
    claim it waits on (`parked_on`) lives, it goes back to sleep without grading anything."""
    from service.db import store

    settings, sessions, grader, metrics = _worker_state()
    if token is not None:
        claim = _resume(sessions, submission_id, token, lease_s=settings.lease_s)
        if claim is None:
            return None  # the lease was lost (expired, claimed again elsewhere): that grading goes on
        if parked_on is not None and time.time() < parked_until and not _claim_gone(grader, parked_on):
            _park(task, claim, parked_on, parked_until)
            return None
    else:
        with sessions() as session:
            claim = store.claim(session, lease_s=settings.lease_s, submission_id=submission_id)
            if claim is None:
                _come_back_later(task, session, submission_id)
                return None
    return _drive(task, sessions, grader, claim, settings=settings, metrics=metrics, may_run=False)


def _run_task(task, submission_id: str) -> str | None:
    """The sandbox part: the grading again from its start (cheap, deterministic with its seed), now
    allowed to run its program; the memo claim the fast part took is this grading's (same owner)."""
    from service.db import store

    settings, sessions, grader, metrics = _worker_state()
    with sessions() as session:
        claim = store.claim(session, lease_s=settings.lease_s, submission_id=submission_id)
        if claim is None:
            _come_back_later(task, session, submission_id)
            return None
    return _drive(task, sessions, grader, claim, settings=settings, metrics=metrics, may_run=True)


def _park(task, claim, key: str, until: float) -> None:
    """Back on the fast queue in PARK_POLL_S, under the same lease (renewed at each look, so a lost
    message lets it expire within a lease and the sweeper publishes the submission again)."""
    task.app.send_task("kernelgrade.grade", args=[claim.submission_id], countdown=PARK_POLL_S,
                       kwargs=dict(token=claim.token, parked_on=key, parked_until=until))


def _drive(task, sessions, grader, claim, *, settings: Settings, metrics, may_run: bool) -> str | None:
    """Drive the grading's steps (service/grading/steps.py) in this task: a RunStep is run here
    (sandbox queue) or handed to the sandbox queue; a ParkStep re-enqueues the fast task."""
    from service.db import store
    from service.grading.steps import RunStep
    from service.worker.grading import grade_claimed

    if not may_run and settings.worker_lane == "fast":
        grader.learn_environment()  # it never runs a sandbox: the memo tells it (at most once a second)
    parked: list = []

    def on_step(step, claims: list) -> bool:
        """True: go on in this task (the RunStep is run here); False: the grading left this task."""
        if isinstance(step, RunStep):
            if may_run:
                return True
            claims.clear()  # the memo claim goes with the grading to the sandbox queue (same owner there)
            with sessions() as session:
                if store.hand_over(session, claim):
                    task.app.send_task("kernelgrade.run", args=[claim.submission_id])
            return False
        parked.append(step)
        return False

    status = grade_claimed(sessions, grader, claim, lease_s=settings.lease_s, max_attempts=settings.max_attempts,
                           metrics=metrics, on_step=on_step)
    if parked:  # back on the fast queue under the same lease (also from a run task whose claim was taken meanwhile)
        _park(task, claim, parked[0].key, time.time() + parked[0].timeout_s)
    return status


def _resume(sessions, submission_id: str, token: str, *, lease_s: float):
    """The claim of a grading handed over under its lease, if that lease is still its own."""
    from service.db import store
    from service.db.models import Submission

    with sessions() as session:
        row = session.get(Submission, submission_id)
        if row is None:
            return None
        claim = store.Claim(submission_id, token, row.attempts)
        return claim if store.renew_lease(session, claim, lease_s=lease_s) else None


def _claim_gone(grader, key: str) -> bool:
    try:
        return bool(grader.memo.wait_released(key, timeout_s=0))
    except Exception:  # noqa: BLE001 - cannot tell: look at the memo again (or run it)
        return True


def _come_back_later(task, session, submission_id: str) -> None:
    from service.db.base import as_utc, utcnow
    from service.db.models import Submission

    row = session.get(Submission, submission_id)
    if row is not None and row.status == SubmissionStatus.running and row.lease_expires_at is not None:
        # Someone holds it: come back when their lease would have expired.
        expires = as_utc(row.lease_expires_at)
        raise task.retry(countdown=max(1.0, (expires - utcnow()).total_seconds() + 1))
    # else: graded already, or unknown: nothing to do


@lru_cache
def celery_app() -> Celery:
    """The app `celery -A service.worker.celery_app:celery_app()` would load (kernelgrade worker uses it)."""
    return make_celery(get_settings())
