"""A cgroup per sandbox, where the service can write the controller: pids (`pids.max`) and memory
(`memory.max` or `memory.limit_in_bytes`, swap included where it is accounted). Why, where, and how
a sandbox enters it before its first instruction: SECURITY.md, "Per-sandbox cgroups".
"""
from __future__ import annotations

import errno
import itertools
import logging
import os
import re
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("kernelgrade.sandbox.cgroups")

PARENT_NAME = "kernelgrade"
PIDS_CGROUP = "pids cgroup"  # the report's environment.process_limit where one holds
ENTER_SCRIPT = 'echo 0 > "$0" && exec "$@"'
ENTER_ALL = 'while [ "$1" != -- ]; do echo 0 > "$1" || exit 125; shift; done; shift; exec "$@"'
# Tests only: "1" detects no pids cgroup, "all" no cgroup of any controller (as on the H200: no
# writable pids or memory controller), so the fallbacks run for real. Read once per process, by the
# trusted side; a sandbox cannot set it.
NO_PIDS_CGROUP_ENV = "KERNELGRADE_TEST_NO_PIDS_CGROUP"
_CHILD_NAME = re.compile(r"(\d+)-(\d+)-(\d+)-(\d+)")
_sequence = itertools.count(1)


# --- where the pids controller is ---------------------------------------------------------------


@dataclass(frozen=True)
class CgroupMount:
    root: str  # the folder of the hierarchy that is mounted (mountinfo field 4)
    mount_point: str
    fstype: str  # "cgroup" (v1) or "cgroup2"
    options: frozenset[str]  # super options: the v1 controllers, among others


def _unescape(field: str) -> str:
    """mountinfo writes space, tab, newline and backslash as octal escapes."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def parse_mountinfo(text: str) -> list[CgroupMount]:
    mounts = []
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if not sep or len(fields) < 5 or len(tail) < 3 or tail[0] not in ("cgroup", "cgroup2"):
            continue
        mounts.append(CgroupMount(root=_unescape(fields[3]), mount_point=_unescape(fields[4]), fstype=tail[0],
                                  options=frozenset(tail[2].split(","))))
    return mounts


def parse_proc_cgroup(text: str) -> list[tuple[str, list[str], str]]:
    """(hierarchy id, controllers, path) of each line of /proc/<pid>/cgroup."""
    entries = []
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            entries.append((parts[0], [c for c in parts[1].split(",") if c], parts[2]))
    return entries


def _folder(mount: CgroupMount, path: str) -> Path | None:
    """The folder of cgroup `path` under `mount`, or None if the mount does not show it."""
    root = mount.root.rstrip("/") or "/"
    if path == root:
        return Path(mount.mount_point)
    if root == "/":
        rest = path.lstrip("/")
    elif path.startswith(root + "/"):
        rest = path[len(root) + 1:]
    else:
        return None
    return Path(mount.mount_point) / rest


def locate_pids(proc_cgroup: str, mountinfo: str) -> tuple[int, Path] | None:
    """(cgroup version, folder of our own cgroup) of the pids controller; nothing is touched."""
    return locate("pids", proc_cgroup, mountinfo)


def locate(controller: str, proc_cgroup: str, mountinfo: str) -> tuple[int, Path] | None:
    """(cgroup version, folder of our own cgroup) of `controller`; nothing is touched."""
    entries = parse_proc_cgroup(proc_cgroup)
    mounts = parse_mountinfo(mountinfo)
    for hierarchy, controllers, path in entries:
        if hierarchy != "0" and controller in controllers:  # v1 (a controller is in one hierarchy only)
            for mount in mounts:
                if mount.fstype == "cgroup" and controller in mount.options:
                    folder = _folder(mount, path)
                    if folder is not None:
                        return 1, folder
            return None
    for hierarchy, controllers, path in entries:
        if hierarchy == "0" and not controllers:
            for mount in mounts:
                if mount.fstype == "cgroup2":
                    folder = _folder(mount, path)
                    if folder is not None:
                        return 2, folder
    return None


# --- the identity of a creator --------------------------------------------------------------------


def _pid_namespace() -> int:
    return os.stat("/proc/self/ns/pid").st_ino


def _start_time(pid: int) -> int | None:
    """Field 22 of /proc/<pid>/stat (clock ticks after boot): with the pid, names one process."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return int(fh.read().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


# --- one sandbox's cgroup -------------------------------------------------------------------------


