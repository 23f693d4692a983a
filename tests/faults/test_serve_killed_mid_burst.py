"""`kill -9` of `kernelgrade serve` (in-process graders, PostgreSQL) while a client is in the
middle of a burst of POSTs, then a restart on the same port.

The promise under test: a submission is acknowledged only once it is stored, so every
acknowledged one ends graded with exactly one current report, whether it was waiting, in the
sandbox, or being written when the process died. A request that got no answer may or may not have
been stored; if it was, it too ends with exactly one report, and retrying it with the same
Idempotency-Key finds it instead of storing a second copy.

To land the kill in the middle of a request, not between two, the request after the tenth
acknowledged one asks `?wait=` for its report: it is stored at once, then held open while it
waits its turn for the sandbox, and the kill comes while it is held.
"""
from __future__ import annotations

import pytest

from tests.api.support import cheap_body
from tests.faults.support import Burst, CourseLedger, exactly_one_current_report, post
from tests.support.servers import free_port
from tests.workers.procs import create_course_and_key, example_body, make_env, sandbox_pids, start_serve, wait_for

pytestmark = [pytest.mark.exclusive, pytest.mark.faults, pytest.mark.postgres, pytest.mark.sandbox, pytest.mark.timeout(300)]

BURST = 30
KILL_AFTER = 10   # acknowledged POSTs before the kill
IN_FLIGHT = 10    # this request holds its connection open (?wait=) and is cut by the kill
REAL = {0, IN_FLIGHT, 24}  # graded in the sandbox (seconds each); the rest are cheap (milliseconds, no sandbox)


def bodies() -> list[dict]:
    return [example_body() if i in REAL else cheap_body(f"kill-{i}") for i in range(BURST)]


def test_serve_killed_mid_burst_every_acknowledged_submission_ends_with_one_report(tmp_path, pg_url, procs):
    env = make_env(tmp_path, database_url=pg_url, lease_s=4)
    key = create_course_and_key(env, "c1")
    ledger = CourseLedger(pg_url, "c1")
    port = free_port()
    try:
        serve, url = start_serve(procs, env, name="serve1", port=port)
        burst = Burst(url, key, bodies(), pause_s=0.05, timeout_s=60, prefix="kill", waits={IN_FLIGHT: 25}).start()
        wait_for(lambda: len(burst.acknowledged()) >= KILL_AFTER and ledger.id_of(f"kill-{IN_FLIGHT}"), timeout=60,
                 interval=0.02, what=f"{KILL_AFTER} acknowledged POSTs and the next one stored",
                 on_timeout=procs.tails)
        first_id = burst.acknowledged()["kill-0"]
        running_at_kill = ledger.status(first_id) == "running"  # in the sandbox (4 s) when the process dies

        serve.kill()  # SIGKILL to the process group: the server, its grading thread's sandbox, all of it
        burst.join(timeout=120)  # the held request is cut; the rest are refused (nothing listens)
        wait_for(lambda: not sandbox_pids(str(env.tmpdir)), timeout=20, what="the killed server's sandboxes to die")

        outcomes = burst.snapshot()
        assert len(outcomes) == BURST
        acknowledged = {o.idempotency_key: o.submission_id for o in outcomes if o.acknowledged}
        unanswered = [o for o in outcomes if not o.acknowledged]
        assert len(acknowledged) == KILL_AFTER, [(o.index, o.status, o.error) for o in outcomes]
        assert [o.index for o in unanswered] == list(range(KILL_AFTER, BURST))
        assert all(o.status is None for o in unanswered), \
            f"answers other than 200/202: {[(o.index, o.status, o.body) for o in unanswered if o.status is not None]}"
        cut = outcomes[IN_FLIGHT]
        assert cut.error not in ("ConnectError", "ReadTimeout"), f"the kill did not cut request {IN_FLIGHT}: {cut}"

        # Same port, same database: the new process re-claims what the dead one held once its
        # lease (4 s) expires, and grades what was still queued.
        start_serve(procs, env, name="serve2", port=port)
        stored = ledger.wait_all_final(timeout=180, on_timeout=procs.tails)

        problems = exactly_one_current_report(stored.values())
        assert not problems, "\n".join(problems)
        for idempotency_key, submission_id in acknowledged.items():
            assert submission_id in stored, f"acknowledged {idempotency_key} ({submission_id}) was not stored"
            assert stored[submission_id].idempotency_key == idempotency_key
            assert stored[submission_id].status == "graded", stored[submission_id]
        # Besides the acknowledged ones, only the request cut by the kill was stored (and graded).
        by_key = {s.idempotency_key: s for s in stored.values()}
        assert set(by_key) == set(acknowledged) | {cut.idempotency_key}, sorted(by_key)
        assert by_key[cut.idempotency_key].status == "graded"
        if running_at_kill:  # it was in the sandbox when the process died: graded by the second one
            assert stored[first_id].attempts >= 2, stored[first_id]

        # The client retries every unanswered request with its Idempotency-Key: each is stored
        # exactly once (the cut one is found again, not stored twice).
        payloads = bodies()
        for o in unanswered:
            retried = post(url, key, payloads[o.index], o.idempotency_key, timeout_s=30)
            assert retried.acknowledged, (retried.status, retried.body)
            if o.idempotency_key in by_key:
                assert retried.submission_id == by_key[o.idempotency_key].id
        stored = ledger.wait_all_final(timeout=180, on_timeout=procs.tails)
        assert sorted(s.idempotency_key for s in stored.values()) == sorted(f"kill-{i}" for i in range(BURST))
        problems = exactly_one_current_report(stored.values())
        assert not problems, "\n".join(problems)
        assert all(s.status == "graded" for s in stored.values())
    finally:
        ledger.close()
