"""Many clients at once, over real HTTP against the real database: long-polling clients must not
starve the grading workers, and concurrent requests with one Idempotency-Key store one row."""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.api.support import cheap_body

pytestmark = pytest.mark.sandbox

CLIENTS = 45  # more than the database pool (SQLite 5+10, PostgreSQL 10+20) and the 40 request threads


def test_many_waiting_clients_do_not_starve_the_workers(service, course):
    """Every `?wait=` request is graded in time: the waiting requests must not hold the database
    connections that the grading workers need to claim their submissions."""
    key = course.key("submit", "read")

    def submit(i: int) -> tuple[int, str, float]:
        started = time.monotonic()
        response = httpx.post(f"{service.url}/v1/submissions", params={"wait": 20}, json=cheap_body(f"w{i}"),
                              headers={"Authorization": f"Bearer {key}"}, timeout=120)
        return response.status_code, response.json().get("status", ""), time.monotonic() - started

    with ThreadPoolExecutor(CLIENTS) as pool:
        results = list(pool.map(submit, range(CLIENTS)))
    late = [r for r in results if r[:2] != (200, "graded")]
    assert late == [], f"{len(late)} of {CLIENTS} waited in vain: {late[:5]}"
    assert course.submission_count() == CLIENTS


def test_concurrent_requests_with_one_idempotency_key_store_one_submission(service, course):
    key = course.key("submit")
    body = cheap_body("same")

    def submit(_: int) -> httpx.Response:
        return httpx.post(f"{service.url}/v1/submissions", json=body, timeout=60,
                          headers={"Authorization": f"Bearer {key}", "Idempotency-Key": "one-click-many-posts"})

    with ThreadPoolExecutor(12) as pool:
        responses = list(pool.map(submit, range(12)))
    assert all(r.status_code in (200, 202) for r in responses), [(r.status_code, r.text[:200]) for r in responses]
    assert len({r.json()["id"] for r in responses}) == 1
    assert course.submission_count() == 1
