"""Persisting TA decisions: each issues the next report (reason `review`), makes it current,
records who decided what and why, and notifies the platform's webhook."""
from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any, cast

from sqlalchemy import CursorResult, exists, func, select, update
from sqlalchemy.orm import Session

from service.db import store
from service.db.base import utcnow
from service.db.carry import evidence_digest
from service.db.models import ApiKey, Decision, ReportRow, ReviewFlag, Submission
from service.report import Report
from service.review import DecisionRequest, apply_decision
from service.status import FINAL_STATUSES, SubmissionStatus


class NotDecidable(Exception):
    """The submission is not graded (queued or running): there is nothing to decide on yet."""


class StaleDecision(Exception):
    """The decision was made on an earlier report (`report_seq`) whose item or veto differs from
    the current report's (a regrade landed meanwhile): the TA decided on evidence that is no longer
    the report's. Nothing is recorded."""

    def __init__(self, seen: int, current: int) -> None:
        super().__init__(f"report {seen}")
        self.seen, self.current = seen, current


def actor_of(key: ApiKey) -> str:
    """Who decided, as the audit records it (the API and the review pages alike)."""
    return f"key:{key.id}" + (f" ({key.label})" if key.label else "")


def decide(session: Session, submission_id: str, request: DecisionRequest, *, actor: str) -> Decision:
    # Take the row first (PostgreSQL row lock / SQLite write lock) so no grading or other decision
    # can change the current report between our read and our write.
    lock = (update(Submission).where(Submission.id == submission_id, Submission.status.in_(FINAL_STATUSES),
                                     Submission.current_report_id.is_not(None))
            .values(updated_at=utcnow()))
    locked = cast(CursorResult[Any], session.execute(lock))
    if locked.rowcount != 1:
        session.rollback()
        raise NotDecidable(submission_id)
    row = session.get_one(Submission, submission_id)
    current = session.get_one(ReportRow, row.current_report_id)
    if request.report_seq is not None and request.report_seq != current.seq:
        seen = session.scalar(select(ReportRow).where(ReportRow.submission_id == row.id,
                                                      ReportRow.seq == request.report_seq))
        # Later reports that left the target as it was (a speed card, another target's decision, a
        # regrade with the same evidence) do not make the decision stale; a TA's own mark on it is no
        # evidence (carry.evidence_digest).
        if seen is None or (evidence_digest(seen.report, request.target)
                            != evidence_digest(current.report, request.target)):
            session.rollback()
            raise StaleDecision(request.report_seq, current.seq)
    report, before, after = apply_decision(Report.model_validate(current.report), request, actor=actor)
    seq = (session.scalar(select(func.max(ReportRow.seq)).where(ReportRow.submission_id == row.id)) or 0) + 1
    issued = ReportRow(submission_id=row.id, seq=seq, reason="review", status=report.status,
                       report=report.to_record())
    session.add(issued)
    session.flush()
    row.current_report_id = issued.id
    store.on_current_report(session, row, issued.report)
    decision = Decision(submission_id=row.id, report_id=current.id, new_report_id=issued.id, target=request.target,
                        before=before, after=after, reason=request.reason, actor=actor)
    session.add(decision)
    session.flush()
    store.notify(session, row, issued, event="submission.decision_recorded", decision_id=decision.id)
    session.commit()
    return decision


def decisions_for(session: Session, submission_id: str) -> list[Decision]:
    return list(session.scalars(select(Decision).where(Decision.submission_id == submission_id).order_by(Decision.id)))


def review_queue(session: Session, course_id: str, *, exercise: str | None = None, kind: str | None = None,
                 graded_before: datetime | None = None, limit: int = 200) -> list[tuple[Submission, list[str]]]:
    """Graded submissions of a course whose current report waits for a TA, oldest first, with the
    reasons (`veto:<rule>`, `item:<id>`). Filters: exercise, flag kind (a veto rule or
    `needs_review`), and graded before a time (age). All in SQL, on the review columns."""
    query = (select(Submission).where(Submission.course_id == course_id, Submission.status == SubmissionStatus.graded,
                                      Submission.needs_review.is_(True))
             .order_by(Submission.graded_at, Submission.created_at, Submission.id).limit(limit))
    if exercise:
        query = query.where(Submission.exercise_id == exercise)
    if kind:
        query = query.where(exists().where(ReviewFlag.submission_id == Submission.id, ReviewFlag.kind == kind))
    if graded_before is not None:
        query = query.where(Submission.graded_at <= graded_before)
    rows = list(session.scalars(query))
    reasons: dict[str, list[str]] = {row.id: [] for row in rows}
    flags: Iterable[ReviewFlag] = (
        session.scalars(select(ReviewFlag).where(ReviewFlag.submission_id.in_(list(reasons)))) if rows else [])
    for flag in flags:
        reasons[flag.submission_id].append(flag.target)
    # Vetoes before items, as the report lists them.
    return [(row, sorted(reasons[row.id], key=lambda t: (not t.startswith("veto:"), t))) for row in rows]


def course_decisions(session: Session, course_id: str) -> list[tuple[Decision, Submission]]:
    """Every decision on the course's submissions, oldest first (the CSV export)."""
    return [(decision, submission) for decision, submission in session.execute(
        select(Decision, Submission).join(Submission, Submission.id == Decision.submission_id)
        .where(Submission.course_id == course_id).order_by(Decision.created_at, Decision.id))]
