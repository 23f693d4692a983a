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
from sandbox.host_uids import lease_host_uid
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
    return outcome(started >= 64, started)  # all of them: no cap held
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
    assert breached == 0.0 and 0 < started < Limits(processes=12).process_cap(DeviceMode.interpreter), started
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
            assert (sandbox.cgroup.path / "pids.max").read_text().strip() == str(runner.limits.process_cap(DeviceMode.interpreter))
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
    """As root with no writable pids controller, each sandbox runs as an unprivileged host uid of
    its own (setpriv), where RLIMIT_NPROC binds; where an unprivileged sandbox cannot start with
    the very mounts of the run (user namespaces refused to unprivileged users, or a bound folder
    they cannot reach, such as a venv under /root), it stays root-mapped and says why. Either way
    the sandbox runs."""
    import sandbox.backends.bwrap as bwrap
    from sandbox.host_uids import HOST_UID_BASE, HOST_UID_COUNT

    monkeypatch.setattr(bwrap, "host_pids_cgroups", lambda: None)
    monkeypatch.setattr(bwrap, "_unprivileged", {})
    backend = BwrapBackend(python=sys.executable, hidden_paths=[])
    with caplog.at_level("INFO", logger="kernelgrade.sandbox.bwrap"):
        unprivileged = backend.unprivileged()
    confinement = backend.confine(limits=Limits(), mode=DeviceMode.interpreter, device_index=0, job_dir=tmp_path / "job")
    try:
        spec = backend.launch_spec(job_dir=tmp_path, verdict_fd=1, mode=DeviceMode.interpreter, device_index=0,
                                   limits=Limits(), confinement=confinement)
        argv = spec.argv
        for fd in spec.pass_fds:
            os.close(fd)
        if not unprivileged:
            assert "stay root-mapped" in caplog.text
            assert confinement.host_uid is None and confinement.process_limit == "RLIMIT_NPROC" and argv[0] == "prlimit"
        else:
            uid = confinement.host_uid
            assert HOST_UID_BASE <= uid < HOST_UID_BASE + HOST_UID_COUNT
            assert confinement.process_limit == f"RLIMIT_NPROC (host uid {uid})"
            assert argv[:4] == ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
    finally:
        confinement.close(1.0)
    _, cases = run_probes(SandboxRunner(backend=backend, limits=Limits()),
                          "def probe_nothing():\n    return outcome(False)\n", ["nothing"])
    assert cases["nothing"].status == "ok", cases["nothing"]


@pytest.mark.skipif(os.geteuid() != 0, reason="the probe is for a worker running as root")
def test_the_probe_uses_the_mounts_of_the_run(monkeypatch, tmp_path):
    """A compile cache the unprivileged uid cannot reach makes the probe of that launch fail, not
    the run (which used to die with "Can't find source path .../triton-shared: Permission denied"
    and come back not_gradable, while the probe, without the cache, had said yes)."""
    import sandbox.backends.bwrap as bwrap
    from sandbox.backends.base import TritonCacheMount

    if not os.path.exists("/usr/bin/python3"):
        pytest.skip("needs a system python3 an unprivileged user can reach")
    monkeypatch.setattr(bwrap, "host_pids_cgroups", lambda: None)
    monkeypatch.setattr(bwrap, "_unprivileged", {})
    plain = BwrapBackend(python="/usr/bin/python3", hidden_paths=[])
    if not plain.unprivileged(DeviceMode.gpu):
        pytest.skip("an unprivileged bwrap cannot start here (user namespaces refused to unprivileged users)")
    private = tmp_path / "private"
    (private / "cache").mkdir(parents=True)
    os.chmod(private, 0o700)  # like a data folder under /root
    cached = plain.with_triton_cache(TritonCacheMount(private / "cache"))
    assert bwrap.blocked_for_others(private / "cache") == private
    assert cached.unprivileged(DeviceMode.gpu) is False
    assert plain.unprivileged(DeviceMode.gpu) is True  # a different launch: its own answer


@pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/usr/bin/python3"),
                    reason="needs root and a system python3 an unprivileged user can reach")
