"""Red team, round 4: `POST /v1/submissions?wait=` held a worker thread of the API for the whole wait.

FastAPI runs every plain `def` route in one thread pool of the process (anyio's, 40 threads), and
the wait was a `time.sleep` loop in the route. One course key, well inside its rate limit, sent 50
POSTs with `wait=max_wait_s` (the same Idempotency-Key and body each time: no new submission, no
place in the queue) for a submission that was still queued: every thread slept, and every other
route of every course (a student's feedback link, another course's POST, even `/healthz`, so the
orchestrator's liveness probe) waited until the waits ran out, again and again.

Now a request waits only while a waiting place is free (`max_waiting` in all, a quarter of them per
course); past that it answers at once (202, as `wait=0` does), which the contract allows: the wait
is optional and bounded.
"""
from __future__ import annotations

import threading

import httpx
import pytest

from tests.api.support import cheap_body

WAITERS = 50  # more than anyio's default thread pool (40)


@pytest.fixture(scope="module")
def waiting_service(start_service):
    return start_service(max_wait_s=20)


def test_waiting_posts_do_not_hold_the_apis_threads(waiting_service):
    service = waiting_service
    attacker, other = service.new_course(), service.new_course()
    body = cheap_body("wait-flood")
    held = service.block_queue(attacker, body=body, idempotency_key="flood")  # `running`, never finished
    key = attacker.key("submit", "read")
    answers: list[int] = []
    lock = threading.Lock()

    def wait_on_it() -> None:
        with httpx.Client(base_url=service.url, timeout=120,
                          headers={"Authorization": f"Bearer {key}", "Idempotency-Key": "flood"}) as client:
            response = client.post("/v1/submissions", params={"wait": 20}, json=body)
        with lock:
            answers.append(response.status_code)

    threads = [threading.Thread(target=wait_on_it, daemon=True) for _ in range(WAITERS)]
    for thread in threads:
        thread.start()
    threading.Event().wait(3)  # time to reach the route (each is a local request: milliseconds)

    # Another course and the orchestrator are answered while the attacker's requests still wait
    # (their wait is 20 s; these get 8).
    probe = httpx.Client(base_url=service.url, timeout=8)
    assert probe.get("/healthz").status_code == 200
    other_client = other.client("submit", "read")
    created = other_client.post("/v1/submissions", json=cheap_body("other"), timeout=8)
    assert created.status_code == 202, created.text
    assert other_client.get(f"/v1/submissions/{created.json()['id']}", timeout=8).status_code == 200
    probe.close()

    # The attacker's requests all got their answer: the held submission, not graded yet (202).
    for thread in threads:
        thread.join(timeout=120)
    assert sorted(set(answers)) == [202] and len(answers) == WAITERS
    assert service.row(held.id).status == "running"