class SandboxCgroup:
    """The child cgroup of one sandbox."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.name = path.name

    @property
    def procs_file(self) -> Path:
        return self.path / "cgroup.procs"

    def wrap(self, argv: list[str]) -> list[str]:
        """`argv`, started inside this cgroup (see the module's docstring)."""
        return ["/bin/sh", "-c", ENTER_SCRIPT, str(self.procs_file), *argv]

    def pids(self) -> list[int]:
        try:
            return [int(p) for p in self.procs_file.read_text().split()]
        except FileNotFoundError:
            return []

    def _holds(self, pid: int) -> bool:
        try:
            with open(f"/proc/{pid}/cgroup", encoding="utf-8", errors="replace") as fh:
                return any(path.endswith(f"/{PARENT_NAME}/{self.name}") for _, _, path in parse_proc_cgroup(fh.read()))
        except OSError:
            return False

    def _kill(self, pid: int) -> None:
        """SIGKILL `pid` if it is still in this cgroup. Through a pidfd: once the pidfd is open, the
        membership check and the signal are about the same process, even if the pid it had when
        cgroup.procs was read has been reused since (we run as root; a wrong kill would hurt)."""
        try:
            fd = os.pidfd_open(pid)
        except OSError as exc:
            if exc.errno == errno.ENOSYS and self._holds(pid):  # Linux < 5.3: no pidfds, a plain kill
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            return  # gone already (ESRCH)
        try:
            if self._holds(pid):
                signal.pidfd_send_signal(fd, signal.SIGKILL)
        except OSError:
            pass  # it exited meanwhile
        finally:
            os.close(fd)

    def kill_all(self, timeout_s: float = 5.0) -> bool:
        """SIGKILL every process in the cgroup until it is empty (False if it is not within the time)."""
        deadline = time.monotonic() + timeout_s
        while True:
            pids = self.pids()
            if not pids:
                return True
            for pid in pids:
                self._kill(pid)
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.005)

    def close(self, timeout_s: float = 5.0) -> bool:
        """Kill what is left and remove the cgroup. True if it is gone."""
        deadline = time.monotonic() + timeout_s
        while True:
            self.kill_all(max(0.0, deadline - time.monotonic()))
            try:
                os.rmdir(self.path)
                return True
            except FileNotFoundError:
                return True
            except OSError as exc:
                # EBUSY: a process still in it (one forked while we killed, or not yet released)
                if exc.errno != errno.EBUSY or time.monotonic() >= deadline:
                    log.warning("could not remove the sandbox cgroup %s: %s (processes: %s)", self.path, exc,
                                self.pids())
                    return False
            time.sleep(0.01)


# --- the parent ---------------------------------------------------------------------------------


class ControllerCgroups:
    """The `kernelgrade/` parent cgroup under the service's own cgroup of one controller."""

    controller = ""

    def __init__(self, version: int, parent: Path) -> None:
        self.version = version
        self.parent = parent

    def settings(self, value: int) -> list[tuple[str, str, bool]]:
        """(file, value, required) to write into a new child, in order."""
        raise NotImplementedError

    @classmethod
    def detect(cls, *, proc_cgroup: str | None = None,
               mountinfo: str | None = None) -> tuple[ControllerCgroups | None, str]:
        """(the parent, created if need be, or None; why not). Only a parent in which a child
        with working limits could be created and removed counts."""
        turned_off = os.environ.get(NO_PIDS_CGROUP_ENV)
        if turned_off == "all" or (turned_off == "1" and cls.controller == "pids"):
            return None, f"turned off by {NO_PIDS_CGROUP_ENV}={turned_off} (tests)"
        try:
            proc_cgroup = Path("/proc/self/cgroup").read_text() if proc_cgroup is None else proc_cgroup
            mountinfo = Path("/proc/self/mountinfo").read_text() if mountinfo is None else mountinfo
        except OSError as exc:
            return None, f"cannot read the own cgroup: {exc}"
        located = locate(cls.controller, proc_cgroup, mountinfo)
        if located is None:
            return None, f"no {cls.controller} controller is mounted for this process's cgroup"
        version, own = located
        parent = own / PARENT_NAME
        try:
            if version == 2:
                if cls.controller not in (own / "cgroup.controllers").read_text().split():
                    return None, f"cgroup v2: {cls.controller} is not available in {own}"
                _enable(own, cls.controller)  # EBUSY if `own` holds processes and is not the root
                parent.mkdir(exist_ok=True)
                _enable(parent, cls.controller)
            else:
                parent.mkdir(exist_ok=True)
            found = cls(version, parent)
            probe = found.child(found.settings(cls._probe_value))  # the limit files must be there and writable
            if not probe.close(1.0):
                return None, f"could not remove the probe cgroup {probe.path}"
        except OSError as exc:
            return None, f"cgroup v{version} at {own}: {exc}"
        return found, ""

    _probe_value = 1

    def child(self, settings: list[tuple[str, str, bool]]) -> SandboxCgroup:
        """A new child with `settings` written (optional ones only where the file exists). Raises OSError."""
        me = os.getpid()
        name = f"{_pid_namespace()}-{me}-{_start_time(me) or 0}-{next(_sequence)}"
        path = self.parent / name
        path.mkdir()
        cgroup = SandboxCgroup(path)
        try:
            for file, value, required in settings:
                if required or (path / file).exists():
                    (path / file).write_text(value)
        except BaseException:
            cgroup.close(1.0)
            raise
        return cgroup

    def remove_stale(self, timeout_s: float = 5.0) -> int:
        """Kill and remove the children whose creator is dead. Returns how many were removed."""
        removed = 0
        try:
            children = [p for p in self.parent.iterdir() if p.is_dir()]
        except OSError:
            return 0
        my_namespace = _pid_namespace()
        for child in children:
            match = _CHILD_NAME.fullmatch(child.name)
            if match is None or int(match.group(1)) != my_namespace:
                continue  # not ours, or another pid namespace's: its creator may be alive
            pid, started = int(match.group(2)), int(match.group(3))
            if _start_time(pid) == started:
                continue  # its creator lives
            removed += SandboxCgroup(child).close(timeout_s)
        return removed


