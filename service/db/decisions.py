"""Persisting TA decisions: each issues the next report (reason `review`), makes it current,
records who decided what and why, and notifies the platform's webhook."""
from __future__ import annotations

import json

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from service.db.base import utcnow
from service.db.models import Decision, ReportRow, Submission, WebhookDelivery
from service.report import Report
from service.review import DecisionRequest, apply_decision

FINAL = ("graded", "not_gradable")


class NotDecidable(Exception):
    """The submission is not graded (queued or running): there is nothing to decide on yet."""


def decide(session: Session, submission_id: str, request: DecisionRequest, *, actor: str) -> Decision:
    # Take the row first (PostgreSQL row lock / SQLite write lock) so no grading or other decision
    # can change the current report between our read and our write.
    locked = session.execute(update(Submission).where(Submission.id == submission_id, Submission.status.in_(FINAL),
                                                      Submission.current_report_id.is_not(None))
                             .values(updated_at=utcnow()))
    if locked.rowcount != 1:
        session.rollback()
        raise NotDecidable(submission_id)
    row = session.get(Submission, submission_id)
    current = session.get(ReportRow, row.current_report_id)
    report, before, after = apply_decision(Report.model_validate(current.report), request, actor=actor)
    seq = (session.scalar(select(func.max(ReportRow.seq)).where(ReportRow.submission_id == row.id)) or 0) + 1
    issued = ReportRow(submission_id=row.id, seq=seq, reason="review", status=report.status,
                       report=json.loads(report.to_json()))
    session.add(issued)
    session.flush()
    row.current_report_id = issued.id
    decision = Decision(submission_id=row.id, report_id=current.id, new_report_id=issued.id, target=request.target,
                        before=before, after=after, reason=request.reason, actor=actor)
    session.add(decision)
    if row.callback_url:
        session.add(WebhookDelivery(submission_id=row.id, report_id=issued.id, url=row.callback_url, next_attempt_at=utcnow()))
    session.commit()
    return decision


def decisions_for(session: Session, submission_id: str) -> list[Decision]:
    return list(session.scalars(select(Decision).where(Decision.submission_id == submission_id).order_by(Decision.id)))


def review_queue(session: Session, course_id: str, *, exercise: str | None = None, limit: int = 200) -> list[tuple[Submission, list[str]]]:
    """Graded submissions of a course whose current report waits for a TA, with the reasons."""
    query = (select(Submission, ReportRow).join(ReportRow, ReportRow.id == Submission.current_report_id)
             .where(Submission.course_id == course_id, Submission.status == "graded").order_by(Submission.created_at))
    if exercise:
        query = query.where(Submission.exercise_id == exercise)
    waiting = []
    for submission, report in session.execute(query).all():
        reasons = [f"veto:{v['rule']}" for v in report.report.get("vetoes", []) if v.get("status") == "suspected"]
        reasons += [f"item:{i['id']}" for i in report.report.get("items", []) if i.get("status") == "needs_review"]
        if reasons:
            waiting.append((submission, reasons))
            if len(waiting) >= limit:
                break
    return waiting
