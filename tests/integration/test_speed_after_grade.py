"""The grade first, the speed card after (issue #20 item 1), in the real bwrap sandbox on the CPU.

The speed phase itself is GPU only (tests/gpu/test_speed_after_grade_gpu.py times the real thing);
here the harness's test-only plain-clock timer (`SpeedJob.cpu_timer`) makes the interpreter run a
speed phase too, so the hand-over is tested for real: the runner returns with every case result
while the sandbox is still in its speed phase, the phase is collected (or cancelled, or killed at
its budget) afterwards, and the worker stores the card as a report revision (reason `speed`,
webhook `submission.speed_measured`) that changes no points.
"""
from __future__ import annotations

import shutil
import threading
import time

import numpy as np
import pytest
from sqlalchemy import select

from sandbox.contract import CaseJob, DeviceMode, Limits, SpeedJob, TensorArg
from sandbox.pool import JOB_PREFIX
from sandbox.runner import SandboxRunner
from service.bootstrap import build_grader
from service.config import REPO_ROOT, Settings
from service.db import store
from service.db.migrate import upgrade
from service.db.models import ReportRow, Submission, WebhookDelivery
from service.db.session import make_engine, make_sessionmaker
from service.grading.memo import InMemoryMemo
from service.messages import render
from service.report import SPEED_TEXTS, Performance, Report, in_language
from service.submission import Submission as SubmissionBody
from service.web.feedback import performance_view
from service.web.i18n import texts
from service.web.pages import templates
from service.worker.grading import grade_claimed
from service.worker.lanes import Lanes
from tests.support.servers import database

