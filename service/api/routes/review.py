"""TA review hooks: the queue of reports waiting for a TA, and decisions on items and vetoes."""
from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Request
from pydantic import AfterValidator, BaseModel

from service.api.deps import ReadKey, ReviewKey, SessionDep, SettingsDep
from service.api.routes.submissions import NOT_FOUND, owned, view
from service.api.schemas import BODY_ERRORS, KEYED_ERRORS, SubmissionView, UTCDateTime, ValidationErrorBody, error
from service.db import decisions
from service.grades import copies
from service.review import DecisionError, DecisionRequest
from service.submission import storable

router = APIRouter(tags=["review"], responses=KEYED_ERRORS)


class DecisionView(BaseModel):
    id: int
    target: str
    before: dict
    after: dict
    reason: str
    actor: str
    created_at: UTCDateTime  # SQLite gives naive datetimes back: without a zone it is no RFC 3339 date-time
    report_id: int
    new_report_id: int


class DecisionResult(BaseModel):
    decision: DecisionView
    submission: SubmissionView


class QueueEntry(BaseModel):
    id: str
    exercise: str
    created_at: UTCDateTime  # SQLite gives naive datetimes back: without a zone it is no RFC 3339 date-time
    reasons: list[str]


def _decision_view(d) -> DecisionView:
    return DecisionView(id=d.id, target=d.target, before=d.before, after=d.after, reason=d.reason, actor=d.actor,
                        created_at=d.created_at, report_id=d.report_id, new_report_id=d.new_report_id)


@router.post("/v1/submissions/{submission_id}/decisions", status_code=201, response_model=DecisionResult,
             responses={**NOT_FOUND, 409: error("not graded yet, or `report_seq` names a report whose item or veto "
                                                "has changed since"), **BODY_ERRORS,
                        422: error("an invalid decision, or no such item or veto in the report",
                                   model=ValidationErrorBody)})
def decide(request: Request, submission_id: str, body: DecisionRequest, session: SessionDep, settings: SettingsDep,
           key: ReviewKey) -> DecisionResult:
    """A TA's decision: new points for an item, or confirm/dismiss a veto. It issues the next report
    (the earlier ones stay in `history`), is recorded with who/when/before/after/why, and fires the webhook."""
    row = owned(session, submission_id, key.course_id)
    try:
        decision = decisions.decide(session, row.id, body, actor=decisions.actor_of(key))
    except decisions.NotDecidable:
        raise HTTPException(409, f"submission {row.id} is not graded yet (status: {row.status})") from None
    except decisions.StaleDecision as exc:
        raise HTTPException(409, f"{body.target} changed since report {exc.seen} (report {exc.current} is current: "
                                 "a regrade landed); nothing was recorded: look at the current report and decide "
                                 "again") from None
    except DecisionError as exc:
        raise HTTPException(422, [{"loc": ["body", "item" if body.item else "veto"], "msg": str(exc),
                                   "type": "value_error"}]) from None
    session.expire_all()
    return DecisionResult(decision=_decision_view(decision),
                          submission=view(request, session, owned(session, row.id, key.course_id), settings))


@router.get("/v1/submissions/{submission_id}/decisions", response_model=list[DecisionView], responses=NOT_FOUND)
def list_decisions(submission_id: str, session: SessionDep, key: ReadKey) -> list[DecisionView]:
    row = owned(session, submission_id, key.course_id)
    return [_decision_view(d) for d in decisions.decisions_for(session, row.id)]


@router.get("/v1/review/queue", response_model=list[QueueEntry])
def queue(session: SessionDep, key: ReviewKey,
          exercise: Annotated[str | None, Query(max_length=100)] = None) -> list[QueueEntry]:
    """Graded submissions of this course whose report waits for a TA (suspected vetoes, needs_review items)."""
    return [QueueEntry(id=s.id, exercise=s.exercise_id, created_at=s.created_at, reasons=reasons)
            for s, reasons in decisions.review_queue(session, key.course_id, exercise=exercise)]


class CopyMember(BaseModel):
    submission_id: str
    student_id: str
    student_name: str | None
    text: str  # the answer or the fill compared (at most 4000 characters)


class CopyPair(BaseModel):
    a: str
    b: str
    similarity: float


class CopyCluster(BaseModel):
    kind: str  # text | code
    exercise: str
    part: str  # answers.<id> | explanation | blank <n>
    similarity: float
    members: list[CopyMember]
    pairs: list[CopyPair]
    pairs_total: int


class CopyReportView(BaseModel):
    course: str
    assignment: str
    students: int
    submissions_compared: int
    clusters: list[CopyCluster]
    thresholds: dict[str, float]
    grades_changed: bool


@router.get("/v1/review/copies", response_model=CopyReportView)
def copied_answers(request: Request, session: SessionDep, key: ReviewKey,
                   assignment: Annotated[str, Query(min_length=1, max_length=200),
                                         AfterValidator(storable)]) -> CopyReportView:
    """Near-identical written answers and whole-body fills of one assignment of this course: the latest
    submission of each student compared with the others' (text: character shingles, MinHash/LSH, then
    exact Jaccard; code: the fill's syntax tree with local names normalised). Evidence for a TA only:
    no grade changes. Short answers, one-line blanks and fills equal to the reference are never flagged."""
    found = copies.find_copies(session, request.app.state.grader_catalog, key.course_id, assignment)
    return CopyReportView.model_validate(found.as_json())
