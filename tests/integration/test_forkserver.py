"""KERNELGRADE_SANDBOX_START=fork (sandbox/forkserver.py): attempts forked from a template that has
imported torch, each with the isolation of a fresh bwrap sandbox. The isolation tests and the
adversarial suite run against it with the variable set (docs/forkserver.md); these check what
only a forked child could get wrong: what it inherits from the template. Each check runs on a
cold child (forked for its attempt) and on a warm one (forked by the warm pool, its job streamed
in after its hello)."""
from __future__ import annotations

import errno
import os
import time

import pytest

from sandbox.contract import DeviceMode, Limits
from sandbox.forkserver import START_ENV, ForkServer
from sandbox.runner import SandboxRunner
from tests.conftest import run_probes, scratch_files_body

pytestmark = pytest.mark.sandbox

BODY = '''
import os
import random
import resource


def probe_identity():
    return outcome(os.getpid() == 2 and os.getuid() == 65534 and os.getgid() == 65534)


def probe_capabilities():
    status = open("/proc/self/status").read()
    sets = [status.split(name + ":")[1].split()[0] for name in ("CapEff", "CapPrm", "CapBnd", "CapAmb", "CapInh")]
    return outcome(all(int(s, 16) == 0 for s in sets) and status.split("NoNewPrivs:")[1].split()[0] == "1"
                   and status.split("Seccomp:")[1].split()[0] == "2")


def probe_processes():
    return outcome(sorted(int(p) for p in os.listdir("/proc") if p.isdigit()) == [1, 2])


def probe_job_files():
    return outcome(sorted(os.listdir("/job")) == sorted(["exits.py", "given_check.py", "gpu_compile.py", "harness.py",
                                                          "inputs.safetensors", "job.json", "launch_hook.py",
                                                          "shared_triton_cache.py", "submission.py", "wire.py"]))


def probe_ptys():
    return outcome(os.listdir("/dev/pts") == ["ptmx"])


def probe_cpu_limit():
    return outcome(resource.getrlimit(resource.RLIMIT_CPU)[1] == 900)


def probe_init_capabilities():
    # pid 1 (a warm child's stays privileged until its job is in /job): no capability left by now
    status = open("/proc/1/status").read()
    sets = [status.split(name + ":")[1].split()[0] for name in ("CapEff", "CapPrm", "CapBnd", "CapAmb")]
    return outcome(all(int(s, 16) == 0 for s in sets) and status.split("Seccomp:")[1].split()[0] == "2")


def probe_job_read_only():
    for action in (lambda: open("/job/new.py", "w"), lambda: open("/job/submission.py", "a"),
                   lambda: os.chmod("/job/submission.py", 0o666)):
        try:
            action()
            return outcome(False)
        except OSError as exc:
            if exc.errno not in (30, 13, 1):  # EROFS, EACCES, EPERM
                return outcome(False, exc.errno)
    return outcome(True)


def probe_random():
    return outcome(True, random.getrandbits(52))
'''
NAMES = ["identity", "capabilities", "init_capabilities", "processes", "job_files", "job_read_only", "ptys",
         "cpu_limit", "random"]


class ForkRunner:
    """A runner in fork mode whose attempts take a cold child, or (`warm`) a warm pool's child."""

    def __init__(self, runner: SandboxRunner, warm: bool) -> None:
        self.runner, self.warm = runner, warm
        self.pool = runner.start_pool(mode=DeviceMode.interpreter, device_index=0, size=1) if warm else None

    def probes(self, body: str, names: list[str]):
        handed = self.pool.handed_total if self.pool is not None else 0
        if self.pool is not None:
            assert self.pool.wait_ready(1, 120), "the warm pool's forked child never said hello"
        result, cases = run_probes(self.runner, body, names)
        assert result.sandbox_start == "forked", f"the attempt's sandbox started {result.sandbox_start!r}"
        if self.pool is not None:
            assert self.pool.handed_total == handed + 1, "the attempt did not take the warm child"
            assert self.pool.forked_total >= 1 and self.pool.forked_total == self.pool.started_total
        else:
            assert self.runner.cold_starts >= 1
        return result, cases


def make_fork_runner(backend, monkeypatch, *, warm: bool, **limits) -> ForkRunner:
    if not ForkServer.available():
        pytest.skip("fork mode needs a writable pids cgroup and a Python outside /tmp (ForkServer.available)")
    monkeypatch.setenv(START_ENV, "fork")
    return ForkRunner(SandboxRunner(backend=backend, limits=Limits(**{"case_timeout_s": 60, **limits})), warm=warm)


@pytest.fixture(params=["cold", "warm"])
def fork_runner(request, bwrap_backend, monkeypatch):
    forks = make_fork_runner(bwrap_backend, monkeypatch, warm=request.param == "warm")
    yield forks
    forks.runner.close()


