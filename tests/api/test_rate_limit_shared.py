"""The per-key rate limit across API replicas: two real servers on one database share one budget
through the real Redis on 127.0.0.1:6379 (under a key prefix of this test's own; nothing else in
Redis is touched), the budget outlives a restart, each process counts alone without Redis, and a
Redis that does not answer lets requests through instead of failing them."""
from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Iterator

import httpx
import pytest
import redis

from service.db import store
from service.db.models import Course
from tests.api.support import api_settings
from tests.support.servers import LiveServer, database

REDIS_URL = "redis://127.0.0.1:6379/0"
PER_MINUTE = 5


def redis_up() -> bool:
    try:
        return bool(redis.Redis.from_url(REDIS_URL, socket_timeout=2).ping())
    except redis.RedisError:
        return False


@pytest.fixture
def replicas(tmp_path) -> Iterator[Callable[..., LiveServer]]:
    """`replicas(**settings)`: a new API server (no grading workers' sandboxes) on one shared SQLite database."""
    with contextlib.ExitStack() as stack:
        url = stack.enter_context(database("sqlite", tmp_path))

        def start(**overrides) -> LiveServer:
            data_dir = tmp_path / uuid.uuid4().hex[:8]
            data_dir.mkdir()
            settings = api_settings(url, data_dir, rate_limit_per_minute=PER_MINUTE, warm_pool=0,
                                    compile_cache_prewarm=False, **overrides)
            return stack.enter_context(LiveServer(settings))

        yield start


@pytest.fixture
def prefix() -> Iterator[str]:
    if not redis_up():
        pytest.skip(f"Redis is not reachable at {REDIS_URL}")
    name = f"kgtest-ratelimit-{uuid.uuid4().hex[:12]}"
    yield name
    client = redis.Redis.from_url(REDIS_URL)
    ours = list(client.scan_iter(match=f"{name}*"))
    if ours:
        client.delete(*ours)


def a_key(server: LiveServer) -> str:
    with server.sessions() as session:
        if session.get(Course, "rl") is None:
            store.create_course(session, "rl", "rate limit")
        return store.create_key(session, course_id="rl", scopes=["read"])[1]


def get(server: LiveServer, key: str) -> httpx.Response:
    return httpx.get(f"{server.url}/v1/exercises", headers={"Authorization": f"Bearer {key}"}, timeout=30)


@pytest.mark.redis
def test_two_replicas_share_one_budget_through_redis(replicas, prefix):
    shared = dict(rate_limit_storage_url=REDIS_URL, rate_limit_key_prefix=prefix)
    a, b = replicas(**shared), replicas(**shared)
    key = a_key(a)
    statuses = [get(server, key).status_code for server in (a, b, a, b, a)]
    assert statuses == [200] * PER_MINUTE
    for server in (b, a):
        refused = get(server, key)
        assert refused.status_code == 429, refused.text
        assert 1 <= int(refused.headers["Retry-After"]) <= 60
    assert list(redis.Redis.from_url(REDIS_URL).scan_iter(match=f"{prefix}*")), "the counts live in Redis"
    # A restarted replica (a new process state) still sees the spent budget; another key has its own.
    restarted = replicas(**shared)
    assert get(restarted, key).status_code == 429
    assert get(restarted, a_key(a)).status_code == 200


def test_without_redis_each_process_counts_alone(replicas):
    a, b = replicas(), replicas()
    assert a.app.state.rate_limiter.storage_url == "memory://"
    key = a_key(a)
    assert [get(a, key).status_code for _ in range(PER_MINUTE + 1)] == [200] * PER_MINUTE + [429]
    assert [get(b, key).status_code for _ in range(PER_MINUTE)] == [200] * PER_MINUTE


def test_a_redis_that_does_not_answer_lets_requests_through(replicas):
    server = replicas(rate_limit_storage_url="redis://127.0.0.1:1/0")  # nothing listens on port 1
    key = a_key(server)
    assert [get(server, key).status_code for _ in range(PER_MINUTE + 2)] == [200] * (PER_MINUTE + 2)
