"""Bulk regrades: every graded submission of an assignment, or of an exercise version, graded
again. A job is rows in the database (its items move pending -> queued -> done), so it survives
a restart and resumes where it was; the service's pool advances it a window at a time, so a bulk
regrade never fills the queue that students submit to."""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import CursorResult, and_, func, select, update
from sqlalchemy.orm import Session

from service.db import store
from service.db.base import utcnow
from service.db.models import RegradeItem, RegradeJob, ReportRow, Submission
from service.status import FINAL_STATUSES, SubmissionStatus

# The reports a grading writes (a TA's review, or a later revision, is not a regrade's outcome).
_GRADING_REASONS = ("initial", "regrade")


class NothingToRegrade(LookupError):
    """The scope matches no graded submission of the course."""


@dataclass(frozen=True)
class Failure:
    """A done item whose regrade came out not_gradable (our failure: the sandbox or the infrastructure):
    a TA looks at it, and can regrade it again. `current_seq` is the report that counts now: the earlier
    good one it kept, or the failed one itself when there was no good one to keep."""

    submission_id: str
    student_id: str | None
    report_seq: int
    current_seq: int | None
    message: str


@dataclass(frozen=True)
class Progress:
    job: RegradeJob
    pending: int
    queued: int
    done: int
    failed: int = 0  # of the done ones: their regrade came out not_gradable (failures() lists them)

    @property
    def total(self) -> int:
        return self.pending + self.queued + self.done


def _scope(job_query, *, assignment: str | None, exercise_id: str | None, exercise_version: int | None):
    if assignment is not None:
        return job_query.where(RegradeJob.scope == "assignment", RegradeJob.assignment == assignment)
    return job_query.where(RegradeJob.scope == "exercise", RegradeJob.exercise_id == exercise_id,
                           RegradeJob.exercise_version == exercise_version)


def start(session: Session, course_id: str, *, assignment: str | None = None, exercise_id: str | None = None,
          exercise_version: int | None = None, requested_by: str = "") -> tuple[RegradeJob, bool]:
    """Start a bulk regrade, or return the one already running for the same scope (idempotent).
    Returns (job, created)."""
    if (assignment is None) == (exercise_id is None) or (exercise_id is not None and exercise_version is None):
        raise ValueError("give either an assignment, or an exercise and its version")
    running = session.scalar(_scope(select(RegradeJob).where(RegradeJob.course_id == course_id,
                                                             RegradeJob.status == "running"),
                                    assignment=assignment, exercise_id=exercise_id, exercise_version=exercise_version))
    if running is not None:
        return running, False
    matching = select(Submission.id).where(Submission.course_id == course_id, Submission.status.in_(FINAL_STATUSES))
    if assignment is not None:
        matching = matching.where(Submission.assignment == assignment)
    else:
        matching = matching.where(Submission.exercise_id == exercise_id,
                                  Submission.exercise_version == exercise_version)
    last_seq = (select(ReportRow.submission_id, func.max(ReportRow.seq).label("seq"))
                .group_by(ReportRow.submission_id).subquery())
    rows = session.execute(select(Submission.id, last_seq.c.seq)
                           .join(last_seq, last_seq.c.submission_id == Submission.id)
                           .where(Submission.id.in_(matching)).order_by(Submission.created_at, Submission.id)).all()
    if not rows:
        raise NothingToRegrade("no graded submission matches")
    job = RegradeJob(id=uuid.uuid4().hex, course_id=course_id, scope="assignment" if assignment else "exercise",
                     assignment=assignment, exercise_id=exercise_id, exercise_version=exercise_version,
                     status="running", total=len(rows), requested_by=requested_by)
    session.add(job)
    session.flush()
    session.add_all(RegradeItem(job_id=job.id, submission_id=sid, state="pending", seq_before=seq or 0) for sid,
                    seq in rows)
    session.commit()
    return job, True


def progress(session: Session, job: RegradeJob) -> Progress:
    counts = dict(session.execute(select(RegradeItem.state, func.count()).where(RegradeItem.job_id == job.id)
                                  .group_by(RegradeItem.state)).all())
    failed = session.scalar(select(func.count()).select_from(_failed(job).subquery())) or 0
    return Progress(job, counts.get("pending", 0), counts.get("queued", 0), counts.get("done", 0), failed)


