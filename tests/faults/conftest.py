"""Fixtures and markers of the fault-injection tests: real `kernelgrade serve` processes killed by
real signals (tests/workers/procs.py), and the real PostgreSQL cluster stopped and started again.

`procs` and `pg_url` are the worker tests' fixtures (tests/workers/conftest.py), reused as they are.
"""
from __future__ import annotations

import shutil

import pytest

from tests.faults.support import ensure_postgres_running
from tests.workers.conftest import pg_url, procs  # noqa: F401  (fixtures, reused)


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "faults: fault injection with real processes and signals (tests/faults)")


@pytest.fixture(autouse=True)
def _needs_bwrap():
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap (bwrap) is not installed: the fault tests grade in the real sandbox")


@pytest.fixture
def postgres_cluster(pg_url):
    """For tests that stop the cluster: whatever happens, it is running again afterwards (and
    before `pg_url` drops the test's database)."""
    try:
        yield pg_url
    finally:
        ensure_postgres_running()
