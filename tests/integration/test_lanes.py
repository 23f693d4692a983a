"""Fast threads, sandbox lanes and parked gradings (service/worker/lanes.py; issue #20 items 2, 5).

Real database (SQLite), real programs in the bubblewrap sandbox on the Triton interpreter. The
only thing the tests hold is the moment a lane's sandbox run starts (a gate in front of the real
`SandboxRunner.run`), so that "a run is in flight" lasts as long as the test needs; everything is
proved by counts (threads busy, gradings parked, runs per lane), never by wall-clock.
"""
from __future__ import annotations

import shutil
import threading

import pytest

from service.bootstrap import build_grader
from service.config import REPO_ROOT, Settings
from service.db import store
from service.db.migrate import upgrade
from service.db.models import Submission as SubmissionRow
from service.db.session import make_engine, make_sessionmaker
from service.report import Report
from service.submission import Submission
from service.worker.lanes import Lanes
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.sandbox,
              pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")]

EXAMPLE = REPO_ROOT / "exercises/lesson06_mean_var/example_submission.json"


@pytest.fixture
def sessions(tmp_path):
    url = f"sqlite:///{tmp_path / 'kernelgrade.db'}"
    upgrade(url)
    engine = make_engine(url)
    made = make_sessionmaker(engine)
    with made() as session:
        store.create_course(session, "c", "course")
    yield made
    engine.dispose()


def _example() -> Submission:
    return Submission.model_validate_json(EXAMPLE.read_text(encoding="utf-8"))


def _with_fill(template: str, fill: str) -> Submission:
    return _example().model_copy(update={"code": template.replace("______", fill, 1)})


def _submit(sessions, body: Submission) -> str:
    with sessions() as session:
        row, _ = store.create_submission(session, course_id="c", body=body, callback_url=None, idempotency_key=None)
        return row.id


def _status(sessions, submission_id: str) -> str:
    with sessions() as session:
        return session.get_one(SubmissionRow, submission_id).status


def _report(sessions, submission_id: str) -> Report:
    with sessions() as session:
        row = session.get_one(SubmissionRow, submission_id)
        current = store.current_report(session, row)
        assert current is not None
        return Report.model_validate(current.report)


class Gate:
    """In front of a runner's real `run`: each run waits until `open`, counting who entered."""

    def __init__(self, runner) -> None:
        self.entered = 0
        self.opened = threading.Event()
        self._lock = threading.Lock()
        real = runner.run

        def run(**kwargs):
            with self._lock:
                self.entered += 1
            assert self.opened.wait(300), "the test never opened the gate"
            return real(**kwargs)

        runner.run = run


def _lanes(sessions, tmp_path, *, gpus: list[int], fast: int = 2) -> Lanes:
    settings = Settings(device="interpreter", warm_pool=1, data_dir=tmp_path, gpus=gpus, fast_workers=fast)
    grader = build_grader(settings, sessions=sessions)
    # Learned first, as a started pool's hello would tell it: the memo key needs the sandbox's
    # device and Triton version. Also stores the example's (mask) program in the memo.
    learned = grader.grade(_example(), secret_seed=1)
    assert learned.status == "graded" and learned.program.memo_key
    return Lanes(sessions=sessions, grader=grader, lane_devices=settings.lane_devices(),
                 lane_threads=settings.lane_threads(), fast_threads=settings.fast_workers,
                 lease_s=settings.lease_s, max_attempts=settings.max_attempts)