class PidsCgroups(ControllerCgroups):
    controller = "pids"

    def settings(self, value: int) -> list[tuple[str, str, bool]]:
        return [("pids.max", str(value), True)]

    def create(self, max_processes: int) -> SandboxCgroup:
        """A new child with pids.max = `max_processes`. Raises OSError."""
        return self.child(self.settings(max_processes))


class MemoryCgroups(ControllerCgroups):
    """Memory and swap together: v1 `memory.memsw.limit_in_bytes` (memory plus swap) equal to the
    memory limit, v2 `memory.swap.max` 0, where swap is accounted; on an OOM kill, v2 kills the
    whole cgroup (`memory.oom.group`)."""

    controller = "memory"
    _probe_value = 64 << 20

    def settings(self, value: int) -> list[tuple[str, str, bool]]:
        if self.version == 2:
            return [("memory.max", str(value), True), ("memory.swap.max", "0", False), ("memory.oom.group", "1", False)]
        return [("memory.limit_in_bytes", str(value), True), ("memory.memsw.limit_in_bytes", str(value), False)]

    def swap_limited(self) -> bool:
        return (self.parent / ("memory.swap.max" if self.version == 2 else "memory.memsw.limit_in_bytes")).exists()


class CpuacctCgroups(ControllerCgroups):
    """cgroup v1's CPU accounting (`cpuacct.usage`, nanoseconds), nothing to limit: the CPU time
    the sandbox's processes used, exited ones included (sandbox/cpu_time.py). cgroup v2 has no
    such controller: every v2 cgroup keeps `cpu.stat` (`usage_usec`) of its own."""

    controller = "cpuacct"

    @classmethod
    def detect(cls, *, proc_cgroup: str | None = None,
               mountinfo: str | None = None) -> tuple[ControllerCgroups | None, str]:
        found, why = super().detect(proc_cgroup=proc_cgroup, mountinfo=mountinfo)
        if found is not None and found.version != 1:  # (v2 cannot get here: no cpuacct in cgroup.controllers)
            return None, "cpuacct is a cgroup v1 controller"
        return found, why

    def settings(self, value: int) -> list[tuple[str, str, bool]]:
        return []


def _enable(folder: Path, controller: str) -> None:
    control = folder / "cgroup.subtree_control"
    if controller not in control.read_text().split():
        control.write_text(f"+{controller}")


# --- what a memory cgroup says about its limit ---------------------------------------------------

FULL_SLACK_FRACTION = 32  # "at its limit": usage within limit/32 (at least FULL_SLACK_MIN) of it
FULL_SLACK_MIN = 4 << 20
_REFAULT_KEYS = ("workingset_refault_anon", "workingset_refault_file", "workingset_refault")  # the last: < 5.9


