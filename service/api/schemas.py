"""Request and response models of the API (the OpenAPI document is generated from these)."""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from service.report import Report
from service.submission import Submission

Status = Literal["queued", "running", "graded", "not_gradable"]


def _as_utc(value: datetime) -> datetime:
    """SQLite stores no time zone and gives naive datetimes back; every stored time is UTC."""
    return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value


UTCDateTime = Annotated[datetime, AfterValidator(_as_utc)]


def _storable(text: str) -> str:
    """PostgreSQL text cannot hold NUL, and a lone surrogate cannot be encoded: refuse both (422)."""
    if "\x00" in text:
        raise ValueError("must not contain NUL characters")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("must be valid Unicode text (no lone surrogates)") from None
    return text


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
    feedback: str


class ReportVersion(BaseModel):
    seq: int
    reason: str
    status: str
    created_at: UTCDateTime
    score: float | None
    current: bool


class WebhookAttempt(BaseModel):
    url: str
    attempts: int
    delivered: bool
    last_status_code: int | None
    last_error: str | None
    next_attempt_at: UTCDateTime | None


class SubmissionView(BaseModel):
    id: str
    status: Status
    exercise: str
    created_at: UTCDateTime
    updated_at: UTCDateTime
    attempts: int
    message: str | None = Field(None, description="for not_gradable: what failed on our side (never the student's fault)")
    links: Links
    report: Report | None = None
    history: list[ReportVersion] = []
    webhooks: list[WebhookAttempt] = []


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
    case_kinds: dict[str, int] = Field(description="how many cases of each kind grade the code (their data stays secret)")


class ErrorBody(BaseModel):
    detail: Any
