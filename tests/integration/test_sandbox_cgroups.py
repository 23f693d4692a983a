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
    expected = PIDS_CGROUP if host_pids_cgroups() is not None else BwrapBackend(python=sys.executable, hidden_paths=[]).process_limit
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
def test_root_without_a_pids_cgroup_drops_to_an_unprivileged_host_uid(monkeypatch, caplog):
    """As root with no writable pids controller, every sandbox runs as host uid 65534, where
    RLIMIT_NPROC binds; where an unprivileged sandbox cannot start (user namespaces refused to
    unprivileged users, or a bound folder they cannot reach), it stays root-mapped and says so."""
    import sandbox.backends.bwrap as bwrap

    monkeypatch.setattr(bwrap, "host_pids_cgroups", lambda: None)
    monkeypatch.setattr(bwrap, "_host_uid", {})
    backend = BwrapBackend(python=sys.executable, hidden_paths=[])
    with caplog.at_level("INFO", logger="kernelgrade.sandbox.bwrap"):
        uid = backend.host_uid()
    runner = SandboxRunner(backend=backend, limits=Limits(processes=16))
    # Inside, the sandbox's uid is 65534 either way; the uid map says which host uid that is.
    _, cases = run_probes(runner, '''
def probe_host_uid():
    fields = open("/proc/self/uid_map").read().split()
    return outcome(False, float(fields[1]))
''', ["host_uid"])
    if uid is None:
        assert "stay root-mapped" in caplog.text
        assert backend.process_limit == "RLIMIT_NPROC"
    else:
        assert uid == bwrap.SANDBOX_UID and backend.process_limit == f"RLIMIT_NPROC (host uid {uid})"
    assert cases["host_uid"].status == "ok", cases["host_uid"]
    assert int(cases["host_uid"].outputs["out"][1]) == (uid if uid is not None else 0)
