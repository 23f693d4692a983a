"""Real bwrap sandboxes in their pids cgroups: a cold run and warm-pool sandboxes each get their
own, Limits.processes holds inside (for root too), the report's environment says which limit
applied, and no cgroup outlives its sandbox (normal end, kill, discard, pool shutdown). Skipped
where this process cannot write a pids controller (then RLIMIT_NPROC is the limit, and the run
says so)."""
from __future__ import annotations

import os
import signal
import sys
import time

import pytest

from sandbox.backends.bwrap import BwrapBackend
from sandbox.cgroups import PIDS_CGROUP, host_pids_cgroups
from sandbox.contract import DeviceMode, Limits
from sandbox.runner import SandboxRunner
from tests.conftest import run_probes

pytestmark = pytest.mark.sandbox
READY_S = 120

needs_pids_cgroup = pytest.mark.skipif(host_pids_cgroups() is None,
                                       reason="no writable pids cgroup for this process here (RLIMIT_NPROC applies)")


def _mine() -> set[str]:
    """The sandbox cgroups this process created that still exist."""
    found = host_pids_cgroups()
    prefix = f"{os.stat('/proc/self/ns/pid').st_ino}-{os.getpid()}-"
    return {p.name for p in found.parent.iterdir() if p.is_dir() and p.name.startswith(prefix)}


FORKS = '''
import os


def probe_forks():
    started = 0
    for _ in range(64):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            os.setsid()  # out of the process group: only the cgroup (and the pid namespace) still hold it
            os.execv("/usr/bin/sleep", ["sleep", "60"])
        started += 1
    return outcome(started >= 12, started)
'''


def test_the_run_says_which_process_limit_applied(bwrap_runner):
    result, cases = run_probes(bwrap_runner(), "def probe_nothing():\n    return outcome(False)\n", ["nothing"])
    expected = PIDS_CGROUP if host_pids_cgroups() is not None else BwrapBackend(python=sys.executable, hidden_paths=[]).process_limit(DeviceMode.interpreter)
    assert result.process_limit == expected


@needs_pids_cgroup
def test_a_cold_sandbox_is_capped_and_leaves_no_cgroup(bwrap_runner):
    before = _mine()
    result, cases = run_probes(bwrap_runner(processes=12), FORKS, ["forks"])
    breached, started = cases["forks"].outputs["out"].tolist()
    assert breached == 0.0 and 0 < started < 12, started
    assert result.process_limit == PIDS_CGROUP
    assert _mine() == before


