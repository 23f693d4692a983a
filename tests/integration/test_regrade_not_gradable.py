"""A regrade that fails on our side never replaces a good grade: on a real database (SQLite and
PostgreSQL), graded by the worker's own step in the real bubblewrap sandbox, the regrade's sandbox
made unable to start (its interpreter is missing, as on a broken worker). The not_gradable report
goes into the history, the graded one stays current (gradebook; the course gets a regrade_failed
webhook, not a regraded one), and the regrade can be asked for again."""
from __future__ import annotations

import json
import shutil

import pytest
from sqlalchemy import select

from service.bootstrap import build_grader
from service.config import REPO_ROOT, Settings
from service.db import store
from service.db.models import Submission, WebhookDelivery
from service.grades.gradebook import gradebook
from service.submission import Submission as SubmissionBody
from service.worker.grading import grade_claimed
from tests.support.servers import migrated_sessions

pytestmark = [pytest.mark.sandbox, pytest.mark.timeout(300)]

EXAMPLE = REPO_ROOT / "exercises" / "lesson06_mean_var" / "example_submission.json"


@pytest.fixture(params=[pytest.param("sqlite", id="sqlite"),
                        pytest.param("postgresql", id="postgresql", marks=pytest.mark.postgres)])
def sessions(request, tmp_path):
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap (bwrap) is not installed: these gradings run in the real sandbox")
    with migrated_sessions(request.param, tmp_path) as maker:
        with maker() as session:
            store.create_course(session, "c1", "course one")
        yield maker


@pytest.fixture(scope="module")
def good():
    grader = build_grader(Settings(device="interpreter", warm_pool=0))
    yield grader
    grader.close()


@pytest.fixture
def broken(tmp_path):
    """Our failure, for real: the sandbox's interpreter is not there, so no sandbox starts."""
    grader = build_grader(Settings(device="interpreter", warm_pool=0,
                                   sandbox_python=str(tmp_path / "gone" / "bin" / "python3")))
    yield grader
    grader.close()


def submit(sessions) -> str:
    body = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    body.update(assignment="hw6", student={"id": "s1"})
    with sessions() as session:
        row, _ = store.create_submission(session, course_id="c1", body=SubmissionBody.model_validate(body),
                                         callback_url="https://lms.example.org/hook", idempotency_key=None)
    return row.id


def grade_next(sessions, grader) -> str | None:
    """What a worker does: claim the next submission and grade it (service/worker/grading.py)."""
    with sessions() as session:
        claim = store.claim(session, lease_s=120)
    assert claim is not None
    return grade_claimed(sessions, grader, claim, lease_s=120, max_attempts=3)


def regrade(sessions, submission_id: str) -> None:
    with sessions() as session:
        assert store.request_regrade(session, submission_id)


def state(sessions, submission_id: str) -> dict:
    with sessions() as session:
        row = session.get(Submission, submission_id)
        book = gradebook(session, "c1", store.course_policy(session, "c1"), assignment="hw6")
        return {
            "status": row.status, "current": row.current_report_id, "score": row.score_total,
            "history": [(h.seq, h.reason, h.status) for h in store.report_history(session, submission_id)],
            "messages": [h.report.get("message") for h in store.report_history(session, submission_id)],
            "gradebook": [(r.submission_id, r.points, r.not_gradable) for r in book.rows],
            "webhooks": list(session.scalars(select(WebhookDelivery.event)
                                             .where(WebhookDelivery.submission_id == submission_id)
                                             .order_by(WebhookDelivery.id))),
        }


def test_a_not_gradable_regrade_keeps_the_graded_report_current_and_can_be_retried(sessions, good, broken):
    submission_id = submit(sessions)
    assert grade_next(sessions, good) == "graded"
    before = state(sessions, submission_id)
    points = before["gradebook"][0][1]
    assert before["score"] is not None and before["gradebook"] == [(submission_id, points, 0)] and points is not None
    assert before["webhooks"] == ["submission.graded"]

    regrade(sessions, submission_id)
    assert grade_next(sessions, broken) == "not_gradable"  # the sandbox never started: our failure
    after = state(sessions, submission_id)
    assert after["history"] == [(1, "initial", "graded"), (2, "regrade", "not_gradable")], "the failure is recorded"
    assert "sandbox died during start-up" in after["messages"][1]
    assert after["status"] == "graded" and after["current"] == before["current"], "the good grade stays current"
    assert after["score"] == before["score"] and after["gradebook"] == before["gradebook"], "the gradebook keeps it"
    assert after["webhooks"] == ["submission.graded", "submission.regrade_failed"], \
        "the course is told of the failure (no report became current: no regraded)"

    regrade(sessions, submission_id)  # retried once the worker is fixed
    assert grade_next(sessions, good) == "graded"
    retried = state(sessions, submission_id)
    assert retried["history"][-1] == (3, "regrade", "graded") and retried["current"] != before["current"]
    assert retried["status"] == "graded" and retried["gradebook"] == [(submission_id, points, 0)]
    assert retried["webhooks"] == ["submission.graded", "submission.regrade_failed", "submission.regraded"]


def test_a_not_gradable_regrade_of_a_not_gradable_submission_is_current(sessions, broken):
    """Nothing good to keep: the newest report of our failure is the current one, as before."""
    submission_id = submit(sessions)
    assert grade_next(sessions, broken) == "not_gradable"
    regrade(sessions, submission_id)
    assert grade_next(sessions, broken) == "not_gradable"
    after = state(sessions, submission_id)
    assert after["status"] == "not_gradable"
    assert after["history"] == [(1, "initial", "not_gradable"), (2, "regrade", "not_gradable")]
    assert after["webhooks"] == ["submission.graded", "submission.regraded"], "it became current: no regrade_failed"
    with sessions() as session:
        assert store.current_report(session, session.get(Submission, submission_id)).seq == 2
    assert after["gradebook"] == [(None, None, 1)]
