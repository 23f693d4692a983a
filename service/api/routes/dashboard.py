"""/v1/dashboard: an assignment's figures (what the class got wrong, and the deadline night), as
JSON or CSV; the same numbers as the /review/dashboard pages."""
from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Query
from fastapi.responses import Response

from service.api.deps import ReviewKey, SessionDep
from service.api.schemas import KEYED_ERRORS, UTCDateTime
from service.dashboard.export import to_csv
from service.dashboard.queries import Dashboard, dashboard
from service.downloads import csv_attachment

router = APIRouter(tags=["dashboard"], responses=KEYED_ERRORS)


@router.get("/v1/dashboard", response_model=Dashboard,
            responses={200: {"content": {"text/csv": {}},
                             "description": "the dashboard (JSON, or CSV with format=csv)"}})
def assignment_dashboard(session: SessionDep, key: ReviewKey,
                         assignment: Annotated[str, Query(min_length=1, max_length=200)],
                         deadline: Annotated[UTCDateTime | None, Query(description="shown on the timeline")] = None,
                         format: Literal["json", "csv"] = "json") -> Response:
    """One assignment of this course (`review` scope): submissions and students, pass rate, scores
    against the pass line, attempts until passing, vetoes and unmet requirements by rule, diagnoses
    ranked by students with example submissions, per case family the share of students failing,
    per written question the concepts found and missed, and per hour the submissions, the grading
    latency (p50/p95) and the queue depth. An assignment nobody submitted to gives zeros."""
    board = dashboard(session, key.course_id, assignment, deadline=deadline if isinstance(deadline, datetime) else None)
    if format == "csv":
        return Response(to_csv(board), media_type="text/csv; charset=utf-8",
                        headers=csv_attachment("dashboard", key.course_id, assignment))
    return Response(board.model_dump_json(), media_type="application/json")
