"""The queries the API and the workers share. The database is the source of truth for every
submission: a submission is queued when it is stored, a worker holds it under a lease, and a
report becomes current only if the worker still holds the lease when it writes."""
from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import CursorResult, delete, func, insert, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from service.dashboard.facts import report_facts
from service.db.base import utcnow
from service.db.carry import carry_decisions
from service.db.models import ApiKey, Course, ReportFact, ReportRow, ReviewFlag, Submission, WebhookDelivery
from service.grades.policy import CoursePolicy, PolicyUpdate, grade_columns
from service.lti import scores as lti_scores
from service.report import Report
from service.status import FINAL_STATUSES, IN_PROGRESS_STATUSES, SubmissionStatus
from service.submission import Submission as SubmissionBody

SCOPES = ("submit", "read", "review", "admin")
KEY_PREFIX = "kg"


class IdempotencyConflict(Exception):
    """The same Idempotency-Key was used with a different body."""


# --- courses and keys ------------------------------------------------------------------------

def create_course(session: Session, course_id: str, name: str) -> Course:
    course = Course(id=course_id, name=name, webhook_secret=new_webhook_secret())
    session.add(course)
    session.commit()
    return course


def existing_course(session: Session, course_id: str) -> Course:
    course = session.get(Course, course_id)
    if course is None:
        raise LookupError(f"no course {course_id!r}")
    return course


def course_policy(session: Session, course_id: str) -> CoursePolicy:
    course = existing_course(session, course_id)
    return CoursePolicy(grade_policy=course.grade_policy, veto_policy=course.veto_policy,
                        hint_cost=course.hint_cost or 0.0)


def set_course_policy(session: Session, course_id: str, update: PolicyUpdate) -> CoursePolicy:
    """Change the course's policy; the LMS scores it changes are queued in the same transaction (the
    gradebook and the exports read the policy when asked, but the LMS keeps what it was sent).
    `hint_cost` changes no grade: it prices levels taken from now on."""
    course = existing_course(session, course_id)
    before = course_policy(session, course_id)
    for field, value in update.model_dump(exclude_none=True).items():
        setattr(course, field, value)
    after = course_policy(session, course_id)
    if (after.grade_policy, after.veto_policy) != (before.grade_policy, before.veto_policy):
        session.flush()
        lti_scores.requeue_course(session, course_id, after)
    session.commit()
    return after


def _hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def create_key(session: Session, *, course_id: str, scopes: list[str], label: str = "") -> tuple[ApiKey, str]:
    """Returns the row and the full key, which is shown once and never stored."""
    unknown = sorted(set(scopes) - set(SCOPES))
    if unknown or not scopes:
        raise ValueError(f"unknown scopes {unknown}; choose from {', '.join(SCOPES)}" if unknown
                         else "give at least one scope")
    existing_course(session, course_id)
    key_id = secrets.token_hex(6)
    secret = secrets.token_urlsafe(32)
    row = ApiKey(id=key_id, course_id=course_id, secret_hash=_hash_secret(secret), scopes=sorted(set(scopes)),
                 label=label)
    session.add(row)
    session.commit()
    return row, f"{KEY_PREFIX}_{key_id}_{secret}"


def authenticate(session: Session, presented: str) -> ApiKey | None:
    parts = presented.split("_", 2)
    if len(parts) != 3 or parts[0] != KEY_PREFIX:
        return None
    row = session.get(ApiKey, parts[1])
    if row is None or row.revoked_at is not None:
        return None
    return row if hmac.compare_digest(row.secret_hash, _hash_secret(parts[2])) else None


def revoke_key(session: Session, key_id: str) -> bool:
    row = session.get(ApiKey, key_id)
    if row is None or row.revoked_at is not None:
        return False
    row.revoked_at = utcnow()
    session.commit()
    return True


# --- the course's webhook secret ------------------------------------------------------------

def new_webhook_secret() -> str:
    return secrets.token_hex(32)


def rotate_webhook_secret(session: Session, course_id: str) -> str:
    """Replace the course's webhook secret and return the new one. Every delivery from now on, retries of
    earlier reports included, is signed with it (webhooks sign when they send): the old one stops verifying."""
    course = existing_course(session, course_id)
    course.webhook_secret = new_webhook_secret()
    session.commit()
    return course.webhook_secret


# --- submissions -------------------------------------------------------------------------------

