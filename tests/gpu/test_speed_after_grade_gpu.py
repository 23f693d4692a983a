"""GPU only: the grade first, the speed card after (issue #20 item 1), with the real timing phase
(triton.testing.do_bench in the sandbox) in the real bwrap sandbox and the worker's real database
path: the graded report is written with the card `pending` and no speed phase in its timing, then
the card arrives as the `speed` revision with the figures, the same score and the webhook event;
a kernel that fails its cases is never timed; a one-off grading still carries the figures itself.

Skipped where no NVIDIA GPU is present (CI); run on the H200 with
`KERNELGRADE_DEVICE=gpu .venv/bin/python -m pytest tests/gpu/test_speed_after_grade_gpu.py -q`.
"""
from __future__ import annotations

import json
import shutil
import time

import pytest
from sqlalchemy import select

from service.bootstrap import build_grader
from service.config import Settings, gpu_present
from service.db import store
from service.db.migrate import upgrade
from service.db.models import ReportRow
from service.db.models import Submission as Submission_
from service.db.session import make_engine, make_sessionmaker
from service.messages import render
from service.report import Report
from service.submission import Submission
from service.worker.grading import grade_claimed
from tests.support.servers import database

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not gpu_present(), reason="needs an NVIDIA GPU"),
              pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")]

EXERCISE = "lesson06_mean_var"


def _submission(grader, fill: str) -> Submission:
    exercise = grader.catalog.get(EXERCISE)
    example = json.loads((exercise.root / "example_submission.json").read_text(encoding="utf-8"))
    return Submission(exercise=EXERCISE, code=exercise.template.replace("______", fill, 1), answers=example["answers"],
                      explanation=example["explanation"], claimed_output=example.get("claimed_output", ""))


@pytest.fixture
def sessions(tmp_path):
    with database("sqlite", tmp_path) as url:
        upgrade(url)
        engine = make_engine(url)
        try:
            yield make_sessionmaker(engine)
        finally:
            engine.dispose()


def test_the_grade_is_written_first_and_the_measured_card_follows_as_a_revision(sessions, tmp_path):
    grader = build_grader(Settings(device="gpu", sandbox="bwrap", data_dir=tmp_path, warm_pool=0,
                                   compile_cache_prewarm=False), sessions=sessions)
    try:
        with sessions() as session:
            store.create_course(session, "c1", "Course")
            row, _ = store.create_submission(session, course_id="c1", body=_submission(grader, "mask"),
                                             callback_url="http://127.0.0.1:9/hook", idempotency_key=None)
            submission_id = row.id
            claim = store.claim(session, lease_s=600)
        assert grade_claimed(sessions, grader, claim, lease_s=600, max_attempts=3) == "graded"
        with sessions() as session:
            first = Report.model_validate(store.report_history(session, submission_id)[0].report)
        assert first.performance.status == "pending" and "speed_s" not in first.timing, first.timing
        assert first.score.passed and first.score.total == 10

        deadline = time.monotonic() + grader.runner.limits.speed_timeout_s + 30
        revision = None
        while revision is None and time.monotonic() < deadline:
            with sessions() as session:
                revision = session.scalar(select(ReportRow).where(ReportRow.submission_id == submission_id,
                                                                  ReportRow.reason == "speed"))
            time.sleep(0.2)
        assert revision is not None, "the speed card never came"
        with sessions() as session:
            events = [d.event for d in store.deliveries(session, submission_id)]
            assert store.current_report(session, session.get_one(Submission_, submission_id)).id == revision.id
        last = Report.model_validate(revision.report)
        p = last.performance
        assert p.status == "measured", p.reason
        assert p.kernel.reps >= 5 and p.plausible and 0 < p.percent_of_peak <= 105 and p.speedup_vs_baseline > 0
        assert p.method["timer"] == "CUDA events"
        card_only = {"performance": True, "translations": {"__all__": {"performance"}}}  # the card, in every language
        assert last.score == first.score and last.model_dump(exclude=card_only) == first.model_dump(exclude=card_only)
        assert all(texts.performance is not None and texts.performance.status == "measured"
                   for texts in last.translations.values()), last.translations
        assert events == ["submission.graded", "submission.speed_measured"]

        # Kernels that did not pass are not timed: `cols <= N` passes the given check and raises in no
        # case (its sandbox starts timing and is killed once the cases are compared), `True` fails the
        # given check (the harness never starts the phase).
        cards: list = []
        for fill in ("cols <= N", "True"):
            wrong = grader.grade(_submission(grader, fill), secret_seed=3, on_speed=lambda card, _: cards.append(card))
            assert not all(c.passed for c in wrong.cases) and wrong.performance.status == "not_measured"
            assert wrong.performance.reason == render("speed.not_passed", wrong.language)
            assert "speed_s" not in wrong.timing

        # A one-off grading (the CLI) waits for the figures and carries them.
        inline = grader.grade(_submission(grader, "cols < N"), secret_seed=4)
        assert inline.performance.status == "measured" and inline.timing["speed_s"] > 0
        time.sleep(1.0)
        assert cards == [], "a kernel that did not pass gets no card"
    finally:
        grader.close()
