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

from sqlalchemy import CursorResult, Table, bindparam, delete, func, insert, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session
from sqlalchemy.orm.util import identity_key

from service.dashboard.facts import report_facts
from service.db.base import utcnow
from service.db.carry import carry_decisions
from service.db.lti_models import LtiSubmission
from service.db.models import ApiKey, Course, ReportFact, ReportRow, ReviewFlag, Submission, WebhookDelivery
from service.grades.gradebook import course_policy  # the callers' store.course_policy
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


def set_course_policy(session: Session, course_id: str, update: PolicyUpdate) -> CoursePolicy:
    """Change the course's policy; the LMS scores it changes are queued in the same transaction (the
    gradebook and the exports read the policy when asked, but the LMS keeps what it was sent).
    `hint_cost` changes no grade: it prices levels taken from now on. The policy the scores follow
    is read back once this change is written (the row's lock, PostgreSQL, or the database's write
    lock, SQLite, is ours then): two admins changing it at once (one the grade policy, the other the
    veto policy) would otherwise each requeue under a policy that keeps the other's field as it was,
    and the later one's scores, under a policy the course never had, would be what the LMS keeps."""
    course = existing_course(session, course_id)
    changes = update.model_dump(exclude_none=True)
    for field, value in changes.items():
        setattr(course, field, value)
    session.flush()
    session.refresh(course)  # another admin's change, committed while this one waited, is visible now
    after = course.policy()
    if changes.keys() & {"grade_policy", "veto_policy"}:
        lti_scores.requeue_course(session, course_id, after)  # queues only the grades that changed
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


def course_queue_depth(session: Session, course_id: str) -> int:
    """queue_depth of one course (the rows in progress: at most max_queue of them are read)."""
    in_progress = Submission.status.in_(IN_PROGRESS_STATUSES)
    return session.scalar(select(func.count()).select_from(Submission)
                          .where(in_progress, Submission.course_id == course_id)) or 0


def counts_by_status(session: Session) -> dict[str, int]:
    return dict(session.execute(select(Submission.status, func.count()).group_by(Submission.status)).all())


@dataclass(frozen=True)
class Claim:
    submission_id: str
    token: str
    attempt: int


# The statements of a grading's way through the store (claim, finish), built once with bound
# parameters: building and keying a statement anew cost about four times its execution on SQLite
# (0.35 ms against 0.08 ms, docs/benchmarks.md, round 2, twelfth day), several times per report.
_SUBMISSIONS, _REPORTS, _WEBHOOKS, _FACTS, _FLAGS, _LTI_ORIGINS = (cast(Table, model.__table__) for model in (
    Submission, ReportRow, WebhookDelivery, ReportFact, ReviewFlag, LtiSubmission))
_S = _SUBMISSIONS.c
_NOW = bindparam("now", type_=_S.updated_at.type)
_CLAIMABLE = or_(_S.status == SubmissionStatus.queued,
                 (_S.status == SubmissionStatus.running) & (_S.lease_expires_at < _NOW))
_TAKE = dict(status=SubmissionStatus.running, lease_token=bindparam("token"), lease_expires_at=bindparam("expires"),
             attempts=_S.attempts + 1, updated_at=_NOW, claimed_at=_NOW)
_OLDEST = select(_S.id).where(_CLAIMABLE).order_by(_S.created_at).limit(1).with_for_update(skip_locked=True)
_CLAIM_OLDEST = (update(_SUBMISSIONS).where(_S.id == _OLDEST.scalar_subquery(), _CLAIMABLE)
                 .values(**_TAKE).returning(_S.id, _S.attempts))
# Fair claiming (issue: one course's burst made every other course wait behind it). First a
# submission whose worker died (its lease expired: it was admitted before anything queued now);
# else the oldest queued submission of the course least served now: fewest submissions running,
# then the course claimed from longest ago (never first: one worker alone takes turns between
# courses), then the oldest queued submission, then the course id. Each course's figures are
# probes of two indexes (ix_submissions_course_id_status_created_at, ..._claimed_at), so the pick
# costs the same whatever the queue holds.
_COURSES = cast(Table, Course.__table__)
_HEAD, _HELD, _LAST = _SUBMISSIONS.alias("head"), _SUBMISSIONS.alias("held"), _SUBMISSIONS.alias("last")
_COURSE_HEAD = (select(_HEAD.c.created_at).where(_HEAD.c.course_id == _COURSES.c.id,
                                                 _HEAD.c.status == SubmissionStatus.queued)
                .order_by(_HEAD.c.created_at).limit(1).scalar_subquery())
