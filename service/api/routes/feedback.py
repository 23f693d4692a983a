"""/v1/feedback/{token}: a student's own report, through an unguessable link (no key)."""
from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException
from pydantic import BaseModel
from sqlalchemy import select

from service.api.deps import SessionDep
from service.api.schemas import DATABASE_UNAVAILABLE, error
from service.db import store
from service.db.models import Submission

router = APIRouter(prefix="/v1/feedback", tags=["feedback"])


class FeedbackView(BaseModel):
    status: str
    exercise: str
    report: dict[str, Any] | None = None


@router.get("/{token}", response_model=FeedbackView,
            responses={404: error("no such feedback link"), 503: DATABASE_UNAVAILABLE})
def feedback(token: str, session: SessionDep) -> FeedbackView:
    row = (session.scalar(select(Submission).where(Submission.feedback_token == token))
           if len(token) <= 64 and "\x00" not in token else None)
    if row is None:
        raise HTTPException(404, "no such feedback link")
    current = store.current_report(session, row)
    report = dict(current.report) if current is not None and row.status in ("graded", "not_gradable") else None
    if report:
        # Seeds stay with the course: they determine the hidden inputs, which a regrade reuses.
        report.pop("seeds", None)
        report["cases"] = [{k: v for k, v in case.items() if k != "seed"} for case in report.get("cases", [])]
    return FeedbackView(status=row.status, exercise=row.exercise_id, report=report)
