"""/v1/feedback/{token}: a student's own report, through an unguessable link (no key)."""
from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, HTTPException, Query
from pydantic import BaseModel, Field
from sqlalchemy import select

from service.api.deps import SessionDep
from service.api.schemas import DATABASE_UNAVAILABLE, error
from service.db import store
from service.db.models import Submission
from service.student_view import student_language, student_report

router = APIRouter(prefix="/v1/feedback", tags=["feedback"])


class FeedbackView(BaseModel):
    status: str
    exercise: str
    report: dict[str, Any] | None = None
    language: Literal["zh", "en"] = Field("zh", description="the language the student reads their feedback in: ?lang=, "
                                                             "else the submission's declared language, else the one its "
                                                             "written answers are in, else the lesson's")


@router.get("/{token}", response_model=FeedbackView,
            responses={404: error("no such feedback link"), 503: DATABASE_UNAVAILABLE})
def feedback(token: str, session: SessionDep,
             lang: Literal["zh", "en"] | None = Query(None, description="the language to read it in")) -> FeedbackView:
    row = (session.scalar(select(Submission).where(Submission.feedback_token == token))
           if len(token) <= 64 and "\x00" not in token else None)
    if row is None:
        raise HTTPException(404, "no such feedback link")
    current = store.current_report(session, row)
    report = dict(current.report) if current is not None and row.status in ("graded", "not_gradable") else None
    if report:
        report = student_report(report)  # no seeds, no harness frames (service/student_view.py)
    lesson = str(report.get("language") or "zh") if report else "zh"
    return FeedbackView(status=row.status, exercise=row.exercise_id, report=report,
                        language=student_language(lang, row.language, row.body, lesson))  # type: ignore[arg-type]
