"""Warm sandbox pool, in the real sandbox of each backend (bwrap, docker): a sandbox runs one
submission and is killed, a sandbox that dies while waiting is replaced, nothing outlives the
pool, and a warm sandbox keeps the cold one's isolation (read-only /job, no repository, no
network, nothing left in /tmp)."""
from __future__ import annotations

import errno
import os
import signal
import time
import uuid
from pathlib import Path

import pytest

from sandbox.contract import DeviceMode, Limits
from sandbox.runner import SandboxRunner
from service.config import REPO_ROOT
from service.submission import Submission
from tests.conftest import run_probes
from tests.support.backends import grader_for

pytestmark = pytest.mark.sandbox
READY_S = 120


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _children() -> set[int]:
    """Live processes whose parent is this test process (sandboxes start as our children)."""
    mine = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (FileNotFoundError, ProcessLookupError):
                continue
            if int(fields[1]) == os.getpid() and fields[0] != "Z":
                mine.add(int(entry.name))
    return mine


@pytest.fixture
def warm_runner(sandbox_backend):
    runner = SandboxRunner(backend=sandbox_backend, limits=Limits(case_timeout_s=30))
    before = _children()
    pool = runner.start_pool(mode=DeviceMode.interpreter, device_index=0, size=1)
    assert pool.wait_ready(1, READY_S), "the warm sandbox never said hello"
    try:
        yield runner
    finally:
        runner.close()
    deadline = time.monotonic() + 10
    while _children() - before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not (_children() - before), "sandboxes outlived the pool"


TMP_BODY = '''
import os


def probe_tmp_marker():
    existed = os.path.exists("/tmp/left-by-the-previous-submission")
    open("/tmp/left-by-the-previous-submission", "w").write("x")
    return outcome(existed)


def probe_job_files():
    return outcome(len(os.listdir("/job")) >= 6)
'''


def test_each_warm_sandbox_runs_one_submission_and_is_killed(warm_runner):
    pool = warm_runner.pools[(DeviceMode.interpreter, 0)]
    for _ in range(3):
        assert pool.wait_ready(1, READY_S)
        [pid] = pool.pids()
        result, cases = run_probes(warm_runner, TMP_BODY, ["tmp_marker", "job_files"])
        assert result.attempts == 1 and not _alive(pid), "the attempt did not take the warm sandbox"
        assert cases["tmp_marker"].outputs["out"][0] == 0.0, "/tmp of an earlier submission was visible"
        assert cases["job_files"].outputs["out"][0] == 1.0, "the job was not in /job when the harness ran it"
        assert not _alive(pid), "a warm sandbox survived its submission"
        assert pid not in pool.pids()
    assert pool.started_total >= 3


def test_a_sandbox_that_dies_while_waiting_is_replaced(warm_runner):
    pool = warm_runner.pools[(DeviceMode.interpreter, 0)]
    [pid] = pool.pids()
    os.killpg(pid, signal.SIGKILL)
    deadline = time.monotonic() + READY_S
    while time.monotonic() < deadline and not (pool.replaced_total >= 1 and pool.ready_count() == 1):
        time.sleep(0.1)
    assert pool.replaced_total >= 1 and pool.pids() != [pid] and pool.ready_count() == 1
    result, cases = run_probes(warm_runner, TMP_BODY, ["job_files"])
    assert result.infra_error is None and cases["job_files"].outputs["out"][0] == 1.0


def test_warm_sandbox_keeps_the_isolation(warm_runner, tmp_path):
    token = uuid.uuid4().hex
    body = f'''
import os
import socket


def probe_job_readonly():
    return attempt(lambda: open("/job/harness.py", "a").write("x"))


def probe_repo_hidden():
    return outcome(os.path.exists({str(REPO_ROOT / "exercises")!r}) and os.listdir({str(REPO_ROOT / "exercises")!r}) != [])


def probe_network():
    return attempt(lambda: socket.create_connection(("1.1.1.1", 53), timeout=2))


def probe_host_tmp():
    return attempt(lambda: open({str(tmp_path / token)!r}, "w").write("x"))
'''
    _, cases = run_probes(warm_runner, body, ["job_readonly", "repo_hidden", "network", "host_tmp"])
    assert cases["job_readonly"].outputs["out"][0] == 0.0
    assert cases["job_readonly"].outputs["out"][1] in (errno.EROFS, errno.EACCES, errno.EPERM)
    assert cases["repo_hidden"].outputs["out"][0] == 0.0
    assert cases["network"].outputs["out"][0] == 0.0
    assert not (tmp_path / token).exists()


def test_grader_with_warm_pool_grades_like_a_cold_one(sandbox_backend_name):
    grader = grader_for(sandbox_backend_name, device="interpreter", warm_pool=1)
    exercise = grader.catalog.get("lesson06_mean_var")
    cold = grader.grade(Submission(exercise=exercise.id, code=exercise.solution), secret_seed=5)
    grader.start()
    try:
        pool = grader.runner.pools[(DeviceMode.interpreter, 0)]
        assert pool.wait_ready(1, READY_S)
        [pid] = pool.pids()
        warm = grader.grade(Submission(exercise=exercise.id, code=exercise.solution), secret_seed=5)
        assert not _alive(pid) and pid not in pool.pids(), "the grading did not take the warm sandbox"
    finally:
        grader.close()
    strip = lambda r: [c.model_dump(exclude={"elapsed_s"}) for c in r.cases]  # noqa: E731
    assert strip(warm) == strip(cold) and warm.score == cold.score


def test_a_refill_starts_several_sandboxes_at_once_but_no_more_than_its_bound(bwrap_backend, tmp_path):
    """Three missing sandboxes with at most two in start-up at a time: two start together (the
    refill is not one at a time), the third only once one of them said hello, and all three end
    up ready. Counted, not timed."""
    from sandbox.pool import WarmPool

    pool = WarmPool(backend=bwrap_backend, limits=Limits(), mode=DeviceMode.interpreter, device_index=0, size=3,
                    work_root=tmp_path, max_starting=2).start()
    try:
        assert pool.wait_ready(3, READY_S), "the pool never filled"
        assert pool.peak_starting == 2, f"{pool.peak_starting} sandboxes were in start-up at once, expected 2"
        assert pool.started_total == 3 and pool.replaced_total == 0
    finally:
        pool.close()
    assert not list(tmp_path.iterdir()), "a warm sandbox's job folder outlived the pool"
