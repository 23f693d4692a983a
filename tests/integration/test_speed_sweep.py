"""A speed card whose process died before storing it (issue #20 review): the report would stay
`performance.status: pending` for good. The API process's pool sweeps such reports at start and
every minute (service/worker/speed_revision.py, SpeedSweeper) and gives each the revision "not
measured: the timing run was interrupted", with the guarantees of every speed revision.

Real database (SQLite and PostgreSQL), a real grading in the bubblewrap sandbox on the Triton
interpreter with the harness's test-only plain-clock speed timer; the grading's card is handed to
nobody (its process "died" between the grade and the card), and the report is written by the store
API the worker uses. Time passing is the report's `created_at` moved back past the budget.
"""
from __future__ import annotations

import shutil
import threading
from datetime import timedelta

import pytest
from sqlalchemy import select

from service.bootstrap import build_grader
from service.config import REPO_ROOT, Settings
from service.db import store
from service.db.base import utcnow
from service.db.models import ReportFact, ReportRow, ReviewFlag, Submission
from service.messages import render
from service.report import Performance, Report, in_language
from service.submission import Submission as SubmissionBody
from service.worker.metrics import Metrics
from service.worker.pool import InProcessPool
from service.worker.speed_revision import SpeedSweeper, speed_budget_s
from tests.support.servers import migrated_sessions
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.sandbox, pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")]

EXAMPLE = REPO_ROOT / "exercises/lesson06_mean_var/example_submission.json"


@pytest.fixture(params=["sqlite", "postgresql"])
def sessions(request, tmp_path):
    with migrated_sessions(request.param, tmp_path) as maker:
        yield maker


def _grader(sessions):
    """Lesson 6 with a small timed input, timed by the interpreter's plain-clock test timer."""
    grader = build_grader(Settings(device="interpreter"), sessions=sessions)
    exercise = grader.catalog.get("lesson06_mean_var")
    small = exercise.spec.speed.model_copy(update={"rows": 16, "draw_rows": 16, "cols": 256})
    exercise.spec = exercise.spec.model_copy(update={"speed": small})
    grader.cpu_speed_timer = True
    grader.memo = None  # each grading runs and times its program (a reuse would carry the first's card)
    return grader


def _graded_with_card_lost(sessions, grader, body: SubmissionBody) -> tuple[str, Performance]:
    """Grade a submission as the worker does, but hand its speed card to nobody: the process
    died after writing the grade. Returns the submission and the card that never got stored."""
    with sessions() as session:
        row, _ = store.create_submission(session, course_id="c1", body=body, callback_url="http://127.0.0.1:9/hook",
                                         idempotency_key=None)
        claim = store.claim(session, lease_s=600, submission_id=row.id)
        assert claim is not None
        submission_id, secret_seed = row.id, row.secret_seed
    cards: list[Performance] = []
    got = threading.Event()
    report = grader.grade(body, submission_id=submission_id, secret_seed=secret_seed,
                          on_speed=lambda card, _: (cards.append(card), got.set()))
    assert report.status == "graded" and report.performance.status == "pending"
    with sessions() as session:
        assert store.finish(session, claim, report) is not None
    assert got.wait(120), "the card was measured (and then lost with its process)"
    return submission_id, cards[0]


def _written_ago(sessions, submission_id: str, seconds: float) -> None:
    with sessions() as session:
        row = session.get_one(Submission, submission_id)
        session.get_one(ReportRow, row.current_report_id).created_at = utcnow() - timedelta(seconds=seconds)
        session.commit()


def _state(sessions, submission_id: str) -> dict:
    """Everything that follows a grade and that a speed revision must leave as it was."""
    with sessions() as session:
        row = session.get_one(Submission, submission_id)
        return {"grade": (row.status, row.score_total, row.passed, row.provisional, row.blocking, row.attempts,
                          row.graded_at, row.first_graded_at, row.needs_review),
                "facts": sorted((f.kind, f.item, f.key, f.ok) for f in session.scalars(
                    select(ReportFact).where(ReportFact.submission_id == submission_id))),
                "flags": sorted((f.target, f.kind) for f in session.scalars(
                    select(ReviewFlag).where(ReviewFlag.submission_id == submission_id)))}


