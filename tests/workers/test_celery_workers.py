"""The Celery path with real processes: `kernelgrade serve` (queue=celery) on PostgreSQL, real
`kernelgrade worker` processes over the real Redis, grading in the real bubblewrap sandbox.

The promise under test (DESIGN): no accepted submission is ever lost, and each ends with exactly
one current report, even when a worker is SIGKILLed mid-grade or the broker loses every message.
"""
from __future__ import annotations

import time

import httpx
import pytest

from service.config import Settings
from service.worker.celery_app import make_celery
from tests.workers.procs import (
    Ledger, create_course_and_key, descendants, example_body, live, make_env, post_submission, sandbox_of,
    sandbox_pids, slow_exercises, start_redis, start_serve, start_worker, stop_redis, wait_for,
)

pytestmark = [pytest.mark.exclusive, pytest.mark.workers, pytest.mark.sandbox, pytest.mark.postgres, pytest.mark.redis, pytest.mark.timeout(300)]

LEASE_S = 6.0


def celery_env(tmp_path, pg_url: str, redis_db: int, **kwargs):
    return make_env(tmp_path, database_url=pg_url, lease_s=LEASE_S, queue="celery",
                    broker_url=f"redis://127.0.0.1:6379/{redis_db}", **kwargs)


@pytest.fixture
def ledger(pg_url):
    ledger = Ledger(pg_url)
    try:
        yield ledger
    finally:
        ledger.close()


def test_celery_end_to_end_every_submission_graded_once(tmp_path, pg_url, redis_db, ledger, procs):
    env = celery_env(tmp_path, pg_url, redis_db)
    key = create_course_and_key(env)
    _, url = start_serve(procs, env)
    worker = start_worker(procs, env, concurrency=2)

    ids = [post_submission(url, key, example_body()) for _ in range(3)]
    wait_for(lambda: ledger.all_final(ids), timeout=150, interval=0.5, what="3 submissions to be graded",
             on_timeout=lambda: f"{ledger.statuses(ids)}\n{procs.tails()}")
    for submission_id in ids:
        row = ledger.assert_exactly_one_current_report(submission_id)
        assert row["attempts"] == 1
    assert ledger.report_counts() == {i: 1 for i in ids}

    # The API agrees: graded, one current report, a full score for the example answer.
    for submission_id in ids:
        view = httpx.get(f"{url}/v1/submissions/{submission_id}", headers={"Authorization": f"Bearer {key}"},
                         timeout=30).json()
        assert view["status"] == "graded" and view["report"]["status"] == "graded"
        assert [h["current"] for h in view["history"]] == [True]
        assert view["report"]["score"]["passed"] is True

    # A task delivered again (the sweeper's or the broker's re-delivery) changes nothing.
    app = make_celery(Settings(broker_url=env.vars["KERNELGRADE_BROKER_URL"], lease_s=LEASE_S))
    task_ids = [app.send_task("kernelgrade.grade", args=[i]).id for i in ids]
    app.close()
    wait_for(lambda: all(f"{t}] succeeded" in worker.log() for t in task_ids), timeout=60, interval=0.3,
             what="the duplicate tasks to run", on_timeout=worker.tail)
    assert ledger.report_counts() == {i: 1 for i in ids}
    for submission_id in ids:
        assert ledger.assert_exactly_one_current_report(submission_id)["attempts"] == 1


def test_grading_longer_than_the_lease_keeps_it_and_duplicates_wait(tmp_path, pg_url, redis_db, ledger, procs):
    """Two worker machines; one grading lasts about two leases (the heartbeat must keep it), and
    duplicate tasks reach the idle worker meanwhile: they wait (retry) and grade nothing."""
    slow_s = 8
    env = celery_env(tmp_path, pg_url, redis_db, KERNELGRADE_EXERCISES_DIR=str(slow_exercises(tmp_path, slow_s)))
    key = create_course_and_key(env)
    _, url = start_serve(procs, env)
    workers = [start_worker(procs, env, name="worker1"), start_worker(procs, env, name="worker2")]

    submission_id = post_submission(url, key, example_body(slow_s=slow_s))
    wait_for(lambda: ledger.status(submission_id) == "running", timeout=60, what="the submission to be running",
             on_timeout=procs.tails)
    app = make_celery(Settings(broker_url=env.vars["KERNELGRADE_BROKER_URL"], lease_s=LEASE_S))
    duplicates = [app.send_task("kernelgrade.grade", args=[submission_id]).id for _ in range(2)]
    app.close()
    wait_for(lambda: ledger.status(submission_id) in ("graded", "not_gradable"), timeout=120, interval=0.5,
             what="the submission to be graded", on_timeout=lambda: f"{ledger.row(submission_id)}\n{procs.tails()}")
    row = ledger.assert_exactly_one_current_report(submission_id)
    assert row["attempts"] == 1, "the heartbeat should have kept the lease for the whole grading"
    logs = "".join(w.log() for w in workers)
    assert all(f"{t}] retry" in logs for t in duplicates), "the duplicates should have waited for the lease"
    # The waiting duplicates come back once the lease would have expired and find it graded.
    wait_for(lambda: all(f"{t}] succeeded" in "".join(w.log() for w in workers) for t in duplicates), timeout=60,
             interval=0.3, what="the duplicates to finish", on_timeout=procs.tails)
    assert ledger.report_counts() == {submission_id: 1}


