"""Shared fixtures: real sandbox runners (bubblewrap, and the docker backend for the suites that run
once per backend: tests/support/backends.py) and a helper that runs named probes in them."""
from __future__ import annotations

import shutil
import sys
from collections.abc import Callable

import numpy as np
import pytest

from sandbox.backends import make_backend
from sandbox.contract import CaseJob, CaseRun, DeviceMode, Limits, RunResult, TensorArg
from sandbox.runner import SandboxRunner
from service.config import Settings
from tests.support.backends import backend_env, make_sandbox_backend, parametrize_backends, prepare_images

BWRAP_MISSING_REASON = "bubblewrap (bwrap) is not installed: the sandbox tests need the real sandbox"

# Prepended to every probe program. Each case's only input is its own name (UTF-8 bytes as a
# uint8 tensor); the entry point `probe` calls the module-level function `probe_<name>`, so one
# sandbox start can run several independent probes, each settling as its own case.
PROBE_PRELUDE = '''
import torch


def probe(name):
    return globals()["probe_" + bytes(name.tolist()).decode()]()


def outcome(succeeded, detail=0.0):
    """[1.0 if the forbidden thing worked else 0.0, a detail such as the errno]."""
    return torch.tensor([1.0 if succeeded else 0.0, float(detail)], dtype=torch.float64)


def attempt(action):
    """Run `action`; outcome(True) if it returned, outcome(False, errno) if it raised OSError."""
    try:
        action()
    except OSError as exc:
        return outcome(False, exc.errno if exc.errno is not None else -1)
    return outcome(True)
'''




def scratch_files_body(limit: int) -> str:
    """Probes `tmp` and `shm`: create up to `limit` + 100 empty files in /tmp or /dev/shm; each
    returns [files made, the errno that stopped it (0: none), the file system's inode count]."""
    return f'''
import os


def fill(folder):
    made, code = 0, 0
    try:
        for i in range({limit + 100}):
            os.close(os.open(folder + "/many-" + str(i), os.O_CREAT | os.O_WRONLY, 0o600))
            made += 1
    except OSError as exc:
        code = exc.errno or -1
    return torch.tensor([float(made), float(code), float(os.statvfs(folder).f_files)], dtype=torch.float64)


def probe_tmp():
    return fill("/tmp")


def probe_shm():
    return fill("/dev/shm")
'''


def pytest_configure(config):
    config.addinivalue_line("markers", "docker: runs sandboxes as containers of a real Docker engine")
    config.addinivalue_line("markers", "sandbox_backends(*names): the backends a test runs against "
                                       "(default bwrap and docker; tests/support/backends.py)")
    config.addinivalue_line("markers", "docker_images(*kinds): Docker images (full, host, stack, base) built before the run")


# Files whose tests share no module state and each take minutes (the catalogue's interpreter
# validations, one subprocess each): spread test by test over the xdist workers instead of file by
# file, and first (they are the longest units), so that one worker does not finish the run alone
# on them.
PER_TEST_FILES = ("tests/integration/test_catalog.py",)
# Many quick files (no sandbox, server or browser): run last.
QUICK_DIRS = ("tests/unit/",)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class SplitHeavyFiles(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return nodeid if nodeid.startswith(PER_TEST_FILES) else super()._split_scope(nodeid)

        def _assign_work_unit(self, node) -> None:
            # xdist orders the work by tests per unit (--loadscope-reorder), which put these
            # one-test units, the longest of the run, last, and the unit tests' many quick files
            # first: the run ended on minutes-long units on one worker. Longest first instead, and
            # the quick files last, where they fill the gaps while the other worker finishes.
            if not getattr(self, "_ordered", False):
                self._ordered = True
                units = sorted(self.workqueue.items(), key=lambda unit: (
                    0 if unit[0].startswith(PER_TEST_FILES) else 2 if unit[0].startswith(QUICK_DIRS) else 1))
                self.workqueue.clear()
                self.workqueue.update(units)  # sorted() is stable: xdist's order within each rank
            super()._assign_work_unit(node)

    return SplitHeavyFiles(config, log)


def pytest_collection_finish(session):
    if not session.config.option.collectonly:
        prepare_images(session.items)


def pytest_generate_tests(metafunc):
    parametrize_backends(metafunc)


@pytest.fixture(scope="module")
def sandbox_backend(sandbox_backend_name):
    """The backend of this parametrisation (bwrap, docker, docker-host)."""
    return make_sandbox_backend(sandbox_backend_name)


@pytest.fixture
def sandbox_env(sandbox_backend_name, monkeypatch) -> str:
    """Settings() in this test choose the parametrised backend; returns its name."""
    for key, value in backend_env(sandbox_backend_name).items():
        monkeypatch.setenv(key, value)
    return sandbox_backend_name


@pytest.fixture(scope="session")
def bwrap_backend():
    if shutil.which("bwrap") is None:
        pytest.skip(BWRAP_MISSING_REASON)
    return make_backend("bwrap", python=sys.executable, hidden_paths=Settings().hidden_paths())


@pytest.fixture
def bwrap_runner(bwrap_backend) -> Callable[..., SandboxRunner]:
    """Factory: `bwrap_runner(case_timeout_s=3)` is a runner with those Limits overrides."""

    def make(**limit_overrides) -> SandboxRunner:
        return SandboxRunner(backend=bwrap_backend, limits=Limits(**limit_overrides))

    return make


def name_input(name: str) -> np.ndarray:
    return np.frombuffer(name.encode(), dtype=np.uint8).copy()


def run_probes(runner: SandboxRunner, body: str, names: list[str], *,
               meanwhile: Callable[[], None] | None = None) -> tuple[RunResult, dict[str, CaseRun]]:
    """Run `PROBE_PRELUDE + body` with one case per name (each calls `probe_<name>()`); `meanwhile`: as
    SandboxRunner.run's."""
    result = runner.run(
        program=PROBE_PRELUDE + body,
        given_check=None,
        given_seed=0,
        entry_point="probe",
        cases=[CaseJob(id=name, args=[TensorArg(key=name)], outputs=["out"]) for name in names],
        inputs={name: name_input(name) for name in names},
        mode=DeviceMode.interpreter,
        meanwhile=meanwhile,
    )
    assert result.infra_error is None, f"the sandbox itself failed: {result.infra_error}"
    cases = {case.id: case for case in result.cases}
    assert sorted(cases) == sorted(names), f"cases came back as {[(c.id, c.status) for c in result.cases]}"
    return result, cases


@pytest.fixture
def probes(sandbox_backend) -> Callable[..., tuple[RunResult, dict[str, CaseRun]]]:
    """`probes(body, names, **limit_overrides)`: run the probes in one fresh sandbox of the
    parametrised backend."""

    def run(body: str, names: list[str], **limit_overrides):
        return run_probes(SandboxRunner(backend=sandbox_backend, limits=Limits(**limit_overrides)), body, names)

    return run
