"""Warm sandbox pool, in the real sandbox of each backend (bwrap, docker): a sandbox runs one
submission and is killed, a sandbox that dies while waiting is replaced, nothing outlives the
pool, and a warm sandbox keeps the cold one's isolation (read-only /job, no repository, no
network, nothing left in /tmp). The bwrap ones run twice: the pool's sandboxes fresh, and forked
from the fork-server template (KERNELGRADE_SANDBOX_START=fork)."""
from __future__ import annotations

import errno
import os
import signal
import threading
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


def set_start(start: str, backend_name: str, monkeypatch) -> None:
    """KERNELGRADE_SANDBOX_START for this test (fork: bwrap only, where a child can be forked)."""
    from sandbox.forkserver import START_ENV, ForkServer

    if start == "fork" and (backend_name != "bwrap" or not ForkServer.available()):
        pytest.skip("fork mode: bwrap only, with a writable pids cgroup (ForkServer.available)")
    monkeypatch.setenv(START_ENV, start)


@pytest.fixture(params=["fresh", "fork"])
def warm_runner(request, sandbox_backend, monkeypatch):
    set_start(request.param, sandbox_backend.name, monkeypatch)
    runner = SandboxRunner(backend=sandbox_backend, limits=Limits(case_timeout_s=30, exit_grace_s=2))
    before = _children()
    pool = runner.start_pool(mode=DeviceMode.interpreter, device_index=0, size=1)
    assert pool.wait_ready(1, READY_S), "the warm sandbox never said hello"
    assert pool.forked_total == (1 if request.param == "fork" else 0)
    try:
        yield runner
    finally:
        runner.close()
    deadline = time.monotonic() + 10
    while _children() - before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not (_children() - before), "sandboxes outlived the pool"


TMP_BODY = '''
import atexit
import os
import time

atexit.register(time.sleep, 600)  # an exit that never ends: the run must not wait for it


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
        assert result.sandbox_start == ("forked" if pool.forks is not None else "fresh")
        assert cases["tmp_marker"].outputs["out"][0] == 0.0, "/tmp of an earlier submission was visible"
        assert cases["job_files"].outputs["out"][0] == 1.0, "the job was not in /job when the harness ran it"
        assert not _alive(pid), "a warm sandbox survived its submission"
        assert pid not in pool.pids()
        # The run's time split (timing.phase_*_s, timing.harness_*_s): where the output comes straight through
        # (bwrap) the run ended at the harness's `done` (killed, no `exit` phase: its atexit sleep never ran);
        # where it is relayed (docker) the exit was waited for `exit_grace_s` only, not the case timeout.
        # The warm-up was paid before the job. A phase is timed only where this side waited in it: quick cases
        # may come in the read that brought their start (no `cases` then), the first read always ends the wait
        # for the job's `load`.
        assert {"handover", "load", "kill", "cleanup"} <= set(result.phases), result.phases
        assert "startup" not in result.phases, result.phases
        if warm_runner.backend.direct_output:
            assert "exit" not in result.phases, result.phases
        else:
            assert result.phases.get("exit", 0.0) < warm_runner.limits.case_timeout_s / 3, result.phases
        assert {"warm_up", "inputs", "program", "case_calls", "case_evidence"} <= set(result.split), result.split
        assert all(v >= 0 for v in [*result.phases.values(), *result.split.values()])
    assert pool.started_total >= 3


SLOW_BODY = '''
import time


def probe_slow():
    time.sleep(1.0)  # longer than the caller's work below: the two overlap
    return outcome(True)
