"""Request and response models of the API (the OpenAPI document is generated from these)."""
from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from service.report import Report
from service.submission import Submission

Status = Literal["queued", "running", "graded", "not_gradable"]


class SubmissionCreate(Submission):
    """A submission (DESIGN.md contract) plus where to POST the report when it is ready."""

    callback_url: str | None = Field(None, max_length=2000, description="https URL that receives the signed report")


class BatchItem(SubmissionCreate):
    idempotency_key: str | None = Field(None, max_length=200, description="per-item idempotency key")


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
    created_at: datetime
    score: float | None
    current: bool


class WebhookAttempt(BaseModel):
    url: str
    attempts: int
    delivered: bool
    last_status_code: int | None
    last_error: str | None
    next_attempt_at: datetime | None


class SubmissionView(BaseModel):
    id: str
    status: Status
    exercise: str
    created_at: datetime
    updated_at: datetime
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
