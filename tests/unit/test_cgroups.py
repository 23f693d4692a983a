"""Per-sandbox pids cgroups (sandbox/cgroups.py): where the controller is found (parsing, no host
needed), and against the real /sys/fs/cgroup of this machine: creation with pids.max, entering
before the first fork, the kill of everything left (setsid daemons included), removal, the sweep
of stale cgroups, and the fallback when there is none. The real-host tests are skipped where this
process cannot write a pids controller."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sandbox import cgroups
from sandbox.cgroups import (
    PARENT_NAME, PIDS_CGROUP, PidsCgroups, SandboxCgroup, SandboxCgroups, host_pids_cgroups, locate_pids,
)
from sandbox.contract import DeviceMode, Limits
from sandbox.backends.base import Confinement, LaunchSpec
from sandbox.pool import start_sandbox

# This machine's kind: cgroup v1 controllers plus an empty cgroup2 (hybrid), the pids controller in
# hierarchy 8, the process in its root.
HYBRID_CGROUP = "9:name=systemd:/\n8:pids:/\n4:memory:/some/where\n0::/\n"
HYBRID_MOUNTINFO = """\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
"""
V2_MOUNTINFO = "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"


def test_v1_pids_hierarchy_is_preferred_to_the_empty_unified_one():
    assert locate_pids(HYBRID_CGROUP, HYBRID_MOUNTINFO) == (1, Path("/sys/fs/cgroup/pids"))


def test_v1_own_cgroup_below_the_mount_root():
    # A container that sees its own part of the hierarchy mounted (mount root /docker/abc).
    mountinfo = "39 31 0:36 /docker/abc /sys/fs/cgroup/pids ro,relatime - cgroup cgroup rw,pids\n"
    assert locate_pids("8:pids:/docker/abc/worker\n", mountinfo) == (1, Path("/sys/fs/cgroup/pids/worker"))
    assert locate_pids("8:pids:/docker/abc\n", mountinfo) == (1, Path("/sys/fs/cgroup/pids"))
    # The own cgroup is outside what is mounted: nothing usable (and never a sibling of the mount).
    assert locate_pids("8:pids:/docker/abcdef\n", mountinfo) is None


def test_v2_only():
    assert locate_pids("0::/system.slice/kg.service\n", V2_MOUNTINFO) == (
        2, Path("/sys/fs/cgroup/system.slice/kg.service"))
    assert locate_pids("0::/\n", V2_MOUNTINFO) == (2, Path("/sys/fs/cgroup"))


def test_no_pids_controller_or_no_mount():
    assert locate_pids("4:memory:/\n", "35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n") is None
    assert locate_pids(HYBRID_CGROUP, "") is None  # pids in /proc/self/cgroup but not mounted here


def test_escaped_mount_point():
    mountinfo = r"39 31 0:36 / /srv/cg\040pids rw - cgroup cgroup rw,pids" + "\n"
    assert locate_pids("8:pids:/a\n", mountinfo) == (1, Path("/srv/cg pids/a"))


# --- against this machine's cgroups --------------------------------------------------------------

_FOUND, _WHY = PidsCgroups.detect()
needs_pids_cgroup = pytest.mark.skipif(
    _FOUND is None, reason=f"no writable pids cgroup for this process here ({_WHY}); these tests need one")


@pytest.fixture
def pids() -> PidsCgroups:
    assert _FOUND is not None
    return _FOUND


def _mine(found: PidsCgroups) -> set[str]:
    prefix = f"{os.stat('/proc/self/ns/pid').st_ino}-{os.getpid()}-"
    return {p.name for p in found.parent.iterdir() if p.is_dir() and p.name.startswith(prefix)}


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@needs_pids_cgroup
def test_detection_matches_the_process_wide_answer(pids):
    found = host_pids_cgroups()
    assert found is not None and found.parent == pids.parent and found.parent.name == PARENT_NAME


@needs_pids_cgroup
def test_a_child_caps_its_processes_from_the_first_instruction(pids):
    cg = pids.create(6)
    try:
        assert (cg.path / "pids.max").read_text().strip() == "6"
        # The wrapped shell forks 10 background sleepers in its own sessions; the 6th task fails.
        proc = subprocess.run(cg.wrap(["/bin/sh", "-c", "grep -h pids /proc/self/cgroup; "
                                       "for i in 1 2 3 4 5 6 7 8 9 10; do setsid sleep 60 >/dev/null 2>&1 & done; "
                                       "echo all-started"]),
                              capture_output=True, text=True, timeout=30)
        assert f"/{PARENT_NAME}/{cg.name}" in proc.stdout, proc.stdout
        assert "all-started" not in proc.stdout and proc.returncode != 0, (proc.stdout, proc.stderr)
        left = cg.pids()
        assert 1 <= len(left) <= 5, left  # sleepers that escaped the shell's process group and session
    finally:
        assert cg.close(5.0)
    assert not cg.path.exists()
    assert not any(_alive(pid) for pid in left)


@needs_pids_cgroup
def test_close_kills_daemons_and_removes_the_cgroup(pids):
    cg = pids.create(64)
    subprocess.run(cg.wrap(["/bin/sh", "-c", "setsid sh -c 'sleep 60 & sleep 60' >/dev/null 2>&1 &"]), timeout=30, check=True)
    deadline = time.monotonic() + 5
    while len(cg.pids()) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    left = cg.pids()
    assert len(left) == 3, left
    assert cg.close(5.0)
    assert not cg.path.exists() and not any(_alive(pid) for pid in left)
    assert cg.close(1.0)  # twice is fine


@needs_pids_cgroup
def test_a_process_outside_the_cgroup_is_never_signalled(pids):
    """The kill re-checks membership through a pidfd: a pid read from cgroup.procs that now names
    another process (reused) is left alone."""
    cg = pids.create(8)
    outsider = subprocess.Popen(["sleep", "60"])
    try:
        cg._kill(outsider.pid)
        time.sleep(0.1)
        assert outsider.poll() is None
    finally:
        outsider.kill()
        outsider.wait()
        cg.close(2.0)


@needs_pids_cgroup
def test_a_sandbox_never_runs_outside_its_cgroup(pids, tmp_path):
    """If the cgroup cannot be entered (here: removed), the command does not run at all."""
    cg = pids.create(8)
    assert cg.close(2.0)
    marker = tmp_path / "ran"
    proc = subprocess.run(cg.wrap(["touch", str(marker)]), capture_output=True, timeout=30)
    assert proc.returncode != 0 and not marker.exists()


@needs_pids_cgroup
def test_the_path_is_an_argument_not_part_of_the_script(pids, tmp_path):
    marker = tmp_path / "injected"
    argv = SandboxCgroup(pids.parent / f"x; touch {marker}; #").wrap(["true"])
    assert argv[:3] == ["/bin/sh", "-c", cgroups.ENTER_SCRIPT]
    subprocess.run(argv, capture_output=True, timeout=30)
    assert not marker.exists()


@needs_pids_cgroup
def test_stale_children_of_dead_creators_are_killed_and_removed(pids):
    namespace = os.stat("/proc/self/ns/pid").st_ino
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(dead.stdout)
    assert not Path(f"/proc/{dead_pid}").exists()
    me = os.getpid()
    my_start = cgroups._start_time(me)
    names = {
        "stale_busy": f"{namespace}-{dead_pid}-12345-1",
        "stale_empty": f"{namespace}-{dead_pid}-12345-2",
        "reused_pid": f"{namespace}-{me}-{my_start + 1}-3",  # our pid, another start time: a dead creator
        "live": f"{namespace}-{me}-{my_start}-999999",  # ours
        "other_namespace": f"{namespace + 1}-{dead_pid}-12345-4",
        "not_ours": "something-else",
    }
    for name in names.values():
        (pids.parent / name).mkdir()
    sleeper = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        (pids.parent / names["stale_busy"] / "cgroup.procs").write_text(str(sleeper.pid))
        assert pids.remove_stale() >= 3  # (other runs on this host may have left some too)
        assert sleeper.wait(timeout=5) == -9
        for key in ("stale_busy", "stale_empty", "reused_pid"):
            assert not (pids.parent / names[key]).exists(), key
        for key in ("live", "other_namespace", "not_ours"):
            assert (pids.parent / names[key]).is_dir(), key
    finally:
        if sleeper.poll() is None:
            sleeper.kill()
            sleeper.wait()
        for name in names.values():
            try:
                os.rmdir(pids.parent / name)
            except FileNotFoundError:
                pass


class _FakeBackend:
    """Starts a shell instead of a sandbox (no bwrap needed); a pids cgroup if given one."""

    name = "fake"
    supports_warm = False

    def __init__(self, found: PidsCgroups | None, script: str) -> None:
        self.found, self.script = found, script

    def process_limit(self, mode, device_index=0) -> str:
        return "RLIMIT_NPROC"

    def confine(self, *, limits: Limits, mode, device_index, job_dir) -> Confinement:
        if self.found is None:
            return Confinement(process_limit="RLIMIT_NPROC")
        child = self.found.create(limits.processes)
        return Confinement(cgroups=SandboxCgroups([child], memory_bytes=None, swap_limited=False),
                           process_limit=PIDS_CGROUP)

    def launch_spec(self, *, job_dir, verdict_fd, mode, device_index, limits, control_fd=None,
                    confinement=None) -> LaunchSpec:
        return LaunchSpec(argv=["/bin/sh", "-c", self.script], env={"PATH": "/usr/bin:/bin"})


def _start(backend, tmp_path):
    return start_sandbox(backend=backend, limits=Limits(processes=32), job_dir=tmp_path, mode=DeviceMode.interpreter,
                         device_index=0, warm=False)


@needs_pids_cgroup
def test_start_sandbox_runs_it_in_its_own_cgroup_and_kill_removes_it(pids, tmp_path):
    before = _mine(pids)
    sandbox = _start(_FakeBackend(pids, "setsid sleep 60 >/dev/null 2>&1 & exec sleep 60"), tmp_path)
    try:
        assert sandbox.cgroup is not None and sandbox.process_limit == PIDS_CGROUP
        assert (sandbox.cgroup.path / "pids.max").read_text().strip() == "32"
        deadline = time.monotonic() + 5
        while len(sandbox.cgroup.pids()) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        members = sandbox.cgroup.pids()
        assert sandbox.proc.pid in members and len(members) == 2, members
        assert _mine(pids) - before == {sandbox.cgroup.name}
    finally:
        sandbox.kill(5.0)
    assert sandbox.cgroup is None and _mine(pids) == before
    assert not any(_alive(pid) for pid in members)  # the setsid sleeper too


def test_without_a_pids_cgroup_the_launch_is_unchanged(tmp_path):
    sandbox = _start(_FakeBackend(None, "exit 0"), tmp_path)
    try:
        assert sandbox.cgroup is None and sandbox.process_limit == "RLIMIT_NPROC"
        assert sandbox.proc.args == ["/bin/sh", "-c", "exit 0"]
    finally:
        sandbox.kill(5.0)


@needs_pids_cgroup
def test_the_runners_sweep_finds_the_parent_without_creating_anything(pids):
    namespace = os.stat("/proc/self/ns/pid").st_ino
    stale = pids.parent / f"{namespace}-{2 ** 22 + 1}-1-1"  # above pid_max's hard limit: never a live pid
    stale.mkdir()
    try:
        assert cgroups.remove_stale_cgroups() >= 1
        assert not stale.exists()
    finally:
        if stale.exists():
            stale.rmdir()
