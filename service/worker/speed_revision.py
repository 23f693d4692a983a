"""The worker's side of the speed card after the grade (service/grading/speed_card.py): store the
card as a report revision once the grade itself is written.

The card is measured in a thread of its own while the grading goes on, so it may come before the
worker has written the graded report: `on_speed` waits (at most `wait_s`) for `graded`, and writes
nothing if the report was never written (the lease was lost: the grading that holds it now has
its own card).

A card whose process died before storing it (a crash or restart of `serve` or of a Celery worker
while the kernel was being timed) would leave the report `pending` for good: `SpeedSweeper`, run
by the API process's pool at start and every minute, gives each report pending for longer than
any live process could take (`speed_budget_s`) the revision "not measured: the timing run was
interrupted", through the same store.add_speed_revision.
"""
from __future__ import annotations

import logging
import threading
from datetime import timedelta
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from sandbox.contract import Limits
from service.db import store
from service.db.base import utcnow
from service.db.models import ReportRow
from service.messages import render
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

    def on_speed(self, card: Performance, translations: dict[str, Performance]) -> None:
        try:
            if not self._written.wait(self._wait_s) or self._report_id is None:
                return
            with self._sessions() as session:
                revision = store.add_speed_revision(
                    session, self._submission_id, card.model_dump(mode="json"), graded_report_id=self._report_id,
                    translations={lang: other.model_dump(mode="json") for lang, other in translations.items()})
            if revision is not None:
                self.revision_id = revision.id
        except Exception:  # noqa: BLE001 - the grade stands; the card stays `pending`
            log.exception("could not store the speed card of %s", self._submission_id)
        finally:
            self.done.set()


SPEED_WATCH_MARGIN_S = 10.0  # Grader._speed_wait_s: a reuse watches the memo this long past the budget
SWEEP_MARGIN_S = 120.0  # beyond that: the card's way into the database, clocks of several hosts
SWEEP_EVERY_S = 60.0
SWEEP_BATCH = 200


def speed_budget_s(limits: Limits) -> float:
    """How long after its report was written a live process may still store a pending card: the
    speed phase's budget and its kill (a run's own card), or a reuse's watch on the memo (the
    same plus SPEED_WATCH_MARGIN_S), and SWEEP_MARGIN_S. Past it, the card's process is gone."""
    return limits.speed_timeout_s + limits.kill_grace_s + SPEED_WATCH_MARGIN_S + SWEEP_MARGIN_S


def interrupted_card(pending: dict[str, Any], language: str) -> dict[str, Any]:
    """The pending card as `not_measured`, saying the timing was interrupted (in the report's
    language); its shape, bytes and baseline label stay, no figures are added."""
    return {**pending, "status": "not_measured", "reason": render("speed.interrupted", language)}


class SpeedSweeper:
    """Marks the speed cards whose process died as not measured (module docstring). Reports are
    looked at by id from a floor that only moves past reports older than the budget, so after the
    first sweep (every report since the database began) each sweep reads only the last minutes'
    reports. Several processes may sweep at once: store.add_speed_revision writes over a `pending`
    card only, so each card gets one revision, theirs or the real one if it came after all."""

    def __init__(self, sessions: sessionmaker[Session], *, budget_s: float) -> None:
        self.sessions, self.budget_s = sessions, budget_s
        self.floor = 0  # every report with an id up to this one is settled (swept, or never pending)

    def sweep_once(self) -> list[int]:
        """One sweep; the ids of the revisions it wrote."""
        written_before = utcnow() - timedelta(seconds=self.budget_s)
        revised: list[int] = []
        after = self.floor
        while True:
            with self.sessions() as session:
                stale = store.pending_speed_cards(session, written_before=written_before, after_id=after,
                                                  limit=SWEEP_BATCH)
            for submission_id, report_id in stale:
                revision = self._interrupt(submission_id, report_id)
                if revision is not None:
                    revised.append(revision)
            if len(stale) < SWEEP_BATCH:
                break
            after = stale[-1][1]
        with self.sessions() as session:  # only once every one of them is settled (an exception: next time)
            self.floor = store.reports_settled_through(session, written_before=written_before, after_id=self.floor)
        if revised:
            log.warning("marked %d speed cards not measured: their timing was interrupted", len(revised))
        return revised

    def _interrupt(self, submission_id: str, report_id: int) -> int | None:
        with self.sessions() as session:
            report = session.get(ReportRow, report_id)
            pending = (report.report.get("performance") if report is not None else None) or {}
            if pending.get("status") != "pending":
                return None
            assert report is not None
            card = interrupted_card(pending, str(report.report.get("language") or "zh"))
            said = report.report.get("translations") or {}
            translations = {lang: interrupted_card(other, lang) for lang, texts in said.items()
                            if isinstance(texts, dict) and isinstance(other := texts.get("performance"), dict)
                            and other.get("status") == "pending"}  # its pending card in that language
            revision = store.add_speed_revision(session, submission_id, card, translations=translations)
            return revision.id if revision is not None else None