@dataclass(frozen=True)
class MemoryEvents:
    """What a memory cgroup says about its limit: counters and a level kept by the kernel, read from
    the host's view of the cgroup (never from anything the sandbox could write). The counters only
    grow while the cgroup lives.

    `limit_hits` is the direct count of meetings of the limit, but cgroup v1's memory.failcnt stays
    0 on some kernels (6.18 here, the OOM kill included); there, a cgroup thrashing at its limit
    shows as `refaults` that keep growing while it is `full` (sandbox/limit_watch.py)."""

    limit_hits: int = 0  # v2 memory.events `max`, v1 memory.failcnt (+ memory.memsw.failcnt): the limit reached
    ooms: int = 0  # v2 `oom`: reclaim at the limit failed (v1 keeps no count)
    oom_kills: int = 0  # v2 `oom_kill`, v1 memory.oom_control `oom_kill`: processes the OOM killer ended
    refaults: int = 0  # memory.stat workingset_refault_*: pages evicted, then needed again (v1 and v2)
    full: bool = False  # when read, its usage was within the slack of its limit (FULL_SLACK_*)

    def __add__(self, other: MemoryEvents) -> MemoryEvents:
        return MemoryEvents(self.limit_hits + other.limit_hits, self.ooms + other.ooms,
                            self.oom_kills + other.oom_kills, self.refaults + other.refaults,
                            self.full or other.full)

    @property
    def at_limit(self) -> int:
        """Every count of the limit being met, in one growing number."""
        return self.limit_hits + self.ooms + self.oom_kills


def _counters(text: str) -> dict[str, int]:
    """`key value` lines (memory.events, memory.oom_control, memory.stat) as numbers; others are left out."""
    found = {}
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if value.strip().isdigit():
            found[key] = int(value)
    return found


def _number(path: Path) -> int | None:
    """A file of one number (v2's `max` for no limit, or an unreadable file: None)."""
    try:
        return int(path.read_text())
    except (OSError, ValueError):
        return None