_COURSE_RUNNING = (select(func.count()).select_from(_HELD)
                   .where(_HELD.c.course_id == _COURSES.c.id, _HELD.c.status == SubmissionStatus.running)
                   .scalar_subquery())
_COURSE_LAST_CLAIM = select(func.max(_LAST.c.claimed_at)).where(_LAST.c.course_id == _COURSES.c.id).scalar_subquery()
_RANKED = select(_COURSES.c.id, _COURSE_HEAD.label("head"), _COURSE_RUNNING.label("running"),
                 _COURSE_LAST_CLAIM.label("last_claim")).subquery("ranked")
_LEAST_SERVED = (select(_RANKED.c.id).where(_RANKED.c.head.is_not(None))
                 .order_by(_RANKED.c.running, _RANKED.c.last_claim.asc().nulls_first(), _RANKED.c.head,
                           _RANKED.c.id)
                 .limit(1).scalar_subquery())
_EXPIRED = (select(_S.id).where(_S.status == SubmissionStatus.running, _S.lease_expires_at < _NOW)
            .order_by(_S.created_at).limit(1).with_for_update(skip_locked=True).scalar_subquery())
_FAIREST = (select(_S.id).where(_S.course_id == _LEAST_SERVED, _S.status == SubmissionStatus.queued)
            .order_by(_S.created_at).limit(1).with_for_update(skip_locked=True).scalar_subquery())
_CLAIM_FAIR = (update(_SUBMISSIONS).where(_S.id == func.coalesce(_EXPIRED, _FAIREST), _CLAIMABLE)
               .values(**_TAKE).returning(_S.id, _S.attempts))
_CLAIM_ONE = (update(_SUBMISSIONS).where(_S.id == bindparam("sid"), _CLAIMABLE)
              .values(**_TAKE).returning(_S.id, _S.attempts))
_ANY_CLAIMABLE = select(_S.id).where(_CLAIMABLE).limit(1)
_ONE_CLAIMABLE = select(_S.id).where(_S.id == bindparam("sid"), _CLAIMABLE)


