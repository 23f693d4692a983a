"""/v1/submissions: create (single, batch, idempotent), list, read, export, regrade."""
from __future__ import annotations

import base64
import binascii
import contextlib
import json
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, cast

from fastapi import APIRouter, Header, HTTPException, Query, Request
from fastapi.responses import JSONResponse
from sqlalchemy import and_, or_, select
from sqlalchemy.orm import Session

from service.api.deps import ReadKey, ReviewKey, SessionDep, SettingsDep, SubmitKey
from service.api.schemas import (
    BODY_ERRORS,
    KEYED_ERRORS,
    RETRY_AFTER,
    BatchCreate,
    BatchView,
    Links,
    LtiScoreView,
    ReportVersion,
    ScoreAttempt,
    ScoreSummary,
    Status,
    SubmissionCreate,
    SubmissionPage,
    SubmissionSummary,
    SubmissionView,
    ValidationErrorBody,
    WebhookAttempt,
    error,
)
from service.config import Settings
from service.db import store
from service.db.models import Submission
from service.db.session import one_snapshot
from service.exercises import ExerciseNotFound
from service.grades.gradebook import hint_charge
from service.grades.platforms import gradescope, prairielearn
from service.lti import scores as lti_scores
from service.lti.launches import ASSIGNMENT_PREFIXES
from service.outbound import CallbackRefused, check_callback_url
from service.report import Report
from service.status import FINAL_STATUSES, SubmissionStatus
from service.submission import Student
from service.submission import Submission as SubmissionBody

router = APIRouter(prefix="/v1/submissions", tags=["submissions"], responses=KEYED_ERRORS)
NOT_GRADABLE_MESSAGE = ("kernelgrade failed to grade this submission (our failure, not the student's); "
                        "it costs the student nothing.")
NOT_FOUND: dict[int | str, dict[str, Any]] = {404: error("no such submission for this key's course")}
QUEUE_FULL = error("the grading queue is full (max_queue), or the database is unavailable for the moment",
                   headers=RETRY_AFTER)
LOCATION = {"Location": {"description": "the submission's URL", "required": True, "schema": {"type": "string"}}}


def field_error(field: str, message: str) -> HTTPException:
    return HTTPException(422, [{"loc": ["body", field], "msg": message, "type": "value_error"}])


def base_url(request: Request, settings: Settings) -> str:
    return (settings.public_url or str(request.base_url)).rstrip("/")


def links(base: str, row: Submission) -> Links:
    return Links(self=f"{base}/v1/submissions/{row.id}", report=f"{base}/v1/submissions/{row.id}/report",
                 feedback=f"{base}/v1/feedback/{row.feedback_token}",
                 feedback_page=f"{base}/feedback/{row.feedback_token}")


def identity(row: Submission) -> dict:
    student = Student(id=row.student_id, name=row.student_name, email=row.student_email) if row.student_id else None
    return dict(assignment=row.assignment, student=student, attempt=row.attempt, external_ref=row.external_ref,
                language=row.language)


def view(request: Request, session: Session, row: Submission, settings: Settings) -> SubmissionView:
    base = base_url(request, settings)
    current = store.current_report(session, row)
    history = store.report_history(session, row.id)
    return SubmissionView(
        id=row.id, status=row.status, exercise=row.exercise_id, created_at=row.created_at, updated_at=row.updated_at,
        attempts=row.attempts, message=NOT_GRADABLE_MESSAGE if row.status == SubmissionStatus.not_gradable else None,
        links=links(base, row), **identity(row),
        report=Report.model_validate(current.report) if current is not None and row.status in FINAL_STATUSES else None,
        history=[ReportVersion(seq=r.seq, reason=r.reason, status=r.status, created_at=r.created_at,
                               score=(r.report.get("score") or {}).get("total"), current=r.id == row.current_report_id)
                 for r in history],
        webhooks=[WebhookAttempt(event=d.event, url=d.url, attempts=d.attempt, delivered=d.delivered,
                                 last_status_code=d.last_status_code,
                                 last_error=d.last_error, next_attempt_at=d.next_attempt_at)
                  for d in store.deliveries(session, row.id)],
        lti_scores=[LtiScoreView(state=post.state, score=post.score, next_attempt_at=post.next_attempt_at,
                                 attempts=[ScoreAttempt(at=a.at, ok=a.ok, status_code=a.status_code, error=a.error)
                                           for a in attempts])
                    for post, attempts in lti_scores.posts_for(session, row.id)],
    )


def owned(session: Session, submission_id: str, course_id: str) -> Submission:
    row = session.get(Submission, submission_id) if len(submission_id) <= 64 and "\x00" not in submission_id else None
    if row is None or row.course_id != course_id:  # another course's submission does not exist for this key
        raise HTTPException(404, f"no submission {submission_id[:64]!r}")
    return row


