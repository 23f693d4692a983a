"""How a stored submission reaches a worker: wake the in-process pool, or publish a Celery task."""
from __future__ import annotations

import logging
import threading
from datetime import timedelta

from sqlalchemy import or_, select
from sqlalchemy.orm import Session, sessionmaker

from service.config import Settings
from service.db.base import as_utc, utcnow
from service.db.models import Submission
from service.status import SubmissionStatus
from service.worker.metrics import Metrics
from service.worker.pool import InProcessPool

log = logging.getLogger("kernelgrade.dispatch")


class InProcessDispatcher:
    def __init__(self, settings: Settings, sessions: sessionmaker[Session], metrics: Metrics) -> None:
        from service.bootstrap import build_grader

        self.pool = InProcessPool(sessions=sessions, grader=build_grader(settings, sessions=sessions),
                                  settings=settings, metrics=metrics,
                                  grading_threads=settings.lane_threads())

    def start(self) -> None:
        self.pool.start()

    def stop(self) -> None:
        self.pool.stop()

    def submitted(self, submission_id: str) -> None:
        self.pool.wake()

    def slots(self) -> int:
        return self.pool.grading_threads


class CeleryDispatcher:
    """Publishes one task per submission. A sweeper re-publishes what looks stranded (queued too
    long, or a lease that expired because its worker died): the database decides who grades, so
    a duplicate task is harmless."""

    def __init__(self, settings: Settings, sessions: sessionmaker[Session], metrics: Metrics) -> None:
        from service.worker.celery_app import make_celery

        self.settings, self.sessions = settings, sessions
        self.celery = make_celery(settings)
        # Webhooks are delivered, and bulk regrades advanced, from the API process in both modes.
        self.pool = InProcessPool(sessions=sessions, grader=None, settings=settings, metrics=metrics, grading_threads=0,
                                  queued=self.submitted)
        self._stop = threading.Event()
        self._sweeper = threading.Thread(target=self._sweep_loop, name="sweeper", daemon=True)

    def start(self) -> None:
        self.pool.start()
        self._sweeper.start()

    def stop(self) -> None:
        self._stop.set()
        self.pool.stop()

    def submitted(self, submission_id: str) -> None:
        try:
            self.celery.send_task("kernelgrade.grade", args=[submission_id])
        except Exception:  # noqa: BLE001 - the broker is down: the sweeper publishes it again later
            log.exception("could not publish %s; the sweeper will retry", submission_id)

    def slots(self) -> int:
        try:
            replies = self.celery.control.ping(timeout=1.0) or []
        except Exception:  # noqa: BLE001
            return 0
        return len(replies)

    def sweep_once(self) -> int:
        """Re-publish submissions that look stranded: queued for longer than a lease, or running
        under an expired lease (its worker died). Only ids and times are read."""
        now = utcnow()
        stale_before = now - timedelta(seconds=self.settings.lease_s)
        with self.sessions() as session:
            rows = session.execute(select(Submission.id, Submission.status, Submission.updated_at).where(or_(
                (Submission.status == SubmissionStatus.running) & (Submission.lease_expires_at < now),
                Submission.status == SubmissionStatus.queued)).limit(500)).all()
        republished = 0
        for submission_id, status, updated_at in rows:
            updated = as_utc(updated_at)
            if status == SubmissionStatus.running or updated < stale_before:
                self.submitted(submission_id)
                republished += 1
        return republished

    def _sweep_loop(self) -> None:
        while not self._stop.wait(max(1.0, self.settings.lease_s / 2)):
            try:
                self.sweep_once()
            except Exception:  # noqa: BLE001
                log.exception("sweep failed")


def make_dispatcher(settings: Settings, *, sessions: sessionmaker[Session], metrics: Metrics):
    if settings.queue == "celery":
        return CeleryDispatcher(settings, sessions, metrics)
    return InProcessDispatcher(settings, sessions, metrics)