@needs_pids_cgroup
def test_warm_sandboxes_each_have_their_own_cgroup_until_they_end(bwrap_backend):
    before = _mine()
    runner = SandboxRunner(backend=bwrap_backend, limits=Limits(case_timeout_s=30, processes=64))
    try:
        pool = runner.start_pool(mode=DeviceMode.interpreter, device_index=0, size=2)
        assert pool.wait_ready(2, READY_S), "the warm sandboxes never said hello"
        with pool._lock:
            waiting = list(pool._waiting)
        groups = [s.cgroup for s in waiting]
        assert all(g is not None for g in groups) and len({g.name for g in groups}) == 2
        for sandbox in waiting:
            assert sandbox.proc.pid in sandbox.cgroup.pids()
            assert (sandbox.cgroup.path / "pids.max").read_text().strip() == "64"
            assert sandbox.process_limit == PIDS_CGROUP
        assert {g.name for g in groups} <= _mine()

        # One dies while waiting: the pool discards it (its cgroup goes) and starts another.
        victim = waiting[0]
        os.killpg(victim.proc.pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while victim.cgroup is not None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert victim.cgroup is None and not groups[0].path.exists()

        # One runs a submission: its cgroup goes when the run ends.
        result, cases = run_probes(runner, "def probe_nothing():\n    return outcome(False)\n", ["nothing"])
        assert result.process_limit == PIDS_CGROUP
        assert not groups[1].path.exists()
        assert pool.wait_ready(2, READY_S)
    finally:
        runner.close()
    assert _mine() == before, "cgroups outlived the pool"


@pytest.mark.skipif(os.geteuid() != 0, reason="the fallback is for a worker running as root")
def test_root_without_a_pids_cgroup_drops_to_an_unprivileged_host_uid(monkeypatch, caplog, tmp_path):
    """As root with no writable pids controller, every sandbox runs as host uid 65534 (setpriv),
    where RLIMIT_NPROC binds; where an unprivileged sandbox cannot start (user namespaces refused to
    unprivileged users, or a bound folder they cannot reach, such as a venv under /root), it stays
    root-mapped and says so. Either way the sandbox runs."""
    import sandbox.backends.bwrap as bwrap

    monkeypatch.setattr(bwrap, "host_pids_cgroups", lambda: None)
    monkeypatch.setattr(bwrap, "_host_uid", {})
    backend = BwrapBackend(python=sys.executable, hidden_paths=[])
    with caplog.at_level("INFO", logger="kernelgrade.sandbox.bwrap"):
        uid = backend.host_uid()
    argv = backend.launch_spec(job_dir=tmp_path, verdict_fd=1, mode=DeviceMode.interpreter, device_index=0,
                               limits=Limits()).argv
    if uid is None:
        assert "stay root-mapped" in caplog.text
        assert backend.process_limit(DeviceMode.interpreter) == "RLIMIT_NPROC" and argv[0] == "prlimit"
    else:
        assert uid == bwrap.SANDBOX_UID and backend.process_limit(DeviceMode.interpreter) == f"RLIMIT_NPROC (host uid {uid})"
        assert argv[:4] == ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
    _, cases = run_probes(SandboxRunner(backend=backend, limits=Limits()),
                          "def probe_nothing():\n    return outcome(False)\n", ["nothing"])
    assert cases["nothing"].status == "ok", cases["nothing"]


@pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/usr/bin/python3"),
                    reason="needs root and a system python3 an unprivileged user can reach")
def test_as_host_uid_65534_the_process_limit_binds(monkeypatch):
    """The fallback's mechanism with the system python3 (reachable by uid 65534, unlike a venv
    under /root): the same fork loop in the same sandbox stops at RLIMIT_NPROC as host uid 65534,
    and runs through it when root-mapped (the kernel exempts uid 0)."""
    import subprocess
    import tempfile
    from pathlib import Path

    import sandbox.backends.bwrap as bwrap

    monkeypatch.setattr(bwrap, "host_pids_cgroups", lambda: None)
    monkeypatch.setattr(bwrap, "_host_uid", {})
    backend = BwrapBackend(python="/usr/bin/python3", hidden_paths=[])
    uid = backend.host_uid()
    if uid is None:
        pytest.skip("an unprivileged bwrap cannot start here (user namespaces refused to unprivileged users)")
    fork_loop = ("import os, time\nstarted = 0\nfor _ in range(64):\n    try:\n        pid = os.fork()\n"
                 "    except OSError:\n        break\n    if pid == 0:\n        time.sleep(3)\n        os._exit(0)\n"
                 "    started += 1\nprint(started)")

    def forks(host_uid):
        with tempfile.TemporaryDirectory() as job:
            os.chmod(job, 0o755)
            spec = backend._spec(job_dir=Path(job), verdict_fd=1, mode=bwrap.DeviceMode.interpreter, device_index=0,
                                 limits=Limits(processes=16), control_fd=None, host_uid=host_uid,
                                 command=["/usr/bin/python3", "-I", "-c", fork_loop])
            done = subprocess.run(spec.argv, env=spec.env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return spec.argv[0], int(done.stdout)

    # The limit counts every task of uid 65534 on the host, this sandbox's own included.
    launcher, started = forks(uid)
    assert launcher == "setpriv" and started < 16, f"{started} forks succeeded as uid {uid} with RLIMIT_NPROC 16"
    launcher, started = forks(None)
    assert launcher == "prlimit" and started == 64, "root-mapped, RLIMIT_NPROC does not bind (the weakness)"
