"""/v1/grades (the gradebook export), /v1/course (the course's grade policy), /v1/regrades (bulk regrades)."""
from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, HTTPException, Query
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field, model_validator

from service.api.deps import AdminKey, ReadKey, ReviewKey, SessionDep
from service.api.schemas import BODY_ERRORS, KEYED_ERRORS, UTCDateTime, ValidationErrorBody, error
from service.db import regrades, store
from service.db.decisions import actor_of
from service.db.models import Course, RegradeJob
from service.downloads import csv_attachment
from service.grades.gradebook import Gradebook, current_gradebook, to_csv
from service.grades.policy import CoursePolicy, PolicyUpdate

router = APIRouter(tags=["grades"], responses=KEYED_ERRORS)


class CourseView(BaseModel):
    id: str
    name: str
    policy: CoursePolicy


@router.get("/v1/grades", response_model=Gradebook,
            responses={200: {"content": {"text/csv": {}},
                             "description": "the gradebook (JSON, or CSV with format=csv)"}})
def grades(session: SessionDep, key: ReadKey, assignment: Annotated[str | None, Query(max_length=200)] = None,
           format: Literal["json", "csv"] = "json") -> Response:
    """One row per student and assignment: the grade that counts under the course's policy (last or
    best attempt; a veto capped or zero), final or provisional, what blocks it, and the TA's decisions."""
    course_id = key.course_id
    session.rollback()  # the key's lookup began a transaction: the gradebook reads from a snapshot of its own
    book = current_gradebook(session, course_id, assignment=assignment)
    if format == "csv":
        return Response(to_csv(book), media_type="text/csv; charset=utf-8",
                        headers=csv_attachment("grades", key.course_id, assignment or "all"))
    return Response(book.model_dump_json(), media_type="application/json")


@router.get("/v1/course", response_model=CourseView)
def course(session: SessionDep, key: ReadKey) -> CourseView:
    """This key's course and its grade policy."""
    row = session.get_one(Course, key.course_id)  # the key's course: a foreign key
    return CourseView(id=row.id, name=row.name, policy=store.course_policy(session, row.id))


@router.put("/v1/course/policy", response_model=CoursePolicy,
            responses={**BODY_ERRORS, 422: error("an unknown policy value (named)", model=ValidationErrorBody)})
def set_policy(update: PolicyUpdate, session: SessionDep, key: AdminKey) -> CoursePolicy:
    """Change the course's grade policy (`admin` scope); the fields left out keep their value. It
    applies to every export from now on (exports are computed when asked for)."""
    return store.set_course_policy(session, key.course_id, update)


class RegradeRequest(BaseModel):
    """What to grade again: an assignment, or every submission of one exercise version."""

    model_config = ConfigDict(extra="forbid")

    assignment: str | None = Field(None, min_length=1, max_length=200)
    exercise: str | None = Field(None, min_length=1, max_length=100)
    version: int | None = Field(None, ge=0, le=2**31 - 1, description="the exercise version (required with `exercise`)")

    @model_validator(mode="after")
    def _one_scope(self) -> RegradeRequest:
        if (self.assignment is None) == (self.exercise is None):
            raise ValueError("give either `assignment`, or `exercise` with `version`")
        if self.exercise is not None and self.version is None:
            raise ValueError("`exercise` needs `version`")
        return self


FAILURES_SHOWN = 100  # per job: the count is complete, the list is bounded (a broken worker fails them all)


class RegradeFailure(BaseModel):
    """A submission whose regrade came out not_gradable (the sandbox or the infrastructure failed, not the
    student): its earlier grade stays current; look at it, and regrade it again once the cause is fixed."""

    submission_id: str
    student_id: str | None
    report_seq: int = Field(description="the failed regrade's report (in the submission's `history`)")
    current_report_seq: int | None = Field(description="the report that counts now: the earlier grade it kept, or "
                                                       "the failed one when there was no grade to keep")
    message: str = Field(description="what failed on our side")


class RegradeView(BaseModel):
    id: str
    status: Literal["running", "done"]
    scope: Literal["assignment", "exercise"]
    assignment: str | None
    exercise: str | None
    version: int | None
    total: int
    done: int
    queued: int
    pending: int
    failed: int = Field(description="of the done ones, those whose regrade came out not_gradable (our failure)")
    failures: list[RegradeFailure] = Field(description=f"the failed ones, the first {FAILURES_SHOWN}")
    progress: float = Field(description="done / total")
    requested_by: str
    created_at: UTCDateTime
    updated_at: UTCDateTime
    finished_at: UTCDateTime | None


def _view(session, job: RegradeJob) -> RegradeView:
    counts = regrades.progress(session, job)
    return RegradeView(id=job.id, status=job.status, scope=job.scope, assignment=job.assignment,
                       exercise=job.exercise_id, version=job.exercise_version, total=counts.total, done=counts.done,
                       queued=counts.queued, pending=counts.pending, failed=counts.failed,
                       failures=[RegradeFailure(submission_id=f.submission_id, student_id=f.student_id,
                                                report_seq=f.report_seq, current_report_seq=f.current_seq,
                                                message=f.message)
                                 for f in (regrades.failures(session, job, FAILURES_SHOWN) if counts.failed else [])],
                       progress=counts.done / counts.total if counts.total else 1.0, requested_by=job.requested_by,
                       created_at=job.created_at, updated_at=job.updated_at, finished_at=job.finished_at)


@router.post("/v1/regrades", status_code=202, response_model=RegradeView,
             responses={200: {"model": RegradeView,
                              "description": "the same scope is already being regraded: that job"},
                        404: error("no graded submission of this course matches"), **BODY_ERRORS,
                        422: error("neither or both scopes given", model=ValidationErrorBody)})
def start_regrade(body: RegradeRequest, session: SessionDep, key: ReviewKey) -> Response:
    """Grade again every graded submission of an assignment, or of an exercise version (`review`
    scope). Idempotent: while a job for the same scope runs, asking again returns it. It advances a
    few submissions at a time and resumes after a restart; each submission keeps its TA decisions
    where the evidence is unchanged (docs/api.md)."""
    try:
        job, created = regrades.start(session, key.course_id, assignment=body.assignment, exercise_id=body.exercise,
                                      exercise_version=body.version, requested_by=actor_of(key))
    except regrades.NothingToRegrade as exc:
        raise HTTPException(404, str(exc)) from None
    return Response(_view(session, job).model_dump_json(), status_code=202 if created else 200,
                    media_type="application/json")


@router.get("/v1/regrades", response_model=list[RegradeView])
def list_regrades(session: SessionDep, key: ReadKey) -> list[RegradeView]:
    """The course's bulk regrades, newest first."""
    return [_view(session, job) for job in regrades.jobs(session, key.course_id)]


@router.get("/v1/regrades/{job_id}", response_model=RegradeView, responses={404: error("no such bulk regrade")})
def get_regrade(job_id: str, session: SessionDep, key: ReadKey) -> RegradeView:
    job = session.get(RegradeJob, job_id) if len(job_id) <= 32 else None
    if job is None or job.course_id != key.course_id:
        raise HTTPException(404, f"no bulk regrade {job_id[:32]!r}")
    return _view(session, job)



