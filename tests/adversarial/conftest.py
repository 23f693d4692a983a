"""The adversarial suite: hostile submissions graded end to end, in the real sandbox, once per
backend (bwrap, docker): the `host` fixture sets the backend every grader of the test builds."""
from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from service.config import REPO_ROOT
from tests.adversarial.kit import SECRET_ENV, WARM_COUNTS, WARM_POOL_ENV, assert_no_survivors, close_test_graders


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "adversarial: hostile submissions graded end to end against the real sandbox (tests/adversarial)")


@pytest.fixture(autouse=True)
def _close_warm_graders():
    """KERNELGRADE_TEST_WARM_POOL: the warm pools of this test's graders end with it."""
    yield
    close_test_graders()


def pytest_terminal_summary(terminalreporter):
    if os.environ.get(WARM_POOL_ENV):
        terminalreporter.write_line(
            f"{WARM_POOL_ENV}={os.environ[WARM_POOL_ENV]}: {WARM_COUNTS['graders']} graders with a warm pool; "
            f"attempts in a warm sandbox {WARM_COUNTS['warm']} (pool starts forked: {WARM_COUNTS['forked']}), "
            f"cold {WARM_COUNTS['cold']}")



@dataclass
class Host:
    """What one attack must not reach on the host, and the token its processes and files carry."""

    backend: str  # the sandbox backend every grader of this test uses (bwrap, docker)
    token: str
    secret: str  # the value of KERNELGRADE_TEST_SECRET in this process's environment
    tmp_path: Path
    tmp_marker: Path  # a file in the host's pytest tmp_path
    repo_marker: Path  # a file directly under REPO_ROOT

    def assert_untouched(self) -> None:
        """(b): no marker on the host, no file named with the token, no process left behind."""
        for marker in (self.tmp_marker, self.repo_marker):
            assert not marker.exists(), f"the sandboxed code created {marker} on the host"
        for folder in (REPO_ROOT, self.tmp_path, Path("/tmp")):
            named = [p for p in folder.glob(f"*{self.token}*")]
            assert not named, f"files named with the attack's token appeared on the host: {named}"
        assert_no_survivors(self.token)


@pytest.fixture
def host(sandbox_env, tmp_path, monkeypatch) -> Host:
    token = f"kgadv{uuid.uuid4().hex[:16]}"
    secret = f"kgsecret{uuid.uuid4().hex}"
    monkeypatch.setenv(SECRET_ENV, secret)
    assert os.environ[SECRET_ENV] == secret
    h = Host(backend=sandbox_env, token=token, secret=secret, tmp_path=tmp_path, tmp_marker=tmp_path / f"escaped-{token}.txt",
             repo_marker=REPO_ROOT / f"escaped-{token}.txt")
    yield h
    # Safety net even when the test failed early: never leave a breach's files in the repository.
    leaked = [p for p in (h.tmp_marker, h.repo_marker) if p.exists()]
    for p in leaked:
        p.unlink()
    assert not leaked, f"the sandboxed code created {leaked} on the host"
    assert_no_survivors(token)