'''


def test_the_callers_work_runs_once_while_the_sandbox_runs_and_its_failure_is_not_the_runs(warm_runner):
    """SandboxRunner.run's `meanwhile` (the grader's written answers, RunStep.meanwhile): called once, in the
    running thread, after the sandbox took its job and before its result; what it raises is logged, never the
    run's; its time is `phases["meanwhile"]`."""
    pool = warm_runner.pools[(DeviceMode.interpreter, 0)]
    assert pool.wait_ready(1, READY_S)
    [pid] = pool.pids()
    calls: list[tuple[str, bool]] = []

    def meanwhile():
        calls.append((threading.current_thread().name, pid in pool.pids()))
        time.sleep(0.3)
        raise RuntimeError("the caller's own failure")

    started = time.monotonic()
    result, cases = run_probes(warm_runner, SLOW_BODY, ["slow"], meanwhile=meanwhile)
    elapsed = time.monotonic() - started
    assert calls == [(threading.current_thread().name, False)], calls  # once, here, the sandbox already taken
    assert cases["slow"].status == "ok" and result.attempts == 1
    assert 0.3 <= result.phases["meanwhile"] < elapsed, result.phases
    # overlapped, not added: the sandbox slept 1 s while the caller worked 0.3 s (it would be >= 1.3 s otherwise,
    # less the warm sandbox's start-up; its load, the case and the kill are on top of both)
    assert result.phases["meanwhile"] + sum(v for k, v in result.phases.items() if k in ("cases", "load")) \
        < elapsed + 0.05, result.phases


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


@pytest.mark.parametrize("start", ["fresh", "fork"])
def test_grader_with_warm_pool_grades_like_a_cold_one(sandbox_backend_name, monkeypatch, start):
    """The same grading in a cold fresh sandbox and in the warm pool's (fresh, or forked from the
    template): the same cases and score."""
    cold_grader = grader_for(sandbox_backend_name, device="interpreter", warm_pool=0)
    exercise = cold_grader.catalog.get("lesson06_mean_var")
    cold = cold_grader.grade(Submission(exercise=exercise.id, code=exercise.solution), secret_seed=5)
    cold_grader.close()
    assert cold.environment.sandbox_start == "fresh"
    set_start(start, sandbox_backend_name, monkeypatch)
    grader = grader_for(sandbox_backend_name, device="interpreter", warm_pool=1)
    grader.start()
    try:
        pool = grader.runner.pools[(DeviceMode.interpreter, 0)]
        assert pool.wait_ready(1, READY_S)
        [pid] = pool.pids()
        warm = grader.grade(Submission(exercise=exercise.id, code=exercise.solution), secret_seed=5)
        assert not _alive(pid) and pid not in pool.pids(), "the grading did not take the warm sandbox"
        assert pool.handed_total == 1 and grader.runner.cold_starts == 0
        assert warm.environment.sandbox_start == ("forked" if start == "fork" else "fresh")
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


def _wait_for(condition, timeout_s: float = READY_S) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


def test_a_caller_waits_for_the_start_up_under_way_rather_than_start_one_cold(bwrap_backend, tmp_path):
    """A pool of one, its sandbox taken: the refill starts the next. A caller that may wait gets
    that one once it says hello; a second caller meanwhile, with only that one start-up under way,
    does not wait for it (None at once: it starts its own)."""
    import threading

    from sandbox.pool import WarmPool

    pool = WarmPool(backend=bwrap_backend, limits=Limits(), mode=DeviceMode.interpreter, device_index=0, size=1,
                    work_root=tmp_path).start()
    taken = []
    try:
        assert pool.wait_ready(1, READY_S), "the pool never filled"
        taken.append(pool.acquire())
        assert taken[0] is not None and pool.acquire() is None, "without wait, nothing ready is None"

        got: list = []
        waiter = threading.Thread(target=lambda: got.append(pool.acquire(wait=True)))
        waiter.start()
        assert _wait_for(lambda: pool._callers_waiting == 1), "the caller did not wait"
        assert pool.acquire(wait=True) is None, "a second caller waited for the one start-up already spoken for"
        waiter.join(READY_S)
        assert len(got) == 1 and got[0] is not None and got[0].hello is not None, "the waiting caller got none"
        taken.append(got[0])
        assert pool.started_total == 2, "a sandbox was started for the waiting caller beside the refill"
    finally:
        for sandbox in taken:
            if sandbox is not None:
                sandbox.kill()
        pool.close()
    assert not list(tmp_path.iterdir()), "a warm sandbox's job folder outlived the pool"


def test_a_run_on_a_drained_pool_takes_the_refill_under_way(bwrap_backend, tmp_path):
    """The runner asks its pool with wait: a run that finds the pool empty but its refill in
    start-up runs in that refill (which is then gone from the pool), not in a sandbox of its own."""
    runner = SandboxRunner(backend=bwrap_backend, limits=Limits(case_timeout_s=30), work_root=tmp_path)
    pool = runner.start_pool(mode=DeviceMode.interpreter, device_index=0, size=1)
    other = None
    try:
        assert pool.wait_ready(1, READY_S), "the warm sandbox never said hello"
        other = pool.acquire()  # as another grading would
        assert other is not None and _wait_for(lambda: len(pool.pids()) == 1), "no refill started"
        [refill] = pool.pids()
        result, cases = run_probes(runner, TMP_BODY, ["job_files"])
        assert result.attempts == 1 and cases["job_files"].outputs["out"][0] == 1.0
        assert not _alive(refill) and refill not in pool.pids(), "the run did not take the refill under way"
    finally:
        if other is not None:
            other.kill()
        runner.close()


def test_a_caller_stops_waiting_when_a_start_up_fails(bwrap_backend, tmp_path):
    """The start-up a caller waits for dies (killed here): the caller gets None at once and starts
    its own, rather than waiting on the pool's next start-up (a pool whose start-ups fail is not
    well; the refill goes on without it)."""
    import threading

    from sandbox.pool import WarmPool

    pool = WarmPool(backend=bwrap_backend, limits=Limits(), mode=DeviceMode.interpreter, device_index=0, size=1,
                    work_root=tmp_path).start()
    taken: list = []
    got: list = []
    try:
        assert pool.wait_ready(1, READY_S), "the pool never filled"
        taken.append(pool.acquire())
        assert _wait_for(lambda: len(pool.pids()) == 1), "no refill started"
        [refill] = pool.pids()
        waiter = threading.Thread(target=lambda: got.append(pool.acquire(wait=True)))
        waiter.start()
        assert _wait_for(lambda: pool._callers_waiting == 1), "the caller did not wait"
        os.killpg(refill, signal.SIGKILL)
        waiter.join(READY_S)
        assert got == [None], "the caller went on waiting after its start-up died"
        # (it may have seen the start-up dead before the pool discarded it: either ends the wait)
        assert _wait_for(lambda: pool.replaced_total == 1) and pool.handed_total == 1
    finally:
        for sandbox in taken + got:
            if sandbox is not None:
                sandbox.kill()
        pool.close()


def test_with_fork_starts_a_run_on_a_drained_pool_forks_rather_than_waits(bwrap_backend, tmp_path, monkeypatch):
    """KERNELGRADE_SANDBOX_START=fork: a cold start is a fork from the template, ready before any
    start-up under way, so a run on a drained pool does not wait for the refill."""
    from sandbox.forkserver import START_ENV, ForkServer

    if not ForkServer.available():
        pytest.skip("no fork server here (needs a pids cgroup per child)")
    monkeypatch.setenv(START_ENV, "fork")
    runner = SandboxRunner(backend=bwrap_backend, limits=Limits(case_timeout_s=30), work_root=tmp_path)
    pool = runner.start_pool(mode=DeviceMode.interpreter, device_index=0, size=1)
    other = None
    try:
        assert pool.wait_ready(1, READY_S), "the warm sandbox never said hello"
        other = pool.acquire()
        assert other is not None and _wait_for(lambda: len(pool.pids()) == 1), "no refill started"
        result, cases = run_probes(runner, TMP_BODY, ["job_files"])
        assert cases["job_files"].outputs["out"][0] == 1.0
        assert pool.handed_after_wait == 0, "the run waited for the refill instead of forking"
    finally:
        if other is not None:
            other.kill()
        runner.close()


def test_a_pool_closed_while_its_refill_waits_for_the_template_leaves_no_sandbox(bwrap_backend, tmp_path, monkeypatch):
    """The H200 (fork mode, a template per host uid) found fresh warm sandboxes alive after their
    pool had closed: close() stopped waiting for the refill thread while a template was still
    starting, the template then failed (closed with the runner), and the thread started a fresh
    sandbox in its place that nobody would kill. The fork server here is a stand-in whose template
    start outlasts close()'s wait and then fails as a closed one does; the sandbox is real bwrap."""
    from sandbox import pool as pool_module
    from sandbox.backends.base import SandboxUnavailable

    entered, release = threading.Event(), threading.Event()

    class SlowClosingForks:
        def spawn_warm(self, *, job_dir: Path):
            entered.set()
            release.wait(60)
            raise SandboxUnavailable("the fork-server templates are closed")

    monkeypatch.setattr(pool_module, "CLOSE_JOIN_S", 0.2)
    pool = pool_module.WarmPool(backend=bwrap_backend, limits=Limits(), mode=DeviceMode.interpreter, device_index=0,
                                size=1, work_root=tmp_path, forks=SlowClosingForks()).start()
    assert entered.wait(READY_S), "the refill never asked the fork server"
    before = _children()
    pool.close()  # gives up on the refill thread after 0.2 s: it is still in spawn_warm
    assert pool._thread.is_alive()
    release.set()  # the template "fails": the thread would fall back to a fresh sandbox
    pool._thread.join(READY_S)
    assert not pool._thread.is_alive()
    assert _wait_for(lambda: not (_children() - before), 10), f"sandboxes outlived the pool: {_children() - before}"
    assert not list(tmp_path.iterdir()), "a warm sandbox's job folder outlived the pool"
    assert pool.started_total == 0