def test_as_an_unprivileged_host_uid_the_process_limit_binds(monkeypatch):
    """The fallback's mechanism with the system python3 (reachable by an unprivileged uid, unlike a
    venv under /root): the same fork loop in the same sandbox stops at RLIMIT_NPROC as a host uid
    of its own, and runs through it when root-mapped (the kernel exempts uid 0)."""
    import sandbox.backends.bwrap as bwrap

    monkeypatch.setattr(bwrap, "host_pids_cgroups", lambda: None)
    monkeypatch.setattr(bwrap, "_unprivileged", {})
    backend = BwrapBackend(python="/usr/bin/python3", hidden_paths=[])
    if not backend.unprivileged():
        pytest.skip("an unprivileged bwrap cannot start here (user namespaces refused to unprivileged users)")
    lease = lease_host_uid()
    try:
        launcher, started = _forks(backend, lease.uid, 64, hold_s=3)
        cap = Limits(processes=16).process_cap(DeviceMode.interpreter)  # 16 + the runtime's own
        assert launcher == "setpriv" and started < cap, f"{started} forks succeeded as uid {lease.uid} with RLIMIT_NPROC {cap}"
    finally:
        lease.release()
    launcher, started = _forks(backend, None, 64, hold_s=3)
    assert launcher == "prlimit" and started == 64, "root-mapped, RLIMIT_NPROC does not bind (the weakness)"


def _forks(backend: BwrapBackend, host_uid: int | None, count: int, *, hold_s: float) -> tuple[str, int]:
    """(launcher, forks that succeeded) of a sandbox with Limits(processes=16) whose children live `hold_s`."""
    import subprocess
    import tempfile
    from pathlib import Path

    fork_loop = (f"import os, time\nstarted = 0\nfor _ in range({count}):\n    try:\n        pid = os.fork()\n"
                 f"    except OSError:\n        break\n    if pid == 0:\n        time.sleep({hold_s})\n        os._exit(0)\n"
                 "    started += 1\nprint(started, flush=True)\nfor _ in range(started):\n    os.wait()")
    with tempfile.TemporaryDirectory() as job:
        os.chmod(job, 0o755)
        spec = backend._spec(job_dir=Path(job), verdict_fd=1, mode=DeviceMode.interpreter, device_index=0,
                             limits=Limits(processes=16), control_fd=None, host_uid=host_uid,
                             command=["/usr/bin/python3", "-I", "-c", fork_loop], seccomp=True)
        try:
            done = subprocess.run(spec.argv, env=spec.env, capture_output=True, text=True, timeout=60,
                                  pass_fds=spec.pass_fds)
        finally:
            for fd in spec.pass_fds:
                os.close(fd)
    assert done.returncode == 0, done.stderr
    return spec.argv[0], int(done.stdout.split()[0])


@pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/usr/bin/python3"),
                    reason="needs root and a system python3 an unprivileged user can reach")
def test_sandboxes_side_by_side_do_not_share_one_process_budget(monkeypatch):
    """With one uid for all (65534), a sandbox holding 12 processes left the next one 4 of its 16
    ("Creating new namespace failed: Resource temporarily unavailable" in the H200 run): each
    sandbox now leases a host uid of its own."""
    import threading

    import sandbox.backends.bwrap as bwrap

    monkeypatch.setattr(bwrap, "host_pids_cgroups", lambda: None)
    monkeypatch.setattr(bwrap, "_unprivileged", {})
    backend = BwrapBackend(python="/usr/bin/python3", hidden_paths=[])
    if not backend.unprivileged():
        pytest.skip("an unprivileged bwrap cannot start here (user namespaces refused to unprivileged users)")
    first, second = lease_host_uid(), lease_host_uid()
    try:
        assert first.uid != second.uid
        busy = threading.Thread(target=_forks, args=(backend, first.uid, 12), kwargs={"hold_s": 8})
        busy.start()
        time.sleep(3)  # the first sandbox now holds 13 tasks of its uid
        _, started = _forks(backend, second.uid, 12, hold_s=1)
        busy.join()
    finally:
        first.release()
        second.release()
    assert started == 12, f"the second sandbox got only {started} of its 12 processes"
