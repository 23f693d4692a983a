"""The in-process path with real processes: `kernelgrade serve` (SQLite in its data directory)
SIGKILLed while its grading thread is inside the sandbox, then started again on the same data
directory. The lease expires, the new process re-claims the submission, and it ends with exactly
one current report: graded, or not_gradable when the interruption used up max_attempts."""
from __future__ import annotations

import time

import pytest

from tests.workers.procs import (
    Ledger, create_course_and_key, descendants, example_body, live, make_env, post_submission, sandbox_of,
    sandbox_pids, slow_exercises, start_serve, wait_for,
)

pytestmark = [pytest.mark.exclusive, pytest.mark.workers, pytest.mark.sandbox, pytest.mark.timeout(300)]


@pytest.mark.parametrize(("max_attempts", "final"), [
    pytest.param(3, "graded", id="retried-and-graded"),
    # A submission that keeps killing its worker must end too: one interruption is all it gets.
    pytest.param(1, "not_gradable", id="max-attempts-exceeded"),
])
def test_serve_killed_mid_grade_then_restarted_ends_with_one_report(tmp_path, procs, max_attempts, final):
    slow_s = 6
    env = make_env(tmp_path, database_url=None, lease_s=6, exercises_dir=slow_exercises(tmp_path, slow_s),
                   KERNELGRADE_MAX_ATTEMPTS=str(max_attempts))
    key = create_course_and_key(env)
    db_file = tmp_path / "data" / "kernelgrade.db"
    assert db_file.exists(), "the default SQLite database lives in the data directory"
    ledger = Ledger(f"sqlite:///{db_file}")
    try:
        first, url = start_serve(procs, env, name="serve1")
        submission_id = post_submission(url, key, example_body(slow_s=slow_s))
        wait_for(lambda: ledger.status(submission_id) == "running", timeout=60, what="the submission to be running",
                 on_timeout=procs.tails)
        wait_for(lambda: sandbox_of(first), timeout=60, what="serve1's sandbox (bwrap) to start", on_timeout=procs.tails)
        time.sleep(2.0)  # inside the sandbox: the slow given check is running
        doomed = descendants(first.pid)
        assert doomed and ledger.status(submission_id) == "running"

        first.kill()

        wait_for(lambda: not any(live(pid) for pid in doomed) and not sandbox_pids(str(env.tmpdir)), timeout=20,
                 what="the killed server's sandbox processes to die",
                 on_timeout=lambda: f"alive: {[p for p in doomed if live(p)]}")
        assert ledger.status(submission_id) == "running" and ledger.reports(submission_id) == []

        second, _ = start_serve(procs, env, name="serve2")  # same data directory, same SQLite file
        wait_for(lambda: ledger.status(submission_id) in ("graded", "not_gradable"), timeout=150, interval=0.5,
                 what="the restarted server to grade the submission",
                 on_timeout=lambda: f"{ledger.row(submission_id)}\n{procs.tails()}")
        row = ledger.assert_exactly_one_current_report(submission_id, status=final)
        assert row["attempts"] >= 2
        # What is left is serve2's warm pool (sandboxes waiting for the next job), nothing of serve1's.
        assert sandbox_pids(str(env.tmpdir)) <= sandbox_of(second)
    finally:
        ledger.close()