def body_digest(body: SubmissionBody, callback_url: str | None) -> str:
    canonical = json.dumps({"body": body.model_dump(), "callback_url": callback_url}, sort_keys=True,
                           ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def create_submission(session: Session, *, course_id: str, body: SubmissionBody, callback_url: str | None,
                      idempotency_key: str | None,
                      related: Callable[[Submission], list[object]] | None = None) -> tuple[Submission, bool]:
    """Store a submission (queued). Returns (row, created); an idempotent replay returns the original.
    `related` rows (an LTI launch's origin) are stored in the same transaction, before any worker sees it."""
    digest = body_digest(body, callback_url)
    if idempotency_key is not None:
        existing = session.scalar(select(Submission).where(Submission.course_id == course_id,
                                                           Submission.idempotency_key == idempotency_key))
        if existing is not None:
            if existing.body_sha256 != digest:
                raise IdempotencyConflict(idempotency_key)
            return existing, False
    student = body.student
    row = Submission(id=uuid.uuid4().hex, course_id=course_id, exercise_id=body.exercise, body=body.model_dump(),
                     body_sha256=digest, idempotency_key=idempotency_key, callback_url=callback_url,
                     feedback_token=secrets.token_urlsafe(32), secret_seed=secrets.randbits(62),
                     status=SubmissionStatus.queued,
                     assignment=body.assignment, student_id=student.id if student else None,
                     student_name=student.name if student else None, student_email=student.email if student else None,
                     attempt=body.attempt, external_ref=body.external_ref, language=body.language)
    session.add(row)
    try:
        if related is not None:
            session.flush()  # the submission first: the related rows refer to it
            session.add_all(related(row))
        session.commit()
    except IntegrityError:  # a concurrent request with the same key won the race
        session.rollback()
        if idempotency_key is None:
            raise
        return create_submission(session, course_id=course_id, body=body, callback_url=callback_url,
                                 idempotency_key=idempotency_key, related=related)
    return row, True


def queue_depth(session: Session) -> int:
    in_progress = Submission.status.in_(IN_PROGRESS_STATUSES)
    return session.scalar(select(func.count()).select_from(Submission).where(in_progress)) or 0


def counts_by_status(session: Session) -> dict[str, int]:
    return dict(session.execute(select(Submission.status, func.count()).group_by(Submission.status)).all())


@dataclass(frozen=True)
class Claim:
    submission_id: str
    token: str
    attempt: int


def _claimable(now: datetime):
    return or_(Submission.status == SubmissionStatus.queued,
               (Submission.status == SubmissionStatus.running) & (Submission.lease_expires_at < now))


def claim(session: Session, *, lease_s: float, submission_id: str | None = None) -> Claim | None:
    """Take one submission (a given one, or the oldest claimable) under a fresh lease.

    One conditional UPDATE picks, takes and counts it (its RETURNING: the id and the attempts it now
    counts); of two workers racing for the same row exactly one gets it back. On SQLite the
    statement runs under the database's write lock, so the oldest claimable row is taken whole;
    on PostgreSQL the subquery locks the row it picks and skips rows another claim has locked
    (SKIP LOCKED), so racing workers take different submissions instead of queueing on one and
    losing. A picked row that stopped being claimable (PostgreSQL re-reads it under the lock) gives
    no row: then claimable rows still there are tried again, at most 5 times. Works the same on
    SQLite (3.35 or later) and PostgreSQL.
    """
    for _ in range(5):
        now = utcnow()
        if submission_id is not None:
            target = Submission.id == submission_id
        else:
            oldest = select(Submission.id).where(_claimable(now)).order_by(Submission.created_at).limit(1)
            target = Submission.id == oldest.with_for_update(skip_locked=True).scalar_subquery()
        taken = session.execute(
            update(Submission)
            .where(target, _claimable(now))
            .values(status=SubmissionStatus.running, lease_token=(token := secrets.token_hex(16)),
                    lease_expires_at=now + timedelta(seconds=lease_s),
                    attempts=Submission.attempts + 1, updated_at=now)
            .returning(Submission.id, Submission.attempts)
        ).one_or_none()
        session.commit()
        if taken is not None:
            return Claim(taken.id, token, taken.attempts)
        query = select(Submission.id).where(_claimable(utcnow()))
        if submission_id is not None:
            query = query.where(Submission.id == submission_id)
        if session.scalar(query.limit(1)) is None:
            session.rollback()
            return None
    return None


def renew_lease(session: Session, claim_: Claim, *, lease_s: float) -> bool:
    result = cast(CursorResult[Any], session.execute(  # an UPDATE's result (the stubs say Result)
        update(Submission)
        .where(Submission.id == claim_.submission_id, Submission.lease_token == claim_.token,
               Submission.status == SubmissionStatus.running)
        .values(lease_expires_at=utcnow() + timedelta(seconds=lease_s))
    ))
    session.commit()
    return result.rowcount == 1


def hand_over(session: Session, claim_: Claim) -> bool:
    """Give a claimed submission back to the queue for another task to claim (Celery: its cheap
    part is done, its run goes to the sandbox queue), not counting this lease as an attempt: a
    claim that hands over is not a worker that died. False if the lease was no longer ours."""
    result = cast(CursorResult[Any], session.execute(  # an UPDATE's result (the stubs say Result)
        update(Submission)
        .where(Submission.id == claim_.submission_id, Submission.lease_token == claim_.token,
               Submission.status == SubmissionStatus.running)
        .values(status=SubmissionStatus.queued, lease_token=None, lease_expires_at=None,
                attempts=Submission.attempts - 1, updated_at=utcnow())
    ))
    session.commit()
    return result.rowcount == 1


def finish(session: Session, claim_: Claim, report: Report) -> ReportRow | None:
    """Write the report and make it current, only if this worker still holds the lease.

    One transaction: the report row, the submission's status and its current report, and the
    webhook delivery (if a callback was asked for). A worker that lost its lease writes nothing.
    A not_gradable regrade of a graded submission is written to the history only: the graded
    report stays current and the submission stays graded (our failure never replaces a grade);
    the course hears of it through a `submission.regrade_failed` webhook.
    """
    # The conditional UPDATE comes first: it takes the row (PostgreSQL) or the write lock
    # (SQLite), so nobody can re-claim between our check and our write.
    # RETURNING loads the updated row in the same statement (none when the lease was not ours),
    # over whatever this session held of it: current_report_id below must be the database's.
    row = session.scalars(
        update(Submission)
        .where(Submission.id == claim_.submission_id, Submission.lease_token == claim_.token,
               Submission.status == SubmissionStatus.running)
        .values(status=report.status, lease_token=None, lease_expires_at=None, updated_at=utcnow())
        .returning(Submission)
        .execution_options(populate_existing=True)
    ).one_or_none()
    if row is None:
        session.rollback()
        return None
    # Every report of a submission is written in a transaction that leaves a current report (here,
    # decisions, speed revisions; a failed regrade keeps the earlier one), and current_report_id
    # is never cleared: with none yet, the submission has no report, and nothing rewritten by
    # on_current_report (its facts and flags) exists either.
    first = row.current_report_id is None
    seq = 1 if first else (session.scalar(select(func.max(ReportRow.seq))
                                          .where(ReportRow.submission_id == row.id)) or 0) + 1
    if seq > 1:  # a regrade: the TA's decisions stay with the submission (service/db/carry.py)
        report = carry_decisions(session, row.id, report)
    report_row = ReportRow(submission_id=row.id, seq=seq, reason="initial" if seq == 1 else "regrade",
                           status=report.status, report=report.to_record())
    session.add(report_row)
    session.flush()
    if _keeps_earlier_grade(session, row, report):
        # Our failure never replaces a good grade: the regrade stays in the history (not current),
        # the graded report stays current (gradebook, passback, feedback), and it can be regraded again.
        row.status = SubmissionStatus.graded
        notify_regrade_failed(session, row, report_row)
        session.commit()
        return report_row
    row.current_report_id = report_row.id
    row.graded_at = utcnow()
    if row.first_graded_at is None:
        row.first_graded_at = row.graded_at
    on_current_report(session, row, report_row.report, first=first)
    notify(session, row, report_row, event="submission.graded" if seq == 1 else "submission.regraded")
    session.commit()
    return report_row


SPEED_EVENT = "submission.speed_measured"


def add_speed_revision(session: Session, submission_id: str, performance: dict[str, Any], *,
                       graded_report_id: int | None = None,
                       translations: dict[str, dict[str, Any]] | None = None) -> ReportRow | None:
    """The speed card measured after the grade (service/grading/speed_card.py), as the next report:
    reason `speed`, the current report with its `performance` replaced, made current, and the
    webhook event `submission.speed_measured`. Only over a current report whose card is `pending`
    (the graded report, or a TA decision issued on it meanwhile); else nothing (None): a second
    card got there first. `graded_report_id`: the report of the grading that measured the card;
    nothing either once a later grading (a regrade) wrote a report, which has a card of its own.
    `translations`: the same card in the report's other languages (by language); each of the
    report's translations gets its card from them, or none (the card then shows in the report's
    language), never the pending one it had.

    The card never changes points or the pass decision, so nothing that follows a grade moves: no
    LMS score is queued, the grade columns, review flags, dashboard facts, `graded_at` and
    `attempts` stay as the graded report set them, and regrade counts skip reason `speed`.
    """
    for _ in range(3):
        row = session.get(Submission, submission_id)
        current = current_report(session, row) if row is not None else None
        if row is None or current is None or (current.report.get("performance") or {}).get("status") != "pending":
            session.rollback()
            return None
        graded = session.get(ReportRow, graded_report_id) if graded_report_id is not None else None
        if graded_report_id is not None and (graded is None or session.scalar(
                select(func.count()).select_from(ReportRow)
                .where(ReportRow.submission_id == submission_id, ReportRow.seq > graded.seq,
                       ReportRow.reason.in_(("initial", "regrade")),
                       ReportRow.status == SubmissionStatus.graded))):  # (a failed regrade keeps this one current)
            session.rollback()
            return None
        # The conditional UPDATE takes the row (PostgreSQL) or the write lock (SQLite) first: a
        # regrade or a decision that made another report current in between makes it match nothing.
        taken = cast(CursorResult[Any], session.execute(
            update(Submission).where(Submission.id == submission_id,
                                     Submission.current_report_id == current.id)
            .values(current_report_id=current.id)))
        if taken.rowcount != 1:
            session.rollback()
            session.expire_all()
            continue
        seq = (session.scalar(select(func.max(ReportRow.seq)).where(ReportRow.submission_id == row.id)) or 0) + 1
        report = {**current.report, "performance": performance}
        if isinstance(said := current.report.get("translations"), dict) and said:
            report["translations"] = {lang: {**texts, "performance": (translations or {}).get(lang)}
                                      for lang, texts in said.items()}
        revision = ReportRow(submission_id=row.id, seq=seq, reason="speed", status=current.status, report=report)
        session.add(revision)
        session.flush()
        row.current_report_id = revision.id
        if row.callback_url:
            session.add(WebhookDelivery(submission_id=row.id, report_id=revision.id, url=row.callback_url,
                                        next_attempt_at=utcnow(), event=SPEED_EVENT))
        session.commit()
        return revision
    return None


def pending_speed_cards(session: Session, *, written_before: datetime, after_id: int = 0,
                        limit: int = 200) -> list[tuple[str, int]]:
    """(submission id, report id) of current reports with their speed card still `pending` that
    were written before `written_before`, report ids above `after_id`, in id order: the cards
    whose process died before storing them (service/worker/speed_revision.py, SpeedSweeper). A
    range of the reports' primary key; only the reports in it are read."""
    pending = ReportRow.report[("performance", "status")].as_string() == "pending"
    return [(submission_id, report_id) for submission_id, report_id in session.execute(
        select(ReportRow.submission_id, ReportRow.id)
        .join(Submission, Submission.current_report_id == ReportRow.id)
        .where(ReportRow.id > after_id, ReportRow.status == SubmissionStatus.graded,
               ReportRow.created_at < written_before, pending)
        .order_by(ReportRow.id).limit(limit))]


def reports_settled_through(session: Session, *, written_before: datetime, after_id: int) -> int:
    """The highest report id such that every report from `after_id` to it was written before
    `written_before` (`after_id` itself when the next one is younger or there is none): how far
    a sweep over report ids may move its floor."""
    younger = session.scalar(select(func.min(ReportRow.id))
                             .where(ReportRow.id > after_id, ReportRow.created_at >= written_before))
    if younger is not None:
        return int(younger) - 1
    return int(session.scalar(select(func.max(ReportRow.id)).where(ReportRow.id > after_id)) or after_id)


def _keeps_earlier_grade(session: Session, row: Submission, report: Report) -> bool:
    """A not_gradable regrade of a submission whose current report is graded: that report stays current."""
    if report.status != SubmissionStatus.not_gradable or row.current_report_id is None:
        return False
    current = session.get(ReportRow, row.current_report_id)
    return current is not None and current.status == SubmissionStatus.graded


def notify(session: Session, row: Submission, report_row: ReportRow, *, event: str,
           decision_id: int | None = None) -> None:
    """Queue the webhook for a report that became current (same transaction), if one was asked for,
    and the LMS score of a submission that came through LTI."""
    if row.callback_url:
        session.add(WebhookDelivery(submission_id=row.id, report_id=report_row.id, url=row.callback_url,
                                    next_attempt_at=utcnow(), event=event, decision_id=decision_id))
    # the policy is read only for a submission that came through LTI
    lti_scores.enqueue(session, row, report_row, policy=lambda: course_policy(session, row.course_id))


def notify_regrade_failed(session: Session, row: Submission, failed: ReportRow) -> None:
    """Tell the course a regrade failed on our side and the earlier grade stays (same transaction): a
    webhook only. No LMS score: the grade that counts did not change (webhook_payload.py says which)."""
    if row.callback_url:
        session.add(WebhookDelivery(submission_id=row.id, report_id=failed.id, url=row.callback_url,
                                    next_attempt_at=utcnow(), event="submission.regrade_failed"))


def on_current_report(session: Session, row: Submission, report: dict, *, first: bool = False) -> None:
    """Make the submission's review and grade columns, and its dashboard facts, match the report
    that is becoming current. `first`: the submission had no current report before, so it has no
    facts or flags to delete (store.finish says why). The row's own changes are flushed once, by
    the caller's next query or commit: these statements read nothing of it."""
    with session.no_autoflush:
        set_review_flags(session, row, report, first=first)
        if not first:
            session.execute(delete(ReportFact).where(ReportFact.submission_id == row.id))
        # one multi-row INSERT: a report has dozens of facts, and a unit-of-work object for each was
        # most of a memo hit's cost in a class burst (docs/benchmarks.md)
        if facts := [{"submission_id": row.id, **fact} for fact in report_facts(report)]:
            session.execute(insert(ReportFact), facts)
    for column, value in grade_columns(report).items():
        setattr(row, column, value)


def review_flags(report: dict) -> list[tuple[str, str]]:
    """Why a report waits for a TA, as (target, kind): each suspected veto (kind: its rule), each
    needs_review item (kind: needs_review), and each TA decision a regrade could not re-apply
    (kind: earlier_decision)."""
    flags = [(f"veto:{v['rule']}", v["rule"]) for v in report.get("vetoes", []) if v.get("status") == "suspected"]
    flags += [(f"item:{i['id']}", "needs_review") for i in report.get("items", []) if i.get("status") == "needs_review"]
    flags += [(f"decision:{c['target']}", "earlier_decision") for c in report.get("carried_decisions", [])
              if c.get("outcome") == "returned"]
    return flags


def set_review_flags(session: Session, row: Submission, report: dict, *, first: bool = False) -> None:
    """Make the submission's review columns match the report that is becoming current (same transaction).
    `first`: as on_current_report's."""
    flags = review_flags(report)
    if not first:
        session.execute(delete(ReviewFlag).where(ReviewFlag.submission_id == row.id))
    if flags:
        session.execute(insert(ReviewFlag), [{"submission_id": row.id, "target": target, "kind": kind}
                                             for target, kind in flags])
    row.needs_review = bool(flags)


def request_regrade(session: Session, submission_id: str) -> bool:
    """Queue a graded submission again; its earlier reports stay as history."""
    result = cast(CursorResult[Any], session.execute(  # an UPDATE's result (the stubs say Result)
        update(Submission)
        .where(Submission.id == submission_id, Submission.status.in_(FINAL_STATUSES))
        .values(status=SubmissionStatus.queued, attempts=0, lease_token=None, lease_expires_at=None,
                updated_at=utcnow())
    ))
    session.commit()
    return result.rowcount == 1


def current_report(session: Session, row: Submission) -> ReportRow | None:
    return session.get(ReportRow, row.current_report_id) if row.current_report_id is not None else None


def report_history(session: Session, submission_id: str) -> list[ReportRow]:
    return list(session.scalars(select(ReportRow).where(ReportRow.submission_id == submission_id)
                                .order_by(ReportRow.seq)))


def deliveries(session: Session, submission_id: str) -> list[WebhookDelivery]:
    return list(session.scalars(select(WebhookDelivery).where(WebhookDelivery.submission_id == submission_id)
                                .order_by(WebhookDelivery.id)))
