"""Celery over Redis, for several GPU machines: `kernelgrade worker` on each.

Tasks carry only a submission id and open their own session; the database decides who grades
(leases), so a task delivered twice, or re-delivered after its worker was killed, never produces
two current reports. acks_late + reject_on_worker_lost make a killed worker's task come back.
"""
from __future__ import annotations

import atexit
import logging
import threading
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
    )
    app.task(name="kernelgrade.grade", bind=True, max_retries=None)(_grade_task)
    return app


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
        grader.start()  # warm sandboxes for this worker process; they die with it (bwrap --die-with-parent)
        atexit.register(grader.close)
    except Exception:  # noqa: BLE001 - grading still works cold
        log.exception("could not start the warm sandbox pool")
    return settings, sessions, grader, Metrics()


def _grade_task(task, submission_id: str) -> str | None:
    from service.db import store
    from service.db.base import as_utc, utcnow
    from service.db.models import Submission
    from service.worker.grading import grade_claimed

    settings, sessions, grader, metrics = _worker_state()
    with sessions() as session:
        claim = store.claim(session, lease_s=settings.lease_s, submission_id=submission_id)
        if claim is None:
            row = session.get(Submission, submission_id)
            if row is not None and row.status == SubmissionStatus.running and row.lease_expires_at is not None:
                # Someone holds it: come back when their lease would have expired.
                expires = as_utc(row.lease_expires_at)
                raise task.retry(countdown=max(1.0, (expires - utcnow()).total_seconds() + 1))
            return None  # graded already, or unknown: nothing to do
    return grade_claimed(sessions, grader, claim, lease_s=settings.lease_s, max_attempts=settings.max_attempts,
                         metrics=metrics)


@lru_cache
def celery_app() -> Celery:
    """The app `celery -A service.worker.celery_app:celery_app()` would load (kernelgrade worker uses it)."""
    return make_celery(get_settings())
