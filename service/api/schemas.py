"""Request and response models of the API (the OpenAPI document is generated from these)."""
from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from service.report import Report
from service.status import SubmissionStatus
from service.submission import Student, Submission, storable

Status = SubmissionStatus  # the API shows the stored strings


def _as_utc(value: datetime) -> datetime:
    """SQLite stores no time zone and gives naive datetimes back; every stored time is UTC."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


UTCDateTime = Annotated[datetime, AfterValidator(_as_utc)]


_storable = storable  # the submission contract's check, shared by every stored text of the API


# Text a model stores: the same refusals (NUL, lone surrogates) for other models' fields.
StorableText = Annotated[str, AfterValidator(storable)]


class SubmissionCreate(Submission):
    """A submission (DESIGN.md contract) plus where to POST the report when it is ready."""

    callback_url: str | None = Field(None, max_length=2000, description="https URL that receives the signed report")

    @field_validator("exercise", "code", "explanation", "claimed_output", "callback_url")
    @classmethod
    def _storable_text(cls, value: str | None) -> str | None:
        return value if value is None else _storable(value)

    @field_validator("answers")
    @classmethod
    def _storable_answers(cls, value: dict[str, str]) -> dict[str, str]:
        for key, answer in value.items():
            _storable(key)
            _storable(answer)
        return value


class BatchItem(SubmissionCreate):
    idempotency_key: str | None = Field(None, max_length=200, description="per-item idempotency key")

    @field_validator("idempotency_key")
    @classmethod
    def _storable_key(cls, value: str | None) -> str | None:
        return value if value is None else _storable(value)


class BatchCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    submissions: list[BatchItem] = Field(min_length=1)


class Links(BaseModel):
    self: str
    report: str
    feedback: str = Field(description="the student's feedback as JSON, through an unguessable link (no key)")
    feedback_page: str = Field(description="the same feedback as a page for the student to read (HTML)")


class ReportVersion(BaseModel):
    seq: int
    reason: str
    status: str
    created_at: UTCDateTime
    score: float | None
    current: bool


class WebhookAttempt(BaseModel):
    event: str = Field(description="the webhook's event type (`submission.graded`, ...; docs/api.md, Webhooks)")
    url: str
    attempts: int
    delivered: bool
    last_status_code: int | None
    last_error: str | None
    next_attempt_at: UTCDateTime | None


class Identity(BaseModel):
    """The platform's identity of a submission, as it sent it."""

    assignment: str | None = None
    student: Student | None = None
    attempt: int | None = None
    external_ref: str | None = None
    language: Literal["zh", "en"] | None = None


class ScoreSummary(BaseModel):
    total: float
    max: float
    passed: bool
    provisional: bool
    blocking: str | None = Field(None,
                                 description="veto:<rule>:<status> or requirement:<id> that keeps it from passing")


class SubmissionSummary(Identity):
    """One submission in a listing: no report, its current score."""

    id: str
    status: Status
    exercise: str
    exercise_version: int | None = None
    needs_review: bool
    score: ScoreSummary | None = Field(None, description="the current report's score (graded submissions only)")
    created_at: UTCDateTime
    updated_at: UTCDateTime
    graded_at: UTCDateTime | None = None
    links: Links


class SubmissionPage(BaseModel):
    items: list[SubmissionSummary]
    next_cursor: str | None = Field(None, description="pass as `cursor` for the next page; null on the last page")


class ScoreAttempt(BaseModel):
    at: UTCDateTime
    ok: bool
    status_code: int | None
    error: str | None


class LtiScoreView(BaseModel):
    """A score sent (or to be sent) to the LMS's gradebook for an LTI submission, with every attempt."""

    state: Literal["pending", "posted", "failed", "superseded"]
    score: dict[str, Any] = Field(description="the AGS score: scoreGiven, gradingProgress (PendingManual | "
                                              "FullyGraded), ...")
    next_attempt_at: UTCDateTime | None
    attempts: list[ScoreAttempt]


class SubmissionView(Identity):
    id: str
    status: Status
    exercise: str
    created_at: UTCDateTime
    updated_at: UTCDateTime
    attempts: int
    message: str | None = Field(None,
                                description="for not_gradable: what failed on our side (never the student's fault)")
    links: Links
    report: Report | None = None
    history: list[ReportVersion] = []
    webhooks: list[WebhookAttempt] = []
    lti_scores: list[LtiScoreView] = Field([], description="LTI submissions: the scores sent to the LMS, every attempt")


class BatchView(BaseModel):
    submissions: list[SubmissionView]


class ExerciseSummary(BaseModel):
    id: str
    version: int
    title: str
    language: str
    max_points: float
    pass_threshold: float


class RubricPoints(BaseModel):
    id: str
    title: str
    points: float


class QuestionView(BaseModel):
    id: str
    prompt: str


class ExerciseView(ExerciseSummary):
    template: str
    entry_point: str
    rubric: list[RubricPoints]
    questions: list[QuestionView]
    case_kinds: dict[str, int] = Field(description="how many cases of each kind grade the code (their data stays "
                                                   "secret)")


class ErrorBody(BaseModel):
    """Every error but 422: what went wrong, in words."""

    detail: str


class FieldError(BaseModel):
    loc: list[str | int] = Field(description='where: ["body", "exercise"], ["query", "wait"], ...')
    msg: str
    type: str


class ValidationErrorBody(BaseModel):
    """422: each refused input, located (the input itself is never echoed back)."""

    detail: list[FieldError]


def error(description: str, *, model: type[BaseModel] = ErrorBody,
          headers: dict[str, str] | None = None) -> dict[str, Any]:
    """One documented error answer of a route (for `responses=`); `headers` are always sent with it."""
    doc: dict[str, Any] = {"model": model, "description": description}
    if headers:
        doc["headers"] = {name: {"description": text, "required": True, "schema": {"type": "string"}}
                          for name, text in headers.items()}
    return doc


RETRY_AFTER = {"Retry-After": "seconds to wait before retrying"}
# What any route that reads the database may answer while it is unreachable (service/main.py).
DATABASE_UNAVAILABLE = error("the database is unavailable for the moment", headers=RETRY_AFTER)
# What any route behind an API key may answer (service/api/deps.py: get_key, require).
KEYED_ERRORS: dict[int | str, dict[str, Any]] = {
    401: error("missing, invalid or revoked API key", headers={"WWW-Authenticate": "Bearer"}),
    403: error("the key lacks the scope"),
    429: error("per-key rate limit", headers=RETRY_AFTER),
    503: DATABASE_UNAVAILABLE,
}
# What any route with a JSON body may answer besides 422: FastAPI refuses a body that is not text
# (invalid UTF-8) with 400, and BodySizeLimit (service/main.py) one over the cap with 413 and one
# not sent in full in time with 408.
BODY_ERRORS: dict[int | str, dict[str, Any]] = {
    400: error("the body could not be read (not UTF-8 text)"),
    408: error("the body did not arrive in full within max_body_seconds"),
    413: error("request body over max_body_bytes"),
}