def test_a_forked_child_has_the_isolation_of_a_fresh_sandbox(fork_runner):
    """Two attempts from one template: each sees only itself and its own job (read-only), as uid
    65534 with no capability, the seccomp filter and its own ptys, its pid 1 without capabilities
    either; the generators it inherited are reseeded."""
    draws = []
    for _ in range(2):
        _, cases = fork_runner.probes(BODY, NAMES)
        for name in NAMES[:-1]:
            assert cases[name].status == "ok" and cases[name].outputs["out"][0] == 1.0, f"{name}: {cases[name]}"
        draws.append(cases["random"].outputs["out"][1])
    [server] = fork_runner.runner.forks.values()
    assert server._proc is not None and server._proc.poll() is None, "the template did not serve both attempts"
    assert draws[0] != draws[1], "two children drew the same random numbers: the template's state was not reseeded"


def test_the_template_ends_with_the_runner(fork_runner):
    fork_runner.probes(BODY, ["identity"])
    [server] = fork_runner.runner.forks.values()
    assert server._proc is not None
    pid = server._proc.pid
    waiting = fork_runner.pool.pids() if fork_runner.pool is not None else []  # the refill, if any yet
    fork_runner.runner.close()
    for child in waiting:
        assert not os.path.exists(f"/proc/{child}"), "a warm child outlived its runner"
    assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z"


def test_fresh_is_the_default(bwrap_backend, monkeypatch):
    monkeypatch.delenv(START_ENV, raising=False)
    runner = SandboxRunner(backend=bwrap_backend, limits=Limits())
    assert runner.start == "fresh" and runner._fork_server(DeviceMode.interpreter, 0) is None
    monkeypatch.setenv(START_ENV, "fork")
    assert SandboxRunner(backend=bwrap_backend, limits=Limits()).start == "fork"


@pytest.mark.parametrize("start", ["cold", "warm"])
def test_a_forked_child_cannot_make_more_files_than_its_limit(bwrap_backend, monkeypatch, start):
    """The child mounts its own /tmp and /dev/shm with `nr_inodes` = Limits.tmpfs_files, so empty
    files (a kilobyte of kernel memory each, no bytes) stop at the limit as bytes stop at the size
    (a fresh bwrap sandbox's --tmpfs takes only a size: SECURITY.md, "Known weaknesses")."""
    limit = 300
    forks = make_fork_runner(bwrap_backend, monkeypatch, warm=start == "warm", tmpfs_files=limit)
    try:
        _, cases = forks.probes(scratch_files_body(limit), ["tmp", "shm"])
    finally:
        forks.runner.close()
    for name in ("tmp", "shm"):
        assert cases[name].status == "ok", cases[name]
        made, code, inodes = cases[name].outputs["out"].tolist()
        assert inodes == limit, f"/{name}: {inodes} inodes, not the limit {limit}"
        assert 0 < made < limit and code == errno.ENOSPC, f"/{name}: made {made} files (limit {limit}), errno {code}"


def test_a_warm_pool_outlives_its_template(bwrap_backend, monkeypatch):
    """The template dies under a warm child that waits for its job: the child is discarded (it died
    with the template, and a child of an earlier template never reads as alive), the next spawn
    starts a new template, and its warm child runs the next attempt."""
    forks = make_fork_runner(bwrap_backend, monkeypatch, warm=True)
    try:
        pool = forks.pool
        assert pool is not None and pool.wait_ready(1, 120)
        [server] = forks.runner.forks.values()
        assert server._proc is not None
        first_template, [first_child] = server._proc.pid, pool.pids()
        os.killpg(first_template, 9)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (pool.replaced_total >= 1 and pool.ready_count() == 1):
            time.sleep(0.05)
        assert pool.replaced_total >= 1 and first_child not in pool.pids(), "the dead template's child was kept"
        _, cases = forks.probes(BODY, ["identity", "processes"])
        assert all(c.outputs["out"][0] == 1.0 for c in cases.values()), cases
        assert server._proc is not None and server._proc.pid != first_template, "no new template"
    finally:
        forks.runner.close()


@pytest.mark.parametrize("why", ["unavailable", "spawn fails"])
def test_a_pool_that_cannot_fork_starts_fresh_and_says_why(bwrap_backend, monkeypatch, caplog, why):
    """Fork mode where no child can be forked (no pids cgroup, or a template that fails): the pool
    starts fresh sandboxes, the log says why, and the attempt says it ran in a fresh one."""
    import logging

    from sandbox.backends.base import SandboxUnavailable

    monkeypatch.setenv(START_ENV, "fork")
    if why == "unavailable":
        monkeypatch.setattr(ForkServer, "unavailable_reason", staticmethod(lambda: "no writable pids cgroup (test)"))
    else:
        def refuse(self, **_):
            raise SandboxUnavailable("the fork-server template did not start (test)")

        monkeypatch.setattr(ForkServer, "spawn_warm", refuse)
    caplog.set_level(logging.WARNING)
    runner = SandboxRunner(backend=bwrap_backend, limits=Limits(case_timeout_s=60))
    try:
        pool = runner.start_pool(mode=DeviceMode.interpreter, device_index=0, size=1)
        assert pool is not None and pool.wait_ready(1, 120)
        result, _ = run_probes(runner, BODY, ["identity"])
        assert pool.handed_total == 1 and pool.forked_total == 0 and result.sandbox_start == "fresh"
    finally:
        runner.close()
    assert "(test)" in caplog.text and "fresh" in caplog.text, caplog.text
