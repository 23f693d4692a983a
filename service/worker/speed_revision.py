"""The worker's side of the speed card after the grade (service/grading/speed_card.py): store the
card as a report revision once the grade itself is written.

The card is measured in a thread of its own while the grading goes on, so it may come before the
worker has written the graded report: `on_speed` waits (at most `wait_s`) for `graded`, and writes
nothing if the report was never written (the lease was lost: the grading that holds it now has
its own card).
"""
from __future__ import annotations

import logging
import threading

from sqlalchemy.orm import Session, sessionmaker

from service.db import store
from service.report import Performance

log = logging.getLogger("kernelgrade.worker")


class SpeedRevision:
    def __init__(self, sessions: sessionmaker[Session], submission_id: str, *, wait_s: float) -> None:
        self._sessions = sessions
        self._submission_id = submission_id
        self._wait_s = wait_s
        self._written = threading.Event()
        self._report_id: int | None = None
        self.revision_id: int | None = None  # the revision's report id, once stored (tests read it)
        self.done = threading.Event()  # set once on_speed has finished, stored or not

    def graded(self, report_id: int | None) -> None:
        """store.finish has written the graded report (its id), or wrote nothing (None: the lease was lost)."""
        self._report_id = report_id
        self._written.set()

    def on_speed(self, card: Performance) -> None:
        try:
            if not self._written.wait(self._wait_s) or self._report_id is None:
                return
            with self._sessions() as session:
                revision = store.add_speed_revision(session, self._submission_id, card.model_dump(mode="json"),
                                                    graded_report_id=self._report_id)
            if revision is not None:
                self.revision_id = revision.id
        except Exception:  # noqa: BLE001 - the grade stands; the card stays `pending`
            log.exception("could not store the speed card of %s", self._submission_id)
        finally:
            self.done.set()
