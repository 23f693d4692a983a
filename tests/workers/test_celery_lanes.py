"""Celery's two queues (issue #20 item 2): a fast worker claims submissions and finishes all that
needs no sandbox; a sandbox worker only runs programs; a grading whose identical program is in
flight is parked (its task re-enqueued under the same lease), holding no worker thread.

Real processes: `kernelgrade serve` (queue=celery) on PostgreSQL, one `kernelgrade worker --lane
fast` and one `--lane sandbox`, each with ONE thread, over the real Redis; programs run in the
real bubblewrap sandbox. A given check that sleeps keeps the one run in flight long enough.
"""
from __future__ import annotations

import json

import pytest

from tests.workers.procs import (
    Ledger, create_course_and_key, example_body, make_env, post_submission, slow_exercises, start_serve, start_worker,
    wait_for,
)

pytestmark = [pytest.mark.workers, pytest.mark.sandbox, pytest.mark.postgres, pytest.mark.redis, pytest.mark.timeout(300)]

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
    with ledger.engine.connect() as conn:
        from sqlalchemy import text

        report = conn.execute(text("SELECT report FROM reports WHERE submission_id = :s"), {"s": submission_id}).scalar()
    return report if isinstance(report, dict) else json.loads(report)


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
    wait_for(lambda: sandbox.log().count("Task kernelgrade.run[") >= 2, timeout=60, interval=0.2,
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
    assert sandbox.log().count("Task kernelgrade.run[") == 2, "each new program ran once"
    assert fast.log().count("Task kernelgrade.grade[") > 6, "parked gradings came back to the fast queue"
    assert "kernelgrade.grade[" not in sandbox.log() and "kernelgrade.run[" not in fast.log()
    reference = _report(ledger, first)
    assert reference["program"]["reused"] is False
    for twin in twins:
        report = _report(ledger, twin)
        assert report["status"] == "graded" and report["program"]["reused"] is True
        assert report["cases"] == reference["cases"]
    assert _report(ledger, refused)["program"]["ran"] is False