def _full(usage: int | None, limit: int | None) -> bool:
    if usage is None or limit is None or limit <= 0:
        return False
    return usage >= limit - max(limit // FULL_SLACK_FRACTION, FULL_SLACK_MIN)


def read_memory_events(folder: Path) -> MemoryEvents | None:
    """What the memory cgroup at `folder` (v2 or v1) says, None where it has no memory files
    (another controller's folder) or is gone."""
    try:
        stat = _counters((folder / "memory.stat").read_text())
    except OSError:
        return None
    refaults = sum(stat.get(key, 0) for key in _REFAULT_KEYS)
    try:
        events = _counters((folder / "memory.events").read_text())
    except OSError:
        pass
    else:
        return MemoryEvents(limit_hits=events.get("max", 0), ooms=events.get("oom", 0),
                            oom_kills=events.get("oom_kill", 0), refaults=refaults,
                            full=_full(_number(folder / "memory.current"), _number(folder / "memory.max")))
    hits = (_number(folder / "memory.failcnt") or 0) + (_number(folder / "memory.memsw.failcnt") or 0)
    try:
        kills = _counters((folder / "memory.oom_control").read_text()).get("oom_kill", 0)
    except OSError:
        kills = 0
    return MemoryEvents(limit_hits=hits, oom_kills=kills, refaults=refaults,
                        full=_full(_number(folder / "memory.usage_in_bytes"),
                                   _number(folder / "memory.limit_in_bytes")))


def read_cpu_seconds(folder: Path) -> float | None:
    """The CPU time (user and system) of the cgroup at `folder`: v1 `cpuacct.usage` (ns), v2
    `cpu.stat` `usage_usec`; None where it keeps neither (another controller's folder) or is gone."""
    usage = _number(folder / "cpuacct.usage")
    if usage is not None:
        return usage / 1e9
    try:
        stat = _counters((folder / "cpu.stat").read_text())
    except OSError:
        return None
    usec = stat.get("usage_usec")  # (a v1 `cpu` folder has a cpu.stat of other counters)
    return usec / 1e6 if usec is not None else None


# --- the cgroups of one sandbox -------------------------------------------------------------------


class SandboxCgroups:
    """The children of one sandbox: one per hierarchy (v1: pids and memory apart; v2: one)."""

    def __init__(self, children: list[SandboxCgroup], *, memory_bytes: int | None, swap_limited: bool) -> None:
        self.children = children
        self.memory_bytes = memory_bytes  # None: no memory cgroup
        self.swap_limited = swap_limited

    def wrap(self, argv: list[str]) -> list[str]:
        """`argv`, started inside every child (see the module's docstring)."""
        if len(self.children) == 1:
            return self.children[0].wrap(argv)
        return ["/bin/sh", "-c", ENTER_ALL, "kernelgrade-enter", *(str(c.procs_file) for c in self.children), "--",
                *argv]

    def memory_events(self) -> MemoryEvents | None:
        """The memory child's counters (None: no memory cgroup, or it is gone)."""
        found = [e for e in (read_memory_events(child.path) for child in self.children) if e is not None]
        return sum(found[1:], found[0]) if found else None

    def cpu_seconds(self) -> float | None:
        """The CPU time (user and system) every process that was ever in the sandbox used, as the
        kernel counts it for a cgroup (`read_cpu_seconds`). None where no child keeps such a
        counter (no cpuacct hierarchy, no v2 child) or it is gone."""
        for child in self.children:
            seconds = read_cpu_seconds(child.path)
            if seconds is not None:
                return seconds
        return None

    def close(self, timeout_s: float = 5.0) -> bool:
        return all([child.close(timeout_s) for child in self.children])


def sandbox_cgroups(*, processes: int, memory_bytes: int) -> SandboxCgroups | None:
    """The cgroups of a new sandbox where any controller is writable (None: none is). Raises OSError."""
    by_parent: dict[Path, tuple[ControllerCgroups, list[tuple[str, str, bool]]]] = {}
    pids, memory, cpuacct = host_pids_cgroups(), host_memory_cgroups(), host_cpuacct_cgroups()
    for found, value in ((pids, processes), (memory, memory_bytes), (cpuacct, 0)):
        if found is not None:
            by_parent.setdefault(found.parent, (found, []))[1].extend(found.settings(value))
    children: list[SandboxCgroup] = []
    try:
        for controller, settings in by_parent.values():
            children.append(controller.child(settings))
    except BaseException:
        for child in children:
            child.close(1.0)
        raise
    if not children:
        return None
    return SandboxCgroups(children, memory_bytes=memory_bytes if memory is not None else None,
                         swap_limited=memory is not None and memory.swap_limited())


# --- the process-wide answer ----------------------------------------------------------------------

_detected: dict[str, tuple[ControllerCgroups | None, str]] = {}
_detect_lock = threading.Lock()


def _host_cgroups(kind: type[ControllerCgroups]) -> ControllerCgroups | None:
    with _detect_lock:
        if kind.controller not in _detected:
            found, why = kind.detect()
            _detected[kind.controller] = (found, why)
            if found is not None:
                stale = found.remove_stale()
                log.info("sandboxes run in %s cgroups under %s (cgroup v%d)%s", kind.controller, found.parent,
                         found.version, f"; removed {stale} stale ones" if stale else "")
            elif kind is PidsCgroups and os.geteuid() == 0:
                log.warning("running as root without a writable pids cgroup (%s): RLIMIT_NPROC does not bind "
                            "for root, so each sandbox runs as an unprivileged host uid of its own where it can "
                            "(see SECURITY.md).", why)
            else:
                log.info("no writable %s cgroup (%s)", kind.controller, why)
        return _detected[kind.controller][0]


def host_pids_cgroups() -> PidsCgroups | None:
    """The pids parent for this process's sandboxes, detected once (with a sweep of stale
    children); None where no pids cgroup can be written, with a warning if we are root."""
    return _host_cgroups(PidsCgroups)  # type: ignore[return-value]


def host_memory_cgroups() -> MemoryCgroups | None:
    """The memory parent for this process's sandboxes, detected once; None where none is writable."""
    return _host_cgroups(MemoryCgroups)  # type: ignore[return-value]


def host_cpuacct_cgroups() -> CpuacctCgroups | None:
    """The cpuacct parent (cgroup v1) for this process's sandboxes, detected once; None where none is writable."""
    return _host_cgroups(CpuacctCgroups)  # type: ignore[return-value]


def remove_stale_cgroups() -> int:
    """At the runner's start: the sweep of `remove_stale`, where a `kernelgrade/` parent already
    exists; creates nothing (any backend's runner may call it)."""
    try:
        proc_cgroup, mountinfo = Path("/proc/self/cgroup").read_text(), Path("/proc/self/mountinfo").read_text()
    except OSError:
        return 0
    removed, seen = 0, set()
    for kind in (PidsCgroups, MemoryCgroups, CpuacctCgroups):
        located = locate(kind.controller, proc_cgroup, mountinfo)
        if located is None or located[1] in seen or not (located[1] / PARENT_NAME).is_dir():
            continue
        seen.add(located[1])
        removed += kind(located[0], located[1] / PARENT_NAME).remove_stale()
    return removed