pytestmark = [pytest.mark.sandbox, pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")]

EXAMPLE = REPO_ROOT / "exercises/lesson06_mean_var/example_submission.json"

PROGRAM = '''
import time
import torch


def double(x):
    if x.numel() > 64:  # the speed input only
        time.sleep(float(x[0]))
    if float(x[0]) < 0:
        raise ValueError("negative")
    return x * 2
'''


def _run(runner: SandboxRunner, first: float, *, program: str = PROGRAM):
    speed = SpeedJob(args=[TensorArg(key="big")], names=["x"], baseline="x * 2", cpu_timer=True)
    return runner.run(program=program, given_check=None, given_seed=0, entry_point="double",
                      cases=[CaseJob(id="c", args=[TensorArg(key="x")], outputs=["y"])],
                      inputs={"x": np.full(4, first, dtype=np.float32),
                              "big": np.full(128, max(first, 0.0), dtype=np.float32)},
                      mode=DeviceMode.interpreter, speed=speed, detach_speed=True)


def test_the_runner_hands_back_the_cases_before_the_speed_phase_ends(bwrap_backend, tmp_path):
    """With a warm pool, as the service runs (a sandbox of its own folder, the job staged apart)."""
    runner = SandboxRunner(backend=bwrap_backend, limits=Limits(speed_timeout_s=4, kill_grace_s=1),
                           work_root=tmp_path)
    runner.start_pool(mode=DeviceMode.interpreter, device_index=0, size=1)
    try:
        # Passing cases: the run returns in the speed phase (the sandbox sleeps 0.6 s in each of its
        # 3 timed calls: long enough to be still alive after a slow hand-over on a loaded machine,
        # inside the 4 s budget), the sandbox still alive; collecting gives its figures and ends it.
        result = _run(runner, 0.6)
        assert result.infra_error is None and [c.status for c in result.cases] == ["ok"]
        phase = result.speed_pending
        assert result.speed is None and phase is not None and phase._sandbox.alive()
        folders = [phase._job_root, phase._sandbox.job_dir]
        assert all(f.is_dir() for f in folders), "the job's folders stay while the phase runs"
        speed = phase.collect()
        assert speed.status == "ok" and speed.kernel["reps"] == 3 and speed.kernel["min_ms"] >= 600, speed
        assert not phase._sandbox.alive() and not any(f.exists() for f in folders)
        assert phase.collect() is speed  # once

        # A phase that never sends its figures is killed at its own budget: `timeout`, sandbox gone.
        # And one neither collected nor cancelled (a bug of ours in between): its watchdog kills it.
        result = _run(runner, 30.0)
        speed = result.speed_pending.collect()
        assert speed.status == "timeout" and speed.said.code == "sandbox.timeout", speed
        assert speed.said.params["limit"] == 4 and not result.speed_pending._sandbox.alive()
        forgotten = _run(runner, 30.0)
        folders = [forgotten.speed_pending._job_root, forgotten.speed_pending._sandbox.job_dir]
        assert _wait_for(lambda: not forgotten.speed_pending._sandbox.alive(), timeout_s=30)
        assert forgotten.speed_pending.collect().status == "skipped"  # cancelled: the figures were never read
        assert not any(f.exists() for f in folders)

        # A `speed_start` that student code writes before the cases does not end the reading early.
        # (The phase sleeps 0.6 s per call, as above: a phase that ends at once can send its figures in
        # the same read as its start, and the run then returns them in `result.speed`, not detached.)
        forger = "import sys\nsys.modules['wire'].write_frame(int(sys.argv[2]), {'type': 'speed_start'})\n" + PROGRAM
        result = _run(runner, 0.6, program=forger)
        assert [c.status for c in result.cases] == ["ok"] and result.speed_pending.collect().status == "ok"

        # A case that raised: the harness starts no speed phase at all.
        result = _run(runner, -1.0)
        assert [c.status for c in result.cases] == ["error"] and result.speed_pending is None and result.speed is None
    finally:
        runner.close()
    assert not list(tmp_path.glob(f"{JOB_PREFIX}*"))


@pytest.fixture
def sessions(tmp_path):
    with database("sqlite", tmp_path) as url:
        upgrade(url)
        engine = make_engine(url)
        try:
            yield make_sessionmaker(engine)
        finally:
            engine.dispose()


def _small_speed(grader):
    """Lesson 6 with a small timed input: the interpreter's plain-clock timer on 16 × 256, not 16384 × 4096."""
    exercise = grader.catalog.get("lesson06_mean_var")
    small = exercise.spec.speed.model_copy(update={"rows": 16, "draw_rows": 16, "cols": 256})
    exercise.spec = exercise.spec.model_copy(update={"speed": small})
    grader.cpu_speed_timer = True
    grader.memo = InMemoryMemo()
    return exercise


def _page(report: Report) -> str:
    t = texts(report.language)
    return templates().get_template("feedback.html").render(
        t=t, row=type("Row", (), {"exercise_id": report.exercise.id, "status": "graded"})(), report=report, title="",
        exercise_title="", score_svg="", cases=[], pending=[], performance=performance_view(report, t), reasons=[],
        language=report.language, lead=None, ladders=[], hint_cost=None, lang_asked="", switch=[])


def _wait_for(predicate, timeout_s: float = 60.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError("timed out waiting")


def test_the_worker_stores_the_grade_then_the_speed_card_as_a_revision(sessions):
    grader = build_grader(Settings(device="interpreter"), sessions=sessions)
    _small_speed(grader)
    body = SubmissionBody.model_validate_json(EXAMPLE.read_text(encoding="utf-8"))
    with sessions() as session:
        store.create_course(session, "c1", "Course")
        row, _ = store.create_submission(session, course_id="c1", body=body, callback_url="http://127.0.0.1:9/hook",
                                         idempotency_key=None)
        submission_id = row.id
        claim = store.claim(session, lease_s=600)
    assert grade_claimed(sessions, grader, claim, lease_s=600, max_attempts=3) == "graded"

    with sessions() as session:
        revision = _wait_for(lambda: session.scalar(select(ReportRow).where(
            ReportRow.submission_id == submission_id, ReportRow.reason == "speed")) or session.expire_all())
        initial, again = store.report_history(session, submission_id)
        row = session.get_one(Submission, submission_id)
        events = [d.event for d in store.deliveries(session, submission_id)]
        attempts, graded_at, first_graded_at = row.attempts, row.graded_at, row.first_graded_at
        assert row.current_report_id == revision.id and again.id == revision.id
        first, last = Report.model_validate(initial.report), Report.model_validate(revision.report)

    # The grade came first, final, with the card pending; the revision adds the figures and nothing else.
    assert (initial.seq, initial.reason, revision.seq, revision.reason) == (1, "initial", 2, "speed")
    assert first.performance.status == "pending" and first.performance.kernel is None
    assert first.performance.reason == render("speed.pending", first.language)
    assert last.performance.status == "measured" and last.performance.device == "cpu (test timer)", last.performance
    assert last.performance.kernel.reps == 3 and last.performance.timed_shape == [16, 256]
    assert first.score == last.score and first.score.passed and first.score.total == 10
    card_only = {"performance": True, "translations": {"__all__": {"performance"}}}
    assert last.model_dump(exclude=card_only) == first.model_dump(exclude=card_only)
    assert events == ["submission.graded", "submission.speed_measured"]
    with sessions() as session:  # nothing that counts a grading moved
        row = session.get_one(Submission, submission_id)
        assert (row.attempts, row.graded_at, row.first_graded_at) == (attempts, graded_at, first_graded_at)
        assert session.scalar(select(WebhookDelivery.report_id).where(
            WebhookDelivery.event == "submission.speed_measured")) == revision.id

    # The page: "pending" on the graded report, the figures on the revision.
    assert render("speed.pending", first.language) in _page(first) and 'data-status="pending"' in _page(first)
    assert 'data-status="measured"' in _page(last)

    # The other language (#21.2): the card switches with the rest, the pending one and the measured
    # revision alike, said from the same figures; the revision's translations carry the new card.
    other = "en" if first.language == "zh" else "zh"
    speed = grader.catalog.get("lesson06_mean_var").spec.speed
    pending_other, measured_other = in_language(first, other).performance, in_language(last, other).performance
    assert first.translations[other].performance.status == "pending"
    assert last.translations[other].performance.status == "measured"
    assert pending_other.status == "pending" and pending_other.reason == render("speed.pending", other)
    assert pending_other.reason != first.performance.reason
    for card in (pending_other, measured_other):
        assert (card.claim, card.claim_source, card.baseline_label, card.bytes_note) == (
            speed.claim.in_(other), speed.claim_source.in_(other), speed.baseline.label.in_(other),
            speed.bytes_note.in_(other))
    assert measured_other.claim != last.performance.claim
    assert measured_other.model_dump(exclude=set(SPEED_TEXTS)) == last.performance.model_dump(exclude=set(SPEED_TEXTS))
    assert render("speed.pending", other) in _page(in_language(first, other))
    page = _page(in_language(last, other))
    assert 'data-status="measured"' in page and speed.claim_source.in_(other) in page
    assert speed.claim_source.in_(first.language) not in page

    # A second card for the same report (a late duplicate) writes nothing.
    with sessions() as session:
        assert store.add_speed_revision(session, submission_id, last.performance.model_dump(mode="json")) is None

    # The memo entry got the figures: an identical program graded now reuses them (no run, no revision).
    cards: list[Performance] = []
    reused = grader.grade(body, secret_seed=7, on_speed=lambda card, _: cards.append(card))
    assert reused.program.reused and reused.performance.status == "measured" and reused.performance.reused
    assert reused.performance.kernel == last.performance.kernel and cards == []
    assert in_language(reused, other).performance.claim == speed.claim.in_(other)

    # Reused while the first run is still timing (its entry's card pending): this report says
    # pending too, and its card follows once that run puts the figures into the memo entry.
    key = reused.program.memo_key
    pending = grader.memo.get(key).model_copy(update={"performance": first.performance})
    grader.memo = InMemoryMemo()
    grader.memo.put(key, pending, exercise_id=body.exercise, exercise_version=first.exercise.version)
    got = threading.Event()
    said: list[dict[str, Performance]] = []
    waiting = grader.grade(body, secret_seed=8,
                           on_speed=lambda card, other: (cards.append(card), said.append(other), got.set()))
    assert waiting.program.reused and waiting.performance.status == "pending" and not got.wait(0.5)
    assert grader.memo.set_performance(key, last.performance)
    assert got.wait(30) and cards[0].status == "measured" and cards[0].reused
    assert cards[0].kernel == last.performance.kernel
    # the memo's card, said again in the other language from the card itself
    assert said[0][other].claim == speed.claim.in_(other) and said[0][other].kernel == last.performance.kernel
    assert said[0][other].reused and said[0][other].status == "measured"
    assert in_language(waiting, other).performance.reason == render("speed.pending", other)
    assert not grader.memo.set_performance(key, last.performance), "the first card stays"


def test_a_kernel_that_did_not_pass_is_not_timed_nor_one_past_the_in_flight_bound(sessions):
    grader = build_grader(Settings(device="interpreter"))
    _small_speed(grader)
    grader.memo = None
    body = SubmissionBody.model_validate_json(EXAMPLE.read_text(encoding="utf-8"))

    # A wrong kernel that passes the given check and raises in no case (`cols <= N` fails a probe):
    # its sandbox starts timing and is stopped once the cases are compared; no card is ever delivered.
    wrong = body.model_copy(update={"code": body.code.replace("tl.where(mask,", "tl.where(cols <= N,")})
    assert wrong.code != body.code
    delivered = threading.Event()
    report = grader.grade(wrong, secret_seed=5, on_speed=lambda card, _: delivered.set())
    assert report.status == "graded" and not all(c.passed for c in report.cases)
    assert report.performance.status == "not_measured"
    assert report.performance.reason == render("speed.not_passed", report.language)
    other = "en" if report.language == "zh" else "zh"
    assert in_language(report, other).performance.reason == render("speed.not_passed", other)
    assert "speed_s" not in report.timing and not delivered.wait(1.0)

    # With as many speed phases going on after their grades as a grader allows (each holds a
    # sandbox), the next one is not timed (never waited for in the service's threads) and says so.
    grader._speed_slots = threading.BoundedSemaphore(1)
    grader._speed_slots.acquire()
    report = grader.grade(body, secret_seed=5, on_speed=lambda card, _: delivered.set())
    assert report.performance.status == "not_measured" and not delivered.is_set()
    assert report.performance.reason == render("speed.busy", report.language)
    assert in_language(report, other).performance.reason == render("speed.busy", other)

    # A one-off grading (the CLI: no on_speed) waits for its card and carries the figures itself.
    report = grader.grade(body, secret_seed=5)
    assert report.performance.status == "measured" and report.timing["speed_s"] > 0
    switched = in_language(report, other).performance  # said again from the same run's figures
    assert switched.status == "measured" and switched.kernel == report.performance.kernel
    assert switched.claim != report.performance.claim


def test_the_in_process_lanes_store_the_speed_card_as_a_revision_too(sessions, tmp_path):
    """The service's own driver (service/worker/lanes.py: the run on a lane thread, the rest on a
    fast thread): the grade first with the card pending, then the `speed` revision."""
    settings = Settings(device="interpreter", warm_pool=0, data_dir=tmp_path, gpus=[0], fast_workers=1)
    grader = build_grader(settings, sessions=sessions)
    _small_speed(grader)
    lanes = Lanes(sessions=sessions, grader=grader, lane_devices=settings.lane_devices(),
                  lane_threads=settings.lane_threads(), fast_threads=settings.fast_workers,
                  lease_s=settings.lease_s, max_attempts=settings.max_attempts)
    body = SubmissionBody.model_validate_json(EXAMPLE.read_text(encoding="utf-8"))
    with sessions() as session:
        store.create_course(session, "c1", "Course")
        submission_id = store.create_submission(session, course_id="c1", body=body, callback_url=None,
                                                idempotency_key=None)[0].id
    lanes.start()
    try:
        lanes.wake()
        with sessions() as session:
            revision = _wait_for(lambda: session.scalar(select(ReportRow).where(
                ReportRow.submission_id == submission_id, ReportRow.reason == "speed")) or session.expire_all(),
                timeout_s=240)
            initial = store.report_history(session, submission_id)[0]
    finally:
        lanes.stop()
    first, last = Report.model_validate(initial.report), Report.model_validate(revision.report)
    assert initial.reason == "initial" and first.performance.status == "pending"
    assert last.performance.status == "measured" and last.score == first.score