def claim(session: Session, *, lease_s: float, submission_id: str | None = None) -> Claim | None:
    """Take one submission (a given one, or the next in fair order) under a fresh lease.

    The fair order (docs/api.md, "The grading queue"): a submission whose lease expired first
    (oldest first); else the oldest queued submission of the course with the fewest submissions
    running (ties: the course claimed from longest ago, never claimed first; then the course
    whose oldest queued submission is oldest). So a course's burst makes another course wait for
    one free worker, not for the burst; within a course, and for a course alone, the order is
    oldest first as before.

    One conditional UPDATE picks, takes and counts it (its RETURNING: the id and the attempts it now
    counts); of two workers racing for the same row exactly one gets it back. On SQLite the
    statement runs under the database's write lock, so the pick is made and taken whole; on
    PostgreSQL the subquery locks the row it picks and skips rows another claim has locked
    (SKIP LOCKED), so racing workers take different submissions instead of queueing on one and
    losing. A miss (PostgreSQL: the fair pick's course had only rows another claim holds locked,
    or a picked row stopped being claimable under the lock) is followed by the oldest claimable
    row of any course (the order before fair claiming), at most 4 more times while claimable rows
    are still there. Works the same on SQLite (3.35 or later) and PostgreSQL.
    """
    statement = _CLAIM_ONE if submission_id is not None else _CLAIM_FAIR
    for _ in range(5):
        now = utcnow()
        token = secrets.token_hex(16)
        params = {"now": now, "token": token, "expires": now + timedelta(seconds=lease_s), "sid": submission_id}
        taken = session.execute(statement, params).one_or_none()
        if taken is not None:
            _refresh_held(session, taken.id)
        session.commit()
        if taken is not None:
            return Claim(taken.id, token, taken.attempts)
        params["now"] = utcnow()
        if session.scalar(_ONE_CLAIMABLE if submission_id is not None else _ANY_CLAIMABLE, params) is None:
            session.rollback()
            return None
        if submission_id is None:
            statement = _CLAIM_OLDEST
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

    Every report of a class burst comes through here, so it is written with plain statements and
    no unit of work (docs/benchmarks.md, round 2, twelfth day): the report is serialised before
    the transaction, the report row, its facts and flags and the webhook are INSERTs, the
    submission's own columns one UPDATE that also brings any copy of the row this session holds up
    to date; the submission is loaded as an object only where a rule reads it (an LTI score).
    The returned report row is not attached to the session.
    """
    record = report.to_record()  # before the write lock: nothing of the report is computed under it
    submission_id = claim_.submission_id
    # The conditional UPDATE comes first: it takes the row (PostgreSQL) or the write lock
    # (SQLite), so nobody can re-claim between our check and our write. RETURNING reads what the
    # rest depends on in the same statement (nothing when the lease was not ours).
    taken = session.execute(_FINISH_TAKE, {"sid": submission_id, "token": claim_.token, "status": report.status,
                                           "now": utcnow()}).one_or_none()
    if taken is None:
        session.rollback()
        return None
    # Every report of a submission is written in a transaction that leaves a current report (here,
    # decisions, speed revisions; a failed regrade keeps the earlier one), and current_report_id
    # is never cleared: with none yet, the submission has no report, and nothing rewritten by
    # on_current_report (its facts and flags) exists either.
    first = taken.current_report_id is None
    seq = 1 if first else (session.scalar(select(func.max(ReportRow.seq))
                                          .where(ReportRow.submission_id == submission_id)) or 0) + 1
    if seq > 1:  # a regrade: the TA's decisions stay with the submission (service/db/carry.py)
        carried = carry_decisions(session, submission_id, report)
        if carried is not report:
            report, record = carried, carried.to_record()
    report_row = ReportRow(submission_id=submission_id, seq=seq, reason="initial" if seq == 1 else "regrade",
                           status=report.status, report=record, created_at=utcnow())
    report_row.id = session.scalar(_REPORT_INSERT, {
        "submission_id": submission_id, "seq": seq, "reason": report_row.reason, "status": report.status,
        "report": record, "created_at": report_row.created_at})
    if _keeps_earlier_grade(session, taken.current_report_id, report):
        # Our failure never replaces a good grade: the regrade stays in the history (not current),
        # the graded report stays current (gradebook, passback, feedback), and it can be regraded again.
        session.execute(update(_SUBMISSIONS).where(_S.id == submission_id)
                        .values(status=SubmissionStatus.graded, updated_at=utcnow()))
        # The course hears of it by a webhook only; no LMS score: the grade that counts did not
        # change (webhook_payload.py says which).
        if taken.callback_url:
            _queue_webhook(session, submission_id, report_row.id, taken.callback_url, "submission.regrade_failed")
        _refresh_held(session, submission_id)
        session.commit()
        return report_row
    columns = _rewrite_current(session, submission_id, record, first=first)
    session.execute(_made_current(tuple(columns)), {**columns, "sid": submission_id, "report_id": report_row.id,
                                                   "now": utcnow()})
    event = "submission.graded" if seq == 1 else "submission.regraded"
    if taken.callback_url:
        _queue_webhook(session, submission_id, report_row.id, taken.callback_url, event)
    # the LTI score (store.notify's): only for a submission that came through LTI, most did not
    if session.scalar(_LTI_ORIGIN, {"sid": submission_id}) is not None:
        row = _refresh_held(session, submission_id) or session.get_one(Submission, submission_id)
        lti_scores.enqueue(session, row, report_row, policy=lambda: course_policy(session, row.course_id))
    else:
        _refresh_held(session, submission_id)
    session.commit()
    return report_row


_FINISH_TAKE = (update(_SUBMISSIONS)
                .where(_S.id == bindparam("sid"), _S.lease_token == bindparam("token"),
                       _S.status == SubmissionStatus.running)
                .values(status=bindparam("status"), lease_token=None, lease_expires_at=None, updated_at=_NOW)
                .returning(_S.current_report_id, _S.callback_url))
_R = _REPORTS.c
_REPORT_INSERT = insert(_REPORTS).values(
    {name: bindparam(name, type_=_R[name].type)
     for name in ("submission_id", "seq", "reason", "status", "report", "created_at")}).returning(_R.id)
_WEBHOOK_INSERT = insert(_WEBHOOKS).values(
    submission_id=bindparam("sid"), report_id=bindparam("report_id"), url=bindparam("url"), next_attempt_at=_NOW,
    event=bindparam("event"))
_LTI_ORIGIN = select(_LTI_ORIGINS.c.submission_id).where(_LTI_ORIGINS.c.submission_id == bindparam("sid"))
_MADE_CURRENT: dict[tuple[str, ...], Any] = {}


def _made_current(columns: tuple[str, ...]) -> Any:
    """The UPDATE that makes a report current: its id, graded_at (and first_graded_at, once), and
    `columns` (those that follow the report), each a bound parameter of its name."""
    statement = _MADE_CURRENT.get(columns)
    if statement is None:
        statement = _MADE_CURRENT[columns] = update(_SUBMISSIONS).where(_S.id == bindparam("sid")).values(
            current_report_id=bindparam("report_id"), graded_at=_NOW, updated_at=_NOW,
            first_graded_at=func.coalesce(_S.first_graded_at, _NOW),
            **{column: bindparam(column, type_=_S[column].type) for column in columns})
    return statement


def _refresh_held(session: Session, submission_id: str) -> Submission | None:
    """The submission as this session holds it, read again after finish's UPDATEs (a caller that
    loaded it sees what was written); None when the session does not hold it."""
    held = session.identity_map.get(identity_key(Submission, submission_id))
    if held is not None:
        session.refresh(held)
    return cast(Submission | None, held)


def _queue_webhook(session: Session, submission_id: str, report_id: int, url: str, event: str) -> None:
    """store.notify's webhook delivery row, as one INSERT."""
    session.execute(_WEBHOOK_INSERT, {"sid": submission_id, "report_id": report_id, "url": url, "event": event,
                                      "now": utcnow()})


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


