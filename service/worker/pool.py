"""The in-process worker pool of `kernelgrade serve`: grading threads that claim submissions from
the database, one thread that delivers webhooks, one that posts LTI scores and syncs rosters, and
one that marks speed cards whose timing was interrupted (service/worker/speed_revision.py).
Nothing else to start on one machine."""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from sqlalchemy.orm import Session, sessionmaker

from service.config import Settings
from service.db import regrades
from service.grading.pipeline import Grader
from service.lti.housekeeping import Housekeeper
from service.worker.lanes import Lanes
from service.worker.metrics import Metrics
from service.worker.speed_revision import SWEEP_EVERY_S, SpeedSweeper, speed_budget_s
from service.worker.webhooks import deliver_due

log = logging.getLogger("kernelgrade.pool")


class InProcessPool:
    """With a grader: its gradings run in `Lanes` (fast threads, one sandbox lane per GPU, parked
    gradings: service/worker/lanes.py); `grading_threads` there is the sandbox threads per lane."""

    def __init__(self, *, sessions: sessionmaker[Session], grader: Grader | None, settings: Settings, metrics: Metrics,
                 grading_threads: int, queued: Callable[[str], None] | None = None) -> None:
        self.sessions, self.grader, self.settings, self.metrics = sessions, grader, settings, metrics
        self.queued = queued or (lambda submission_id: self.wake())  # a bulk regrade queued this submission
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.lanes = None if grader is None or not grading_threads else Lanes(
            sessions=sessions, grader=grader, lane_devices=settings.lane_devices(), lane_threads=grading_threads,
            fast_threads=settings.fast_workers, lease_s=settings.lease_s, max_attempts=settings.max_attempts,
            metrics=metrics)
        self.grading_threads = self.lanes.sandbox_slots if self.lanes is not None else 0

    def start(self) -> None:
        if self.lanes is not None:
            self.lanes.start()
        self._threads.append(threading.Thread(target=self._webhook_loop, name="webhooks", daemon=True))
        self._threads.append(threading.Thread(target=self._regrade_loop, name="regrades", daemon=True))
        self._threads.append(threading.Thread(target=self._lti_loop, name="lti", daemon=True))
        self._threads.append(threading.Thread(target=self._speed_sweep_loop, name="speed-sweep", daemon=True))
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=2)
        if self.lanes is not None:
            self.lanes.stop()
        elif self.grader is not None:
            self.grader.close()

    def wake(self) -> None:
        """A submission was stored: don't wait for the next poll."""
        if self.lanes is not None:
            self.lanes.wake()

    def _webhook_loop(self) -> None:
        while not self._stop.wait(0.5):
            try:
                deliver_due(self.sessions, allowed_hosts=self.settings.webhook_allowed_hosts,
                            timeout_s=self.settings.webhook_timeout_s, backoff_s=self.settings.webhook_backoff_s,
                            legacy_signature=self.settings.webhook_legacy_signature,
                            on_attempt=lambda ok: self.metrics.webhooks.labels("delivered" if ok else "failed").inc())
            except Exception:  # noqa: BLE001
                log.exception("webhook delivery loop failed")

    def _regrade_loop(self) -> None:
        while not self._stop.wait(1.0):
            try:
                with self.sessions() as session:
                    for submission_id in regrades.advance(session, window=self.settings.regrade_window):
                        self.queued(submission_id)
            except Exception:  # noqa: BLE001 - the database may be restarting: the job resumes at the next step
                log.exception("bulk regrade step failed")

    def _lti_loop(self) -> None:
        """Scores to the LMSs and rosters from them: its own outbox and retries, apart from webhooks."""
        keeper = Housekeeper(self.sessions, self.settings,
                             on_score=lambda ok: self.metrics.lti_scores.labels("posted" if ok else "failed").inc())
        while not self._stop.wait(0.5):
            try:
                keeper.run_once()
            except Exception:  # noqa: BLE001
                log.exception("LTI loop failed")

    def _speed_sweep_loop(self) -> None:
        """At start, then every SWEEP_EVERY_S: the API process runs it in both modes (`serve` with
        its lanes, or beside Celery workers), so a card whose worker died is settled either way."""
        sweeper = SpeedSweeper(self.sessions, budget_s=speed_budget_s(self.settings.limits))
        while True:
            try:
                sweeper.sweep_once()
            except Exception:  # noqa: BLE001 - the database may be restarting: the next sweep takes them
                log.exception("speed card sweep failed")
            if self._stop.wait(SWEEP_EVERY_S):
                return
