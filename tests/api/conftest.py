"""Fixtures of the API tests: a real uvicorn server (tests/support/servers.py) on a real database
(a SQLite file or a fresh PostgreSQL database), grading in the real bubblewrap sandbox, and httpx
clients that authenticate with real per-course API keys. Nothing is mocked.

Servers are module-scoped and parametrized over the database kind, so every module runs once on
SQLite and once on PostgreSQL (those tests carry the `postgres` marker). Each test gets its own
course (`course` fixture), so tests sharing a server do not see each other's rows.
"""
from __future__ import annotations

import contextlib
import shutil
from collections.abc import Callable, Iterator

import pytest

from tests.api.support import Course, Receiver, Service, api_settings, postgres_up
from tests.support.servers import POSTGRES_ADMIN, LiveServer, database

DB_KINDS = [pytest.param("sqlite", id="sqlite"),
            pytest.param("postgresql", id="postgresql", marks=pytest.mark.postgres)]


@pytest.fixture(scope="module", params=DB_KINDS)
def db_kind(request) -> str:
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap (bwrap) is not installed: the API tests grade in the real sandbox")
    if request.param == "postgresql" and not postgres_up():
        pytest.skip(f"PostgreSQL is not reachable at {POSTGRES_ADMIN}")
    return request.param


@pytest.fixture(scope="module")
def start_service(db_kind, tmp_path_factory) -> Iterator[Callable[..., Service]]:
    """`start_service(**settings_overrides)`: a live server on a fresh database of this module's
    kind; stopped (and its database dropped) when the module is done."""
    with contextlib.ExitStack() as stack:
        def start(**overrides) -> Service:
            data_dir = tmp_path_factory.mktemp(f"api-{db_kind}")
            url = stack.enter_context(database(db_kind, data_dir))
            settings = api_settings(url, data_dir, **overrides)
            server = stack.enter_context(LiveServer(settings))
            service = Service(server, settings, db_kind)
            stack.callback(service.close_clients)  # runs before the server stops
            return service

        yield start


@pytest.fixture(scope="module")
def service(start_service) -> Service:
    """The module's main server: default limits, except a small batch cap and wait bound."""
    # max_waiting: room for test_concurrency's 45 long-polling clients of one course (a quarter each);
    # the bound itself is tests/api/test_wait_bound.py's, on its own service
    return start_service(max_batch=3, max_wait_s=25, max_waiting=200)


@pytest.fixture
def course(service) -> Course:
    return service.new_course()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver(fail_first=1) as r:
        yield r