def test_cheap_work_and_parked_gradings_hold_no_thread_while_the_lane_runs(sessions, tmp_path):
    lanes = _lanes(sessions, tmp_path, gpus=[0], fast=2)
    assert [lane.threads for lane in lanes.lanes] == [1]
    gate = Gate(lanes.lanes[0].runner)
    template = lanes.grader.catalog.get("lesson06_mean_var").template
    before = lanes.grader.counts.snapshot()
    already = set(threading.enumerate())  # another test's served app may still run lanes of its own
    lanes.start()
    try:
        new = _submit(sessions, _with_fill(template, "cols < N"))  # a new program: the lane runs it
        wait_for(lambda: gate.entered == 1, what="the new program's run to start")
        # Identical programs: parked on its claim (more of them than fast threads, so a thread each would stall).
        twins = [_submit(sessions, _with_fill(template, "cols < N")) for _ in range(3)]
        # Cheap: programs seen before (memo hits) and fills refused before any run.
        seen = [_submit(sessions, _example()) for _ in range(4)]
        refused = [_submit(sessions, _with_fill(template, "__import__('os').getpid() > 0")) for _ in range(2)]
        lanes.wake()

        wait_for(lambda: all(_status(sessions, s) == "graded" for s in seen + refused), timeout=120,
                 what="the cheap gradings to finish while the lane is busy")
        wait_for(lambda: lanes.counts()["parked"] == 3, what="the identical programs to park")
        counts = lanes.counts()
        assert counts["busy_lanes"] == 1 and counts["busy_fast"] == 0, counts
        assert gate.entered == 1, "nothing else reached a sandbox"
        assert _status(sessions, new) == "running" and all(_status(sessions, t) == "running" for t in twins)
        threads = [t.name for t in threading.enumerate()
                   if t not in already and t.name.startswith(("fast-", "lane-"))]
        assert sorted(threads) == ["fast-0", "fast-1", "lane-0-0"], "parking starts no thread"
        for submission_id in seen:
            assert _report(sessions, submission_id).program.reused
        for submission_id in refused:
            report = _report(sessions, submission_id)
            assert not report.program.ran and report.program.not_run_reason

        gate.opened.set()
        wait_for(lambda: all(_status(sessions, s) == "graded" for s in [new, *twins]), timeout=180,
                 what="the run and its parked twins to finish")
    finally:
        lanes.stop()
    counts = lanes.grader.counts.snapshot()
    assert counts["sandbox_runs"] - before["sandbox_runs"] == 1, "the identical programs ran once"
    assert counts["reused_after_wait"] - before["reused_after_wait"] == 3
    assert lanes.counts()["parked_total"] == 3 and lanes.counts()["parked"] == 0
    first = _report(sessions, new)
    assert not first.program.reused and "memo_wait_s" not in first.timing
    for twin in twins:
        report = _report(sessions, twin)
        assert report.program.reused and "memo_wait_s" in report.timing
        assert [c.model_dump() for c in report.cases] == [c.model_dump() for c in first.cases]


def test_two_simulated_lanes_run_two_programs_at_once_and_share_the_memo(sessions, tmp_path):
    """KERNELGRADE_GPUS=0,0: two lanes on the one device, each with its own runner and warm pool."""
    lanes = _lanes(sessions, tmp_path, gpus=[0, 0], fast=2)
    assert [(lane.device_index, lane.threads) for lane in lanes.lanes] == [(0, 1), (0, 1)]
    assert lanes.lanes[0].runner is not lanes.lanes[1].runner
    both_in = threading.Barrier(2, timeout=120)
    for lane in lanes.lanes:
        real = lane.runner.run

        def run(_real=real, **kwargs):
            both_in.wait()  # passes only when the other lane is running a program too
            return _real(**kwargs)

        lane.runner.run = run
    template = lanes.grader.catalog.get("lesson06_mean_var").template
    wrong = [m.fill for m in lanes.grader.catalog.get("lesson06_mean_var").mutants
             if m.fill is not None and m.id.startswith("wrong.")]
    lanes.start()
    try:
        pools = [lane.runner.pools.get((lanes.grader.mode, 0)) for lane in lanes.lanes]
        assert all(pool is not None for pool in pools) and pools[0] is not pools[1], "a warm pool per lane"
        firsts = [_submit(sessions, _with_fill(template, fill)) for fill in ("cols < N", wrong[0])]
        lanes.wake()
        wait_for(lambda: all(_status(sessions, s) == "graded" for s in firsts), timeout=240,
                 what="the two new programs, one per lane")
        counts = lanes.counts()
        assert counts["lane_0_runs"] == 1 and counts["lane_1_runs"] == 1, counts
        again = [_submit(sessions, _with_fill(template, fill)) for fill in ("cols < N", wrong[0])]
        lanes.wake()
        wait_for(lambda: all(_status(sessions, s) == "graded" for s in again), timeout=120,
                 what="the same programs again")
    finally:
        lanes.stop()
    assert lanes.counts()["lane_0_runs"] + lanes.counts()["lane_1_runs"] == 2, "the memo is shared by the lanes"
    assert all(_report(sessions, s).program.reused for s in again)


def test_a_hand_over_queues_the_submission_again_without_counting_an_attempt(sessions):
    """Celery's fast task gives a submission whose program must run back to the queue for the
    sandbox queue's task (store.hand_over): a stale lease cannot do it, nor finish afterwards."""
    submission_id = _submit(sessions, _example())
    with sessions() as session:
        first = store.claim(session, lease_s=60, submission_id=submission_id)
        assert first is not None and first.attempt == 1
        assert store.hand_over(session, first)
        row = session.get_one(SubmissionRow, submission_id)
        assert (row.status, row.attempts, row.lease_token) == ("queued", 0, None)
        assert not store.hand_over(session, first), "the lease is gone with the hand-over"
        second = store.claim(session, lease_s=60, submission_id=submission_id)
        assert second is not None and second.attempt == 1, "the sandbox task's claim is the first attempt"
        assert not store.hand_over(session, first) and store.renew_lease(session, second, lease_s=60)
