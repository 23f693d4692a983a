"""The PostgreSQL cluster restarted under load, with `kernelgrade serve` (in-process graders)
running on it and a client POSTing submissions all along: once as an outage (stopped, held down
for a few seconds, started), once as a plain `pg_ctlcluster restart` (every connection cut).

While the database is away every POST gets a prompt, clean answer: 503 with Retry-After, or no
connection at all; never a 500 and never a request left hanging. `/readyz` says 503 while the
database is down and 200 once it is back, without restarting the service; every acknowledged
submission ends graded with exactly one current report, and so does any submission that a 503
answered after all (its transaction may have committed as the connection died).
"""
from __future__ import annotations

import json
import time

import httpx
import pytest

from tests.api.support import cheap_body
from tests.faults.support import (
    Burst, CourseLedger, ensure_postgres_running, exactly_one_current_report, restart_postgres, stop_postgres,
)
from tests.workers.procs import create_course_and_key, example_body, make_env, start_serve, wait_for

pytestmark = [pytest.mark.exclusive, pytest.mark.faults, pytest.mark.postgres, pytest.mark.sandbox, pytest.mark.timeout(300)]

OUTAGE_S = 4.0
TIMEOUT_S = 15.0  # a request that takes longer than this counts as hung: the test fails


def body(index: int) -> dict:
    """Cheap submissions (graded in milliseconds), and every 15th a real one (seconds in the sandbox),
    so that a grading may be under way when the database goes."""
    return example_body() if index % 15 == 0 else cheap_body(f"pg-{index}")


def readyz(url: str) -> int | None:
    try:
        return httpx.get(f"{url}/readyz", timeout=TIMEOUT_S).status_code
    except httpx.HTTPError:
        return None


@pytest.mark.parametrize("how", ["outage", "restart"])
def test_postgres_restart_under_load_no_500_no_hang_one_report_each(tmp_path, postgres_cluster, procs, how):
    pg_url = postgres_cluster
    env = make_env(tmp_path, database_url=pg_url, lease_s=4)
    key = create_course_and_key(env, "c1")
    ledger = CourseLedger(pg_url, "c1")
    serve, url = start_serve(procs, env)
    burst = Burst(url, key, body, pause_s=0.1, timeout_s=TIMEOUT_S, prefix="pg").start()
    down_from = down_until = None
    try:
        wait_for(lambda: len(burst.acknowledged()) >= 8, timeout=60, what="8 acknowledged POSTs before the outage",
                 on_timeout=procs.tails)
        try:
            if how == "outage":
                stop_postgres()
                down_from = time.monotonic()
                assert readyz(url) == 503
                time.sleep(OUTAGE_S)
                assert readyz(url) == 503
                down_until = time.monotonic()
            else:
                restart_postgres()
        finally:
            ensure_postgres_running()
        # The service comes back by itself: same process, new connections.
        wait_for(lambda: readyz(url) == 200, timeout=60, interval=0.5, what="/readyz to answer 200 again",
                 on_timeout=procs.tails)
        back_at = len(burst.snapshot())
        wait_for(lambda: sum(o.acknowledged for o in burst.snapshot()[back_at:]) >= 8, timeout=60,
                 what="8 acknowledged POSTs after the outage", on_timeout=procs.tails)
    finally:
        burst.stop()
        burst.join(timeout=60)
    assert serve.alive(), serve.tail()

    outcomes = burst.snapshot()
    summary = [(o.index, o.status, o.error, round(o.elapsed, 2)) for o in outcomes]
    # Clean answers only: 200/202, or 503 with Retry-After; no 500, no hung request.
    assert not [o for o in outcomes if o.status is not None and o.status not in (200, 202, 503)], summary
    refused = [o for o in outcomes if o.status == 503]
    assert all(o.retry_after and o.retry_after.isdigit() for o in refused), summary
    assert all(isinstance(json.loads(o.body).get("detail"), str) for o in refused), [o.body for o in refused]
    assert not [o for o in outcomes if o.error is not None and "Timeout" in o.error], summary
    assert all(o.elapsed < TIMEOUT_S for o in outcomes), summary
    if how == "outage":  # the database was down for seconds: those POSTs were refused with 503
        during = [o for o in outcomes if down_from <= o.started and o.started + o.elapsed <= down_until]
        assert during and all(o.status == 503 for o in during), f"during the outage: {summary}"

    # Every acknowledged submission, and any that a 503 stored after all, ends with exactly one report.
    try:
        stored = ledger.wait_all_final(timeout=180, on_timeout=procs.tails)
        problems = exactly_one_current_report(stored.values())
        assert not problems, "\n".join(problems)
        acknowledged = burst.acknowledged()
        for idempotency_key, submission_id in acknowledged.items():
            assert submission_id in stored and stored[submission_id].idempotency_key == idempotency_key
            assert stored[submission_id].status == "graded", stored[submission_id]
        unanswered = {o.idempotency_key for o in outcomes if not o.acknowledged}
        extra = {s.idempotency_key for s in stored.values()} - set(acknowledged)
        assert extra <= unanswered, f"stored without a request: {extra - unanswered}"
    finally:
        ledger.close()