def test_worker_killed_mid_grade_is_retried_by_another_worker(tmp_path, pg_url, redis_db, ledger, procs):
    slow_s = 6
    env = celery_env(tmp_path, pg_url, redis_db, KERNELGRADE_EXERCISES_DIR=str(slow_exercises(tmp_path, slow_s)))
    key = create_course_and_key(env)
    _, url = start_serve(procs, env)
    first = start_worker(procs, env, name="worker1")

    submission_id = post_submission(url, key, example_body(slow_s=slow_s))
    wait_for(lambda: ledger.status(submission_id) == "running", timeout=60, what="the submission to be running",
             on_timeout=procs.tails)
    wait_for(lambda: sandbox_of(first), timeout=60, what="worker1's sandbox (bwrap) to start", on_timeout=procs.tails)
    time.sleep(2.0)  # well inside the sandbox now: the harness is up, the slow given check is running
    doomed = descendants(first.pid)  # the sandbox and everything in it
    assert doomed and ledger.status(submission_id) == "running"
    assert ledger.row(submission_id)["attempts"] == 1

    first.kill()  # SIGKILL to worker1's process group, mid-grade

    # bwrap --die-with-parent and the sandbox's pid namespace take everything inside down.
    wait_for(lambda: not any(live(pid) for pid in doomed) and not sandbox_pids(str(env.tmpdir)), timeout=20,
             what="the killed worker's sandbox processes to die",
             on_timeout=lambda: f"alive: {[p for p in doomed if live(p)]}, bwrap: {sandbox_pids(str(env.tmpdir))}")
    assert ledger.status(submission_id) == "running"  # nobody wrote anything

    second = start_worker(procs, env, name="worker2")
    wait_for(lambda: ledger.status(submission_id) in ("graded", "not_gradable"), timeout=150, interval=0.5,
             what="the submission to be graded by worker2",
             on_timeout=lambda: f"{ledger.row(submission_id)}\n{procs.tails()}")
    row = ledger.assert_exactly_one_current_report(submission_id)
    assert row["attempts"] >= 2
    assert "succeeded in" in second.log() and "'graded'" in second.log(), second.tail()
    # What is left is worker2's warm pool (sandboxes waiting for the next job), nothing of worker1's.
    assert sandbox_pids(str(env.tmpdir)) <= sandbox_of(second)


def test_redis_restart_loses_no_submission(tmp_path, pg_url, redis_db, ledger, procs):
    env = celery_env(tmp_path, pg_url, redis_db)
    key = create_course_and_key(env)
    serve, url = start_serve(procs, env)
    start_worker(procs, env, concurrency=1)

    ids = [post_submission(url, key, example_body()) for _ in range(4)]
    try:
        # One is being graded, the others wait in Redis: then the broker dies with all of them.
        wait_for(lambda: "running" in ledger.statuses(ids).values(), timeout=60, what="a submission to be running",
                 on_timeout=procs.tails)
        stop_redis()
        # Accepted while the broker is down: stored, so it must not be lost either.
        started = time.monotonic()
        late = post_submission(url, key, example_body(), timeout=60)
        ids.append(late)
        assert time.monotonic() - started < 30, "POST hung on the dead broker"
        assert f"could not publish {late}" in serve.log(), serve.tail()  # only the sweeper can save it
        time.sleep(3)
    finally:
        start_redis()  # whatever happened above, Redis runs again

    wait_for(lambda: ledger.all_final(ids), timeout=180, interval=0.5, what="every submission to be graded after the restart",
             on_timeout=lambda: f"{ledger.statuses(ids)}\n{procs.tails()}")
    for submission_id in ids:
        ledger.assert_exactly_one_current_report(submission_id)
    assert ledger.report_counts() == {i: 1 for i in ids}