class Waiting:
    """The places for POST ?wait= (Settings.max_waiting): a waiting request sleeps in one of the
    process's route threads (anyio's pool, 40 threads shared by every plain `def` route of every
    course), so fifty waits of one course key held them all and every other request, /healthz
    included, waited behind them (tests/api/test_wait_bound.py). A request that finds no place
    (all taken, or its course's quarter) answers at once, as with wait=0: the wait is optional."""

    def __init__(self, places: int) -> None:
        self.places, self.per_course = places, max(1, places // 4)
        self._lock = threading.Lock()
        self._taken: dict[str, int] = {}

    @contextlib.contextmanager
    def place(self, course_id: str) -> Iterator[bool]:
        with self._lock:
            granted = (sum(self._taken.values()) < self.places
                       and self._taken.get(course_id, 0) < self.per_course)
            if granted:
                self._taken[course_id] = self._taken.get(course_id, 0) + 1
        try:
            yield granted
        finally:
            if granted:
                with self._lock:
                    self._taken[course_id] -= 1
                    if not self._taken[course_id]:
                        del self._taken[course_id]


_WAITING_LOCK = threading.Lock()


def _waiting(request: Request, settings: Settings) -> Waiting:
    with _WAITING_LOCK:
        waiting = getattr(request.app.state, "waiting", None)
        if waiting is None:
            waiting = request.app.state.waiting = Waiting(settings.max_waiting)
        return cast(Waiting, waiting)


def _check(request: Request, settings: Settings, item: SubmissionCreate, field_prefix: str = "") -> SubmissionBody:
    """Everything that can refuse an item (422) short of storing it; returns the stored body."""
    try:
        request.app.state.grader_catalog.get(item.exercise)
    except ExerciseNotFound as exc:
        raise field_error(f"{field_prefix}exercise", str(exc)) from None
    if item.assignment is not None and item.assignment.startswith(ASSIGNMENT_PREFIXES):
        # An LTI placement's submissions come from its launches only: a client's submission filed
        # under one would become the grade its LMS is sent for that student (service/lti/scores.py).
        raise field_error(f"{field_prefix}assignment",
                          f"assignment ids starting with {' or '.join(ASSIGNMENT_PREFIXES)} are an LTI placement's; "
                          "its submissions come through the LTI launch")
    if item.callback_url is not None:
        try:
            check_callback_url(item.callback_url, allowed_hosts=settings.webhook_allowed_hosts)
        except CallbackRefused as exc:
            raise field_error(f"{field_prefix}callback_url", str(exc)) from None
    return SubmissionBody.model_validate(item.model_dump(include=set(SubmissionBody.model_fields)))


def _accept(request: Request, session: Session, settings: Settings, *, course_id: str, item: SubmissionCreate,
            idempotency_key: str | None, field_prefix: str = "") -> tuple[Submission, bool]:
    body = _check(request, settings, item, field_prefix)
    try:
        return store.create_submission(session, course_id=course_id, body=body, callback_url=item.callback_url,
                                       idempotency_key=idempotency_key)
    except store.IdempotencyConflict:
        raise HTTPException(409,
                            f"Idempotency-Key {idempotency_key!r} was already used with a different body") from None


def _check_capacity(session: Session, settings: Settings, incoming: int, course_id: str) -> None:
    if store.queue_depth(session) + incoming > settings.max_queue:
        raise HTTPException(503, f"the grading queue is full ({settings.max_queue}); retry later",
                            headers={"Retry-After": "30"})
    if store.course_queue_depth(session, course_id) + incoming > settings.max_queue_per_course:
        raise HTTPException(503, f"this course has {settings.max_queue_per_course} submissions queued or running "
                                 "(max_queue_per_course); retry later", headers={"Retry-After": "30"})


@router.post("", status_code=202, response_model=SubmissionView,
             responses={202: {"description": "stored and queued (not graded within `wait`)", "headers": LOCATION},
                        200: {"model": SubmissionView, "description": "graded within `wait`", "headers": LOCATION},
                        409: error("Idempotency-Key reused with a different body"), **BODY_ERRORS,
                        422: error("invalid submission (the field is named)", model=ValidationErrorBody),
                        503: QUEUE_FULL})
def create_submission(
    request: Request, item: SubmissionCreate, session: SessionDep, settings: SettingsDep, key: SubmitKey,
    idempotency_key: Annotated[str | None,
                               Header(max_length=200, description="same key + same body: the same submission")] = None,
    wait: Annotated[float,
                    Query(ge=0, description="seconds to wait for the report (bounded by the server's max_wait_s)")] = 0,
) -> JSONResponse:
    """Store a submission (it is acknowledged only once stored) and queue it for grading."""
    if wait > settings.max_wait_s:
        raise HTTPException(422, [{"loc": ["query", "wait"], "msg": f"wait must be at most {settings.max_wait_s:g} s",
                                   "type": "value_error"}])
    existing = None
    if idempotency_key is not None:
        existing = session.query(Submission).filter_by(course_id=key.course_id,
                                                       idempotency_key=idempotency_key).one_or_none()
    if existing is None:
        _check_capacity(session, settings, 1, key.course_id)
    row, created = _accept(request, session, settings, course_id=key.course_id, item=item,
                           idempotency_key=idempotency_key)
    if created:
        request.app.state.dispatcher.submitted(row.id)
    if wait > 0 and row.status not in FINAL_STATUSES:
        with _waiting(request, settings).place(key.course_id) as granted:
            deadline = time.monotonic() + (wait if granted else 0)
            while row.status not in FINAL_STATUSES and time.monotonic() < deadline:
                session.close()  # no pooled connection held while we sleep (the workers need them)
                time.sleep(0.1)
                row = session.get_one(Submission, row.id)
    result = view(request, session, row, settings)
    return JSONResponse(result.model_dump(mode="json", by_alias=True),
                        status_code=200 if row.status in FINAL_STATUSES else 202,
                        headers={"Location": result.links.self})


@router.post("/batch", status_code=202, response_model=BatchView,
             responses={409: error("an item's idempotency key was used with a different body (nothing stored)"),
                        **BODY_ERRORS,
                        422: error("an invalid item, named submissions.<index>.<field> (nothing stored)",
                                   model=ValidationErrorBody),
                        503: QUEUE_FULL})
def create_batch(request: Request, batch: BatchCreate, session: SessionDep, settings: SettingsDep,
                 key: SubmitKey) -> BatchView:
    """Up to `max_batch` submissions in one request; each may carry its own idempotency key."""
    if len(batch.submissions) > settings.max_batch:
        raise field_error("submissions",
                          f"at most {settings.max_batch} submissions per batch (got {len(batch.submissions)})")
    _check_capacity(session, settings, len(batch.submissions), key.course_id)
    # Check every item before storing any: a refused batch (422, 409) stores nothing.
    digests: dict[str, str] = {}
    for index, item in enumerate(batch.submissions):
        body = _check(request, settings, item, field_prefix=f"submissions.{index}.")
        if item.idempotency_key is not None:
            digest = store.body_digest(body, item.callback_url)
            existing = session.query(Submission).filter_by(course_id=key.course_id,
                                                           idempotency_key=item.idempotency_key).one_or_none()
            if (digests.setdefault(item.idempotency_key, digest) != digest
                    or (existing and existing.body_sha256 != digest)):
                raise HTTPException(409,
                                    f"Idempotency-Key {item.idempotency_key!r} was already used with a different body")
    rows = []
    for index, item in enumerate(batch.submissions):
        row, created = _accept(request, session, settings, course_id=key.course_id, item=item,
                               idempotency_key=item.idempotency_key, field_prefix=f"submissions.{index}.")
        if created:
            request.app.state.dispatcher.submitted(row.id)
        rows.append(row)
    return BatchView(submissions=[view(request, session, row, settings) for row in rows])


def _cursor(row: Submission) -> str:
    moment = row.created_at if row.created_at.tzinfo else row.created_at.replace(tzinfo=UTC)
    raw = json.dumps([moment.isoformat(), row.id]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _after_cursor(cursor: str) -> tuple[datetime, str]:
    """The (created_at, id) a cursor points after; a 422 naming `cursor` if it is not one of ours."""
    try:
        moment, submission_id = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        when = datetime.fromisoformat(moment)
        if not isinstance(submission_id, str):
            raise ValueError
    except (ValueError, TypeError, binascii.Error, UnicodeDecodeError):
        raise HTTPException(422, [{"loc": ["query", "cursor"], "msg": "not a cursor this API returned",
                                   "type": "value_error"}]) from None
    return _utc(when), submission_id


def _utc(moment: datetime) -> datetime:
    """In UTC, as every stored time is (SQLite compares the text, so the zone must be the same)."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC)
    except OverflowError:  # year 1 with a positive offset, year 9999 with a negative one
        return datetime.min.replace(tzinfo=UTC) if moment.year == 1 else datetime.max.replace(tzinfo=UTC)


Filter = Annotated[str | None, Query(max_length=200)]


@router.get("", response_model=SubmissionPage, responses={422: error("a malformed filter or cursor (named)",
                                                                     model=ValidationErrorBody)})
def list_submissions(
    request: Request, session: SessionDep, settings: SettingsDep, key: ReadKey,
    assignment: Filter = None,
    student: Annotated[str | None, Query(max_length=200, description="the student's platform id")] = None,
    exercise: Annotated[str | None, Query(max_length=100)] = None, external_ref: Filter = None,
    status: Status | None = None,
    needs_review: Annotated[bool | None, Query(description="true: waiting for a TA")] = None,
    created_after: Annotated[datetime | None, Query(description="ISO 8601; UTC when no zone is given")] = None,
    created_before: Annotated[datetime | None, Query(description="ISO 8601; UTC when no zone is given")] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: Annotated[str | None, Query(max_length=500, description="next_cursor of the previous page")] = None,
) -> SubmissionPage:
    """The course's submissions, newest first, with their identity and current score. Filters that
    match nothing (an unknown assignment or student) give an empty page, not an error."""
    query = select(Submission).where(Submission.course_id == key.course_id)
    for column, value in ((Submission.assignment, assignment), (Submission.student_id, student),
                          (Submission.exercise_id, exercise), (Submission.external_ref, external_ref),
                          (Submission.status, status), (Submission.needs_review, needs_review)):
        if value is not None:
            query = query.where(column == value)
    if created_after is not None:
        query = query.where(Submission.created_at > _utc(created_after))
    if created_before is not None:
        query = query.where(Submission.created_at < _utc(created_before))
    if cursor is not None:
        when, last_id = _after_cursor(cursor)
        query = query.where(or_(Submission.created_at < when,
                                and_(Submission.created_at == when, Submission.id < last_id)))
    rows = list(session.scalars(query.order_by(Submission.created_at.desc(), Submission.id.desc()).limit(limit + 1)))
    base = base_url(request, settings)
    items = [SubmissionSummary(
        id=row.id, status=row.status, exercise=row.exercise_id, exercise_version=row.exercise_version,
        needs_review=row.needs_review, created_at=row.created_at, updated_at=row.updated_at, graded_at=row.graded_at,
        score=None if row.score_total is None else ScoreSummary(total=row.score_total, max=row.score_max,
                                                                passed=bool(row.passed),
                                                                provisional=bool(row.provisional),
                                                                blocking=row.blocking),
        links=links(base, row), **identity(row)) for row in rows[:limit]]
    return SubmissionPage(items=items, next_cursor=_cursor(rows[limit - 1]) if len(rows) > limit else None)


@router.get("/{submission_id}", response_model=SubmissionView, responses=NOT_FOUND)
def get_submission(request: Request, submission_id: str, session: SessionDep, settings: SettingsDep,
                   key: ReadKey) -> SubmissionView:
    """Status, the current report when graded, earlier reports, and webhook delivery attempts."""
    return view(request, session, owned(session, submission_id, key.course_id), settings)


@router.get("/{submission_id}/report", responses={**NOT_FOUND, 409: error("not graded yet")})
def get_report(request: Request, submission_id: str, session: SessionDep, settings: SettingsDep, key: ReadKey,
               format: Literal["json", "gradescope", "prairielearn"] = "json") -> JSONResponse:
    """The current report, as kernelgrade.report/v1 or as the Gradescope / PrairieLearn result a
    platform imports (the course's veto policy applied; docs/integrations.md has the mapping). The
    submission, its report, the policy and the hint levels are read from one snapshot
    (session.one_snapshot): a policy change and a hint level landing between separate reads made a
    grade the gradebook never had."""
    course_id = key.course_id
    session.rollback()  # the key's lookup began a transaction: the result reads from a snapshot of its own
    one_snapshot(session)
    row = owned(session, submission_id, course_id)
    current = store.current_report(session, row)
    if current is None or row.status not in FINAL_STATUSES:
        raise HTTPException(409, f"submission {row.id} is not graded yet (status: {row.status})")
    report = Report.model_validate(current.report)
    if format == "json":
        return JSONResponse(report.model_dump(mode="json", by_alias=True))
    export = {"gradescope": gradescope, "prairielearn": prairielearn}[format]
    return JSONResponse(export(report, policy=store.course_policy(session, course_id),
                               feedback_url=links(base_url(request, settings), row).feedback_page,
                               hints=hint_charge(session, row)))


@router.post("/{submission_id}/regrade", status_code=202, response_model=SubmissionView,
             responses={**NOT_FOUND, 409: error("still being graded")})
def regrade(request: Request, submission_id: str, session: SessionDep, settings: SettingsDep,
            key: ReviewKey) -> SubmissionView:
    """Grade again (for instance after an exercise fix); earlier reports stay in `history`, and the
    TA's decisions are re-applied where the evidence they decided on is unchanged (else the case
    goes back to the review queue, the earlier decision shown)."""
    row = owned(session, submission_id, key.course_id)
    if not store.request_regrade(session, row.id):
        raise HTTPException(409, f"submission {row.id} is still being graded (status: {row.status})")
    request.app.state.dispatcher.submitted(row.id)
    session.expire_all()
    return view(request, session, session.get_one(Submission, row.id), settings)