def failures(session: Session, job: RegradeJob, limit: int = 100) -> list[Failure]:
    """The job's failed items (at most `limit`, in submission order), with what failed."""
    rows = session.execute(_failed(job).add_columns(Submission.student_id, Submission.current_report_id,
                                                    ReportRow.report["message"].as_string())
                           .join(Submission, Submission.id == ReportRow.submission_id)
                           .order_by(Submission.created_at, Submission.id).limit(limit)).all()
    current = dict(session.execute(select(ReportRow.id, ReportRow.seq)
                                   .where(ReportRow.id.in_([r.current_report_id for r in rows]))).all())
    return [Failure(submission_id=r.submission_id, student_id=r.student_id, report_seq=r.seq,
                    current_seq=current.get(r.current_report_id), message=r[-1] or "") for r in rows]


def _failed(job: RegradeJob):
    """The done items whose regrade came out not_gradable, as (submission_id, seq) of that report: the
    newest grading report since the job started (a later regrade of the submission, a TA's, supersedes it:
    one that graded clears the failure). Computed from the reports, so nothing more is stored."""
    newest = (select(ReportRow.submission_id.label("submission_id"), func.max(ReportRow.seq).label("seq"))
              .join(RegradeItem, and_(RegradeItem.submission_id == ReportRow.submission_id,
                                      RegradeItem.job_id == job.id))
              .where(RegradeItem.state == "done", ReportRow.seq > RegradeItem.seq_before,
                     ReportRow.reason.in_(_GRADING_REASONS))
              .group_by(ReportRow.submission_id).subquery())
    return (select(ReportRow.submission_id, ReportRow.seq)
            .join(newest, and_(newest.c.submission_id == ReportRow.submission_id, newest.c.seq == ReportRow.seq))
            .where(ReportRow.status == SubmissionStatus.not_gradable))


def jobs(session: Session, course_id: str, limit: int = 50) -> list[RegradeJob]:
    return list(session.scalars(select(RegradeJob).where(RegradeJob.course_id == course_id)
                                .order_by(RegradeJob.created_at.desc()).limit(limit)))


def advance(session: Session, *, window: int) -> list[str]:
    """One step of every running job: mark done what was regraded, then queue pending items until
    `window` of the job's are in the queue. Returns the submission ids it queued (to wake workers).
    Safe to run from several processes: every change is a conditional UPDATE."""
    queued_now: list[str] = []
    for job in list(session.scalars(select(RegradeJob).where(RegradeJob.status == "running"))):
        _mark_done(session, job)
        in_flight = session.scalar(select(func.count()).select_from(RegradeItem)
                                   .where(RegradeItem.job_id == job.id, RegradeItem.state == "queued")) or 0
        room = max(0, window - in_flight)
        pending = list(session.scalars(select(RegradeItem.submission_id)
                                       .where(RegradeItem.job_id == job.id, RegradeItem.state == "pending")
                                       .order_by(RegradeItem.submission_id).limit(room))) if room else []
        for submission_id in pending:
            # Queued by us now, or already in the queue (a restart between the two writes, a TA's own
            # regrade): either way a regrade report will come, which is what `done` waits for.
            if store.request_regrade(session, submission_id):
                queued_now.append(submission_id)
            session.execute(update(RegradeItem).where(RegradeItem.job_id == job.id,
                                                      RegradeItem.submission_id == submission_id,
                                                      RegradeItem.state == "pending").values(state="queued"))
            session.commit()
        if not pending and not in_flight:
            left = session.scalar(select(func.count()).select_from(RegradeItem)
                                  .where(RegradeItem.job_id == job.id, RegradeItem.state != "done")) or 0
            if left == 0:
                session.execute(update(RegradeJob).where(RegradeJob.id == job.id, RegradeJob.status == "running")
                                .values(status="done", finished_at=utcnow(), updated_at=utcnow()))
                session.commit()
    return queued_now


def _mark_done(session: Session, job: RegradeJob) -> None:
    """Items whose submission is final again with a grading report newer than the job's start. Pending
    ones too: a step that queued one and died before noting it, or a TA's own regrade, already did it."""
    regraded = (select(ReportRow.id).where(ReportRow.submission_id == RegradeItem.submission_id,
                                           ReportRow.seq > RegradeItem.seq_before,
                                           ReportRow.reason.in_(_GRADING_REASONS))
                .exists())
    final = select(Submission.id).where(Submission.id == RegradeItem.submission_id,
                                        Submission.status.in_(FINAL_STATUSES)).exists()
    # an UPDATE gives a CursorResult (Session.execute's stubs say Result)
    result = cast(CursorResult[Any], session.execute(
        update(RegradeItem).where(and_(RegradeItem.job_id == job.id, RegradeItem.state.in_(("pending", "queued")),
                                       regraded, final)).values(state="done")
        .execution_options(synchronize_session=False)))
    if result.rowcount:
        session.execute(update(RegradeJob).where(RegradeJob.id == job.id).values(updated_at=utcnow()))
    session.commit()
