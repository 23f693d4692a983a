"""Grade one claimed submission: the step both the in-process pool and Celery workers run.

A heartbeat renews the lease while the sandbox runs; the report is written only if the lease is
still ours (see store.finish), so a submission retried after a dead worker still ends with
exactly one current report.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from sqlalchemy.orm import Session, sessionmaker

from service.db import store
from service.db.models import Submission
from service.exercises import Exercise, ExerciseNotFound
from service.grading.not_gradable import not_gradable_report
from service.grading.pipeline import Grader
from service.grading.speed_card import OnSpeed
from service.grading.steps import Step
from service.messages import report_language
from service.report import ExerciseRef, Report
from service.student_view import detected_language
from service.submission import Submission as SubmissionBody
from service.worker.metrics import Metrics
from service.worker.speed_revision import SpeedRevision

log = logging.getLogger("kernelgrade.worker")


class _Heartbeat:
    """Renews the lease every third of it, for at most `max_s`: a grading that runs past every
    budget it has (a bug of ours) lets its lease expire, so the submission is retried and, after
    `max_attempts`, reported not_gradable, instead of being held forever."""

    def __init__(self, sessions: sessionmaker[Session], claim: store.Claim, lease_s: float, max_s: float) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(sessions, claim, lease_s, max_s), daemon=True,
                                        name=f"lease-{claim.submission_id[:8]}")

    def _run(self, sessions: sessionmaker[Session], claim: store.Claim, lease_s: float, max_s: float) -> None:
        deadline = time.monotonic() + max_s
        while not self._stop.wait(lease_s / 3):
            if time.monotonic() > deadline:
                log.error("grading %s ran past its %.0f s budget: no longer renewing its lease", claim.submission_id,
                          max_s)
                return
            try:
                with sessions() as session:
                    if not store.renew_lease(session, claim, lease_s=lease_s):
                        log.warning("lost the lease on %s", claim.submission_id)
                        return
            except Exception:  # noqa: BLE001 - a failed renewal is retried at the next beat
                log.exception("lease renewal failed for %s", claim.submission_id)

    def __enter__(self) -> _Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


OnStep = Callable[[Step, list[tuple[str, str]]], bool]


def _stepped(grader: Grader, body: SubmissionBody, row: Submission, *, regrade: bool, on_step: OnStep,
             on_speed: OnSpeed | None = None) -> Report | None:
    """`Grader.grade`, asking `on_step` before each blocking step (see grade_claimed)."""
    return grader.drive(body, submission_id=row.id, secret_seed=row.secret_seed, reuse=not regrade,
                        on_speed=on_speed, on_step=on_step)


# An exercise that left the catalogue after the submission was accepted: its report still needs a
# scale, the lesson's (DESIGN.md: 10 points, pass at 8).
_GONE_VERSION, _GONE_MAX_POINTS, _GONE_PASS_THRESHOLD = 0, 10.0, 8.0


def gave_up_report(row: Submission, exercise: Exercise | None, reason: str) -> Report:
    """The not_gradable report of a grading the worker gave up on (`exercise` None: it left the catalogue)."""
    spec = exercise.spec if exercise is not None else None
    return not_gradable_report(
        submission_id=row.id,
        exercise=ExerciseRef(id=row.exercise_id, version=spec.version if spec else _GONE_VERSION),
        max_points=spec.max_points if spec else _GONE_MAX_POINTS,
        pass_threshold=spec.pass_threshold if spec else _GONE_PASS_THRESHOLD,
        language=report_language(row.language or detected_language(row.body), spec.language if spec else "zh"),
        reason=reason)


def grade_claimed(sessions: sessionmaker[Session], grader: Grader, claim: store.Claim, *, lease_s: float,
                  max_attempts: int, metrics: Metrics | None = None, on_step: OnStep | None = None) -> str | None:
    """Grade a claimed submission and write its report. Returns the final status, or None if the
    lease was lost to another worker (nothing written). `on_step` (Celery's two queues): asked at
    each blocking step whether to take it here; False: the grading left this worker (handed to the
    sandbox queue, or parked), nothing is written and None returned."""
    with sessions() as session:
        row = session.get_one(Submission, claim.submission_id)  # claimed, and submissions are never deleted
        body = SubmissionBody.model_validate(row.body)
        # A regrade asks for a fresh run: never answer it from the verdict memo. A submission has
        # reports exactly when it has a current one (store.finish says why).
        regrade = row.current_report_id is not None
    started = time.monotonic()
    speed = SpeedRevision(sessions, row.id, wait_s=grader.max_grading_s())  # the speed card, after the grade
    try:
        exercise = grader.catalog.get(body.exercise)
    except ExerciseNotFound as exc:  # the exercise left the catalog after the submission was accepted
        report = gave_up_report(row, None, str(exc))
    else:
        if claim.attempt > max_attempts:
            report = gave_up_report(row, exercise,
                                    f"grading was interrupted {claim.attempt - 1} times (worker died or timed out)")
        else:
            with _Heartbeat(sessions, claim, lease_s, grader.max_grading_s()):
                try:
                    if on_step is None:
                        report = grader.grade(body, submission_id=row.id, secret_seed=row.secret_seed,
                                              reuse=not regrade, on_speed=speed.on_speed)
                    else:
                        stepped = _stepped(grader, body, row, regrade=regrade, on_step=on_step,
                                           on_speed=speed.on_speed)
                        if stepped is None:
                            return None
                        report = stepped
                except Exception as exc:  # noqa: BLE001 - our bug must become not_gradable, never a lost submission
                    log.exception("grading %s failed", row.id)
                    report = gave_up_report(row, exercise, f"{type(exc).__name__}: {exc}")
    written, written_id = None, None
    try:
        with sessions() as session:
            written = store.finish(session, claim, report)
            written_id = written.id if written is not None else None
    finally:
        speed.graded(written_id)
    if written is None:
        log.warning("lease on %s was lost; discarded this worker's report", claim.submission_id)
        return None
    if metrics is not None:
        metrics.graded(report, time.monotonic() - started)
    return report.status
