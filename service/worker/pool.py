"""The in-process worker pool of `kernelgrade serve`: grading threads that claim submissions from
the database, one thread that delivers webhooks and one that posts LTI scores and syncs rosters.
Nothing else to start on one machine."""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from sqlalchemy.orm import Session, sessionmaker

from service.config import Settings
from service.db import regrades, store
from service.grading.pipeline import Grader
from service.lti.housekeeping import Housekeeper
from service.worker.grading import grade_claimed
from service.worker.metrics import Metrics
from service.worker.webhooks import deliver_due

log = logging.getLogger("kernelgrade.pool")


class InProcessPool:
    def __init__(self, *, sessions: sessionmaker[Session], grader: Grader | None, settings: Settings, metrics: Metrics,
                 grading_threads: int, queued: Callable[[str], None] | None = None) -> None:
        self.sessions, self.grader, self.settings, self.metrics = sessions, grader, settings, metrics
        self.queued = queued or (lambda submission_id: self.wake())  # a bulk regrade queued this submission
        self.grading_threads = grading_threads if grader is not None else 0
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._threads: list[threading.Thread] = []
        self.busy = 0
        self._busy_lock = threading.Lock()

    def start(self) -> None:
        if self.grader is not None and self.grading_threads:
            try:
                self.grader.start()  # warm sandboxes; grading still works cold if this fails
            except Exception:  # noqa: BLE001
                log.exception("could not start the warm sandbox pool")
        for i in range(self.grading_threads):
            self._threads.append(threading.Thread(target=self._grade_loop, name=f"grader-{i}", daemon=True))
        self._threads.append(threading.Thread(target=self._webhook_loop, name="webhooks", daemon=True))
        self._threads.append(threading.Thread(target=self._regrade_loop, name="regrades", daemon=True))
        self._threads.append(threading.Thread(target=self._lti_loop, name="lti", daemon=True))
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        for thread in self._threads:
            thread.join(timeout=2)
        if self.grader is not None:
            self.grader.close()

    def wake(self) -> None:
        """A submission was stored: don't wait for the next poll."""
        self._wake.set()

    @property
    def free_slots(self) -> int:
        return self.grading_threads - self.busy

    def _grade_loop(self) -> None:
        grader = self.grader
        assert grader is not None  # start() runs grading threads only with a grader
        while not self._stop.is_set():
            try:
                with self.sessions() as session:
                    claim = store.claim(session, lease_s=self.settings.lease_s)
            except Exception:  # noqa: BLE001 - the database may be restarting: try again shortly
                log.exception("claiming failed")
                self._stop.wait(2)
                continue
            if claim is None:
                self._wake.wait(1.0)
                self._wake.clear()
                continue
            with self._busy_lock:
                self.busy += 1
            try:
                grade_claimed(self.sessions, grader, claim, lease_s=self.settings.lease_s,
                              max_attempts=self.settings.max_attempts, metrics=self.metrics)
            except Exception:  # noqa: BLE001 - the lease expires and the submission is retried
                log.exception("worker failed on %s", claim.submission_id)
            finally:
                with self._busy_lock:
                    self.busy -= 1

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
