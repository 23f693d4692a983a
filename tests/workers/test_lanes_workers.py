"""Waiting costs no worker (issue #20 item 2), with real processes.

Celery's two queues: a fast worker claims submissions and finishes all that needs no sandbox; a
sandbox worker only runs programs; a grading whose identical program is in flight is parked (its
task re-enqueued under the same lease), holding no worker thread. `kernelgrade serve` (its lanes,
service/worker/lanes.py): SIGKILLed while gradings are parked, nothing is lost.

Real processes: `kernelgrade serve`, `kernelgrade worker --lane fast|sandbox` (one thread each)
over the real Redis and PostgreSQL, programs in the real bubblewrap sandbox. A given check that
sleeps keeps a run in flight long enough.
"""
from __future__ import annotations

import json
import re

import httpx
import pytest
from sqlalchemy import select

from service.db.models import ReportRow
from tests.workers.procs import (
    Ledger, create_course_and_key, descendants, example_body, live, make_env, post_submission, slow_exercises,
    start_serve, start_worker, wait_for,
)

pytestmark = [pytest.mark.exclusive, pytest.mark.workers, pytest.mark.sandbox, pytest.mark.timeout(300)]

SLOW_S = 6


@pytest.fixture
def ledger(pg_url):
    ledger = Ledger(pg_url)
    try:
        yield ledger
    finally:
        ledger.close()


def _with_fill(body: dict, fill: str) -> dict:
    old = "tl.where(mask, "
    assert old in body["code"]
    return {**body, "code": body["code"].replace(old, f"tl.where({fill}, ", 1)}


def _report(ledger: Ledger, submission_id: str) -> dict:
    row = ledger.assert_exactly_one_current_report(submission_id)
    assert row["attempts"] == 1, row
    return _report_of(ledger, submission_id)


def _received(worker, task: str) -> int:
    return len(re.findall(rf"Task kernelgrade\.{task}\[[\w-]+\] received", worker.log()))


def _report_of(ledger: Ledger, submission_id: str) -> dict:
    with ledger.engine.connect() as conn:
        report = conn.execute(select(ReportRow.report).where(ReportRow.submission_id == submission_id)).scalar_one()
    return report if isinstance(report, dict) else json.loads(report)


@pytest.mark.postgres
@pytest.mark.redis
def test_parked_gradings_hold_no_fast_worker_and_the_sandbox_worker_runs_each_program_once(
        tmp_path, pg_url, redis_db, ledger, procs):
    env = make_env(tmp_path, database_url=pg_url, lease_s=6.0, queue="celery",
                   broker_url=f"redis://127.0.0.1:6379/{redis_db}",
                   KERNELGRADE_EXERCISES_DIR=str(slow_exercises(tmp_path, SLOW_S)), KERNELGRADE_WARM_POOL="1")
    key = create_course_and_key(env)
    _, url = start_serve(procs, env)
    fast = start_worker(procs, env, name="fast", lane="fast", concurrency=1)
    sandbox = start_worker(procs, env, name="sandbox", lane="sandbox", concurrency=1)
    body = example_body(slow_s=SLOW_S)

    # A first program: the memo's first entry tells the fast worker the sandbox's device and Triton.
    learn = post_submission(url, key, _with_fill(body, "cols < N"))
    wait_for(lambda: ledger.all_final([learn]), timeout=150, interval=0.5, what="the first grading",
             on_timeout=procs.tails)

    first = post_submission(url, key, body)
    wait_for(lambda: _received(sandbox, "run") == 2, timeout=60, interval=0.2,
             what="the sandbox worker to start the second run", on_timeout=procs.tails)
    twins = [post_submission(url, key, body) for _ in range(3)]
    refused = post_submission(url, key, _with_fill(body, "__import__('os').getpid() > 0"))
    # The fast worker's one thread finishes the refused fill while three twins are parked and the
    # sandbox worker's one thread still runs the first: the twins hold no thread.
    wait_for(lambda: ledger.all_final([refused]), timeout=60, interval=0.2, what="the refused fill",
             on_timeout=procs.tails)
    assert ledger.status(first) == "running" and all(ledger.status(t) == "running" for t in twins)

    wait_for(lambda: ledger.all_final([first, *twins]), timeout=150, interval=0.5, what="the run and its twins",
             on_timeout=procs.tails)
    assert _received(sandbox, "run") == 2, "each new program ran once"
    assert _received(fast, "grade") > 6, "parked gradings came back to the fast queue"
    assert "kernelgrade.grade[" not in sandbox.log() and "kernelgrade.run[" not in fast.log()
    reference = _report(ledger, first)
    assert reference["program"]["reused"] is False
    for twin in twins:
        report = _report(ledger, twin)
        assert report["status"] == "graded" and report["program"]["reused"] is True
        assert report["cases"] == reference["cases"]
    assert _report(ledger, refused)["program"]["ran"] is False


def _lane_gradings(url: str) -> dict[str, float]:
    text = httpx.get(f"{url}/metrics", timeout=10).text
    return {m.group(1): float(m.group(2))
            for m in re.finditer(r'^kernelgrade_lane_gradings\{state="(\w+)"\} (\S+)$', text, re.M)}


def test_serve_killed_while_gradings_are_parked_loses_none_of_them(tmp_path, procs):
    env = make_env(tmp_path, database_url=None, lease_s=3, exercises_dir=slow_exercises(tmp_path, SLOW_S),
                   KERNELGRADE_WARM_POOL="1")
    key = create_course_and_key(env)
    ledger = Ledger(f"sqlite:///{tmp_path / 'data' / 'kernelgrade.db'}")
    try:
        first_serve, url = start_serve(procs, env, name="serve1")
        body = example_body(slow_s=SLOW_S)
        learn = post_submission(url, key, _with_fill(body, "cols < N"))  # the memo key learns the device
        wait_for(lambda: ledger.all_final([learn]), timeout=150, interval=0.5, what="the first grading",
                 on_timeout=procs.tails)
        first = post_submission(url, key, body)
        wait_for(lambda: _lane_gradings(url).get("running") == 1, timeout=60, interval=0.2,
                 what="the run to start", on_timeout=procs.tails)
        twins = [post_submission(url, key, body) for _ in range(2)]
        wait_for(lambda: _lane_gradings(url).get("parked") == 2, timeout=30, interval=0.2,
                 what="the twins to park", on_timeout=procs.tails)
        doomed = descendants(first_serve.pid)

        first_serve.kill()

        wait_for(lambda: not any(live(pid) for pid in doomed), timeout=20, what="serve1's processes to die")
        assert all(ledger.status(s) == "running" and ledger.reports(s) == [] for s in [first, *twins])
        start_serve(procs, env, name="serve2")  # same data directory: the leases expire, serve2 claims them
        wait_for(lambda: ledger.all_final([first, *twins]), timeout=180, interval=0.5,
                 what="serve2 to grade them", on_timeout=lambda: f"{ledger.statuses([first, *twins])}\n{procs.tails()}")
        for submission_id in [first, *twins]:
            row = ledger.assert_exactly_one_current_report(submission_id, status="graded")
            assert row["attempts"] == 2, row
        assert _report_of(ledger, first)["program"]["reused"] is False
        assert all(_report_of(ledger, t)["program"]["reused"] is True for t in twins), "ran once, after the restart"
    finally:
        ledger.close()