def _keeps_earlier_grade(session: Session, current_report_id: int | None, report: Report) -> bool:
    """A not_gradable regrade of a submission whose current report is graded: that report stays current."""
    if report.status != SubmissionStatus.not_gradable or current_report_id is None:
        return False
    current = session.get(ReportRow, current_report_id)
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


def on_current_report(session: Session, row: Submission, report: dict, *, first: bool = False) -> None:
    """Make the submission's review and grade columns, and its dashboard facts, match the report
    that is becoming current. `first`: the submission had no current report before, so it has no
    facts or flags to delete (store.finish says why). The row's own changes are flushed once, by
    the caller's next query or commit: these statements read nothing of it."""
    with session.no_autoflush:
        columns = _rewrite_current(session, row.id, report, first=first)
    for column, value in columns.items():
        setattr(row, column, value)


def _rewrite_current(session: Session, submission_id: str, report: dict, *, first: bool) -> dict[str, Any]:
    """on_current_report's statements: the review flags and the facts rewritten; returns the
    submission's columns that follow the report (needs_review, the grade columns)."""
    flags = review_flags(report)
    if not first:
        session.execute(delete(ReviewFlag).where(ReviewFlag.submission_id == submission_id))
        session.execute(delete(ReportFact).where(ReportFact.submission_id == submission_id))
    # multi-row INSERTs of the tables themselves: a report has dozens of facts, and a unit-of-work
    # object for each was most of a memo hit's cost in a class burst (docs/benchmarks.md)
    if flags:
        session.execute(insert(_FLAGS), [
            {"submission_id": submission_id, "target": target, "kind": kind} for target, kind in flags])
    if facts := [{"submission_id": submission_id, **fact} for fact in report_facts(report)]:
        session.execute(insert(_FACTS), facts)
    return {"needs_review": bool(flags), **grade_columns(report)}


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
