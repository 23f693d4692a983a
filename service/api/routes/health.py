"""Liveness, readiness and Prometheus metrics."""
from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import BaseModel
from sqlalchemy import text

from sandbox.backends.base import SandboxUnavailable
from service.db import store
from service.status import IN_PROGRESS_STATUSES

router = APIRouter(tags=["health"])


class ReadyView(BaseModel):
    ready: bool
    checks: dict[str, str]


@router.get("/healthz")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz", response_model=ReadyView,
            responses={503: {"model": ReadyView,
                             "description": "not ready: the database does not answer, no grading slot, "
                                            "or this process's sandbox cannot run (e.g. the Docker engine is down)"}})
def readyz(request: Request) -> JSONResponse:
    """Ready when the database answers, at least one sandbox slot exists to grade, and (where this
    process grades) its sandbox backend can run."""
    checks: dict[str, str] = {}
    try:
        with request.app.state.sessions() as session:
            session.execute(text("SELECT 1"))
        checks["database"] = "ok"
    except Exception as exc:  # noqa: BLE001
        checks["database"] = f"unreachable: {type(exc).__name__}"
    slots = request.app.state.dispatcher.slots()
    checks["sandbox_slots"] = str(slots) if slots > 0 else "none"
    checks["sandbox"] = _sandbox(request)
    ready = checks["database"] == "ok" and slots > 0 and not checks["sandbox"].startswith("unavailable")
    return JSONResponse(ReadyView(ready=ready, checks=checks).model_dump(), status_code=200 if ready else 503)


def _sandbox(request: Request) -> str:
    """The in-process graders' backend, checked now; Celery workers check their own (deploy/healthcheck.py)."""
    grader = getattr(request.app.state.dispatcher.pool, "grader", None)
    if grader is None:
        return "checked by the Celery workers"
    backend = grader.runner.backend
    try:
        backend.check()
    except SandboxUnavailable as exc:
        return f"unavailable ({backend.name}): {exc}"
    return f"ok ({backend.name})"


@router.get("/metrics", include_in_schema=False)
def metrics(request: Request) -> Response:
    m = request.app.state.metrics
    with request.app.state.sessions() as session:
        counts = store.counts_by_status(session)
    for status in IN_PROGRESS_STATUSES:
        m.queue_depth.labels(status).set(counts.get(status, 0))
    lanes = getattr(request.app.state.dispatcher.pool, "lanes", None)  # serve's own grading (service/worker/lanes.py)
    if lanes is not None:
        now = lanes.counts()
        for state, name in (("parked", "parked"), ("waiting_run", "waiting_runs"), ("running", "busy_lanes")):
            m.lane_gradings.labels(state).set(now[name])
    return Response(generate_latest(m.registry), media_type=CONTENT_TYPE_LATEST)