def test_a_card_lost_with_its_process_is_marked_interrupted_by_the_sweep(sessions, tmp_path):
    grader = _grader(sessions)
    body = SubmissionBody.model_validate_json(EXAMPLE.read_text(encoding="utf-8"))
    with sessions() as session:
        store.create_course(session, "c1", "Course")
    lost, card = _graded_with_card_lost(sessions, grader, body)
    young, _ = _graded_with_card_lost(sessions, grader, body)
    settings = Settings(device="interpreter", data_dir=tmp_path)
    budget = speed_budget_s(settings.limits)
    assert budget > settings.limits.speed_timeout_s + settings.limits.kill_grace_s
    _written_ago(sessions, lost, budget + 60)  # its process died that long ago; `young` may still be timing
    before = {sid: _state(sessions, sid) for sid in (lost, young)}

    # `serve` (or the API process beside Celery workers) starts: its pool sweeps at once.
    pool = InProcessPool(sessions=sessions, grader=None, settings=settings, metrics=Metrics(), grading_threads=0)
    pool.start()
    try:
        with sessions() as session:
            revision = wait_for(lambda: session.scalar(select(ReportRow).where(
                ReportRow.submission_id == lost, ReportRow.reason == "speed")) or session.expire_all(),
                timeout=60, interval=0.2, what="the sweep's revision")
    finally:
        pool.stop()

    with sessions() as session:
        initial, again = store.report_history(session, lost)
        assert session.get_one(Submission, lost).current_report_id == revision.id == again.id
        events = [d.event for d in store.deliveries(session, lost)]
        young_history = [(r.reason, r.report["performance"]["status"]) for r in store.report_history(session, young)]
    first, last = Report.model_validate(initial.report), Report.model_validate(revision.report)
    assert (initial.reason, revision.reason) == ("initial", "speed")
    assert last.performance.status == "not_measured" and last.performance.kernel is None
    assert last.performance.reason == render("speed.interrupted", last.language)
    assert "interrupted" in render("speed.interrupted", "en") and "Ask for a regrade" in render("speed.interrupted", "en")
    assert "中断" in render("speed.interrupted", "zh") and "重新评分" in render("speed.interrupted", "zh")
    assert last.performance.model_dump(exclude={"status", "reason"}) == first.performance.model_dump(
        exclude={"status", "reason"}), "the card keeps its shape and bytes, and gets no figures"
    card_only = {"performance": True, "translations": {"__all__": {"performance"}}}
    assert last.model_dump(exclude=card_only) == first.model_dump(exclude=card_only)
    assert first.score == last.score and last.score.passed
    # In the other language too (#21.2): the pending card said there becomes the interrupted one.
    other = "en" if last.language == "zh" else "zh"
    assert in_language(first, other).performance.reason == render("speed.pending", other)
    switched = in_language(last, other).performance
    assert switched.status == "not_measured" and switched.reason == render("speed.interrupted", other)
    assert switched.claim == in_language(first, other).performance.claim != last.performance.claim
    assert events == ["submission.graded", "submission.speed_measured"]
    assert {sid: _state(sessions, sid) for sid in (lost, young)} == before, "no grade, attempt or fact moved"
    assert young_history == [("initial", "pending")], "a card still within its budget is left to its process"

    # The real card, had it come after all: the first word stays.
    with sessions() as session:
        assert store.add_speed_revision(session, lost, card.model_dump(mode="json")) is None

    # A sweeper goes on from where it got: the young card, once past its budget too, is swept
    # by the next sweep; the settled one is never revised twice.
    sweeper = SpeedSweeper(sessions, budget_s=budget)
    assert sweeper.sweep_once() == [] and sweeper.floor > 0
    _written_ago(sessions, young, budget + 1)
    (swept,) = sweeper.sweep_once()
    assert sweeper.sweep_once() == []
    with sessions() as session:
        history = store.report_history(session, young)
        assert [r.reason for r in history] == ["initial", "speed"] and history[-1].id == swept
        assert history[-1].report["performance"]["status"] == "not_measured"
        assert [d.event for d in store.deliveries(session, young)] == ["submission.graded",
                                                                        "submission.speed_measured"]
    assert _state(sessions, young) == before[young]
