"""Fixtures of the worker tests: a process registry that always kills what it started, fresh
databases, and skips when the real services these tests need are missing."""
from __future__ import annotations

import shutil
import subprocess

import psycopg
import pytest

from tests.support.servers import POSTGRES_ADMIN, database
from tests.workers.procs import Procs, random_redis_db, redis_client, redis_up, start_redis


@pytest.fixture(autouse=True)
def _needs_bwrap(request):
    if request.node.get_closest_marker("sandbox") and shutil.which("bwrap") is None:
        pytest.skip("bubblewrap (bwrap) is not installed: these tests grade in the real sandbox")


@pytest.fixture
def procs(tmp_path):
    """Start processes with `procs.start(...)`; every process group is SIGKILLed at the end.
    Request it after the database and Redis fixtures, so the processes die before those go."""
    registry = Procs(tmp_path)
    try:
        yield registry
    finally:
        registry.close()


def _postgres_up() -> bool:
    try:
        with psycopg.connect(POSTGRES_ADMIN, connect_timeout=3):
            return True
    except psycopg.Error:
        return False


@pytest.fixture
def pg_url(tmp_path):
    if not _postgres_up():
        pytest.skip(f"PostgreSQL is not reachable at {POSTGRES_ADMIN}")
    with database("postgresql", tmp_path) as url:
        yield url


@pytest.fixture
def redis_db():
    """A Redis database number of this test's own; flushed afterwards (killed workers leave
    unacknowledged messages behind)."""
    if not redis_up():
        try:
            start_redis()  # a previous run may have stopped it
        except (AssertionError, OSError, subprocess.SubprocessError):
            pass
    if not redis_up():
        pytest.skip("Redis is not reachable at 127.0.0.1:6379")
    number = random_redis_db()
    try:
        yield number
    finally:
        if not redis_up():
            start_redis()
        try:
            redis_client(db=number).flushdb()
        except Exception:  # noqa: BLE001 - best effort
            pass
