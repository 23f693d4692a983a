"""KERNELGRADE_SANDBOX_START=fork (sandbox/forkserver.py): attempts forked from a template that has
imported torch, each with the isolation of a fresh bwrap sandbox. The isolation tests and the
adversarial suite run against it with the variable set (docs/forkserver.md); these check what
only a forked child could get wrong: what it inherits from the template."""
from __future__ import annotations

import errno
import os

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


def probe_random():
    return outcome(True, random.getrandbits(52))
'''
NAMES = ["identity", "capabilities", "processes", "job_files", "ptys", "cpu_limit", "random"]


@pytest.fixture
def fork_runner(bwrap_backend, monkeypatch):
    if not ForkServer.available():
        pytest.skip("fork mode needs a writable pids cgroup and a Python outside /tmp (ForkServer.available)")
    monkeypatch.setenv(START_ENV, "fork")
    runner = SandboxRunner(backend=bwrap_backend, limits=Limits(case_timeout_s=60))
    yield runner
    runner.close()


def test_a_forked_child_has_the_isolation_of_a_fresh_sandbox(fork_runner):
    """Two attempts from one template: each sees only itself and its own job, as uid 65534 with no
    capability, the seccomp filter and its own ptys; the generators it inherited are reseeded."""
    draws = []
    for _ in range(2):
        _, cases = run_probes(fork_runner, BODY, NAMES)
        for name in NAMES[:-1]:
            assert cases[name].status == "ok" and cases[name].outputs["out"][0] == 1.0, f"{name}: {cases[name]}"
        draws.append(cases["random"].outputs["out"][1])
    [server] = fork_runner.forks.values()
    assert server._proc is not None and server._proc.poll() is None, "the template did not serve both attempts"
    assert draws[0] != draws[1], "two children drew the same random numbers: the template's state was not reseeded"


def test_the_template_ends_with_the_runner(fork_runner):
    run_probes(fork_runner, BODY, ["identity"])
    [server] = fork_runner.forks.values()
    assert server._proc is not None
    pid = server._proc.pid
    fork_runner.close()
    assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z"


def test_fresh_is_the_default(bwrap_backend, monkeypatch):
    monkeypatch.delenv(START_ENV, raising=False)
    runner = SandboxRunner(backend=bwrap_backend, limits=Limits())
    assert runner.start == "fresh" and runner._fork_server(DeviceMode.interpreter, 0) is None
    monkeypatch.setenv(START_ENV, "fork")
    assert SandboxRunner(backend=bwrap_backend, limits=Limits()).start == "fork"


def test_a_forked_child_cannot_make_more_files_than_its_limit(bwrap_backend, monkeypatch):
    """The child mounts its own /tmp and /dev/shm with `nr_inodes` = Limits.tmpfs_files, so empty
    files (a kilobyte of kernel memory each, no bytes) stop at the limit as bytes stop at the size
    (a fresh bwrap sandbox's --tmpfs takes only a size: SECURITY.md, "Known weaknesses")."""
    if not ForkServer.available():
        pytest.skip("fork mode needs a writable pids cgroup and a Python outside /tmp (ForkServer.available)")
    monkeypatch.setenv(START_ENV, "fork")
    limit = 300
    runner = SandboxRunner(backend=bwrap_backend, limits=Limits(case_timeout_s=60, tmpfs_files=limit))
    try:
        _, cases = run_probes(runner, scratch_files_body(limit), ["tmp", "shm"])
        assert runner.forks, "the attempt was not forked from a template"
    finally:
        runner.close()
    for name in ("tmp", "shm"):
        assert cases[name].status == "ok", cases[name]
        made, code, inodes = cases[name].outputs["out"].tolist()
        assert inodes == limit, f"/{name}: {inodes} inodes, not the limit {limit}"
        assert 0 < made < limit and code == errno.ENOSPC, f"/{name}: made {made} files (limit {limit}), errno {code}"
