"""One pids-limited cgroup per sandbox, where the service can write a pids controller.

Why: RLIMIT_NPROC counts the processes of a real uid, and the kernel does not apply it to uid 0.
When the service runs as root, the sandbox's uid maps to host root and a fork bomb is bounded only
by the host's pid_max. A pids cgroup binds whatever the uid, counts this one sandbox only (threads
included), and lists every process of the sandbox even if it left its process group (setsid,
double fork), so the end of a sandbox can kill them all.

Where: the service's own cgroup, as /proc/self/cgroup and /proc/self/mountinfo place it:
- cgroup v1: the hierarchy that holds the `pids` controller (`/sys/fs/cgroup/pids/...`);
- cgroup v2: the unified hierarchy, if `pids` is in the own cgroup's `cgroup.controllers` and can be
  enabled for its children. The kernel refuses that (EBUSY) for a non-root cgroup that holds
  processes, which is the usual case under systemd or in a container: then there is no pids
  cgroup, and RLIMIT_NPROC stays the only cap.
Under it, a parent `kernelgrade/` and one child per sandbox, named
`<pid namespace inode>-<creator pid>-<creator start time>-<sequence>`, with `pids.max` set to
`Limits.processes`. A child whose creator is dead (same pid namespace, and that pid is gone or is
another process now) is stale: `remove_stale()` kills what is left in it and removes it. Children
of other pid namespaces are left alone (we cannot tell whether their creator lives).

How a sandbox gets in before it can fork: its argv is prefixed with

    /bin/sh -c 'echo 0 > "$0" && exec "$@"' <child>/cgroup.procs prlimit ... bwrap ...

The shell writes 0 (the writing process itself) into the child's cgroup.procs, then execs the real
command in the same process, so the sandbox's first instruction already runs in the cgroup and
every descendant inherits it. No preexec_fn (not safe in a threaded program, and the warm pool
starts sandboxes from a thread), and the path is an argument of the script, never part of it. If
the write fails the shell exits non-zero before anything else runs: the sandbox fails to start
(our failure, reported as such), it never runs unlimited.
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
    entries = parse_proc_cgroup(proc_cgroup)
    mounts = parse_mountinfo(mountinfo)
    for hierarchy, controllers, path in entries:
        if hierarchy != "0" and "pids" in controllers:  # v1 (a controller is in one hierarchy only)
            for mount in mounts:
                if mount.fstype == "cgroup" and "pids" in mount.options:
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


# --- the parent -----------------------------------------------------------------------------------


class PidsCgroups:
    """The `kernelgrade/` parent cgroup under the service's own pids cgroup."""

    def __init__(self, version: int, parent: Path) -> None:
        self.version = version
        self.parent = parent

    @classmethod
    def detect(cls, *, proc_cgroup: str | None = None, mountinfo: str | None = None) -> tuple["PidsCgroups | None", str]:
        """(the parent, created if need be, or None; why not). Only a parent in which a child
        with a working pids.max could be created and removed counts."""
        try:
            proc_cgroup = Path("/proc/self/cgroup").read_text() if proc_cgroup is None else proc_cgroup
            mountinfo = Path("/proc/self/mountinfo").read_text() if mountinfo is None else mountinfo
        except OSError as exc:
            return None, f"cannot read the own cgroup: {exc}"
        located = locate_pids(proc_cgroup, mountinfo)
        if located is None:
            return None, "no pids controller is mounted for this process's cgroup"
        version, own = located
        parent = own / PARENT_NAME
        try:
            if version == 2:
                if "pids" not in (own / "cgroup.controllers").read_text().split():
                    return None, f"cgroup v2: pids is not available in {own}"
                _enable_pids(own)  # EBUSY if `own` holds processes and is not the root
                parent.mkdir(exist_ok=True)
                _enable_pids(parent)
            else:
                parent.mkdir(exist_ok=True)
            found = cls(version, parent)
            probe = found.create(1)  # pids.max must be there and writable
            if not probe.close(1.0):
                return None, f"could not remove the probe cgroup {probe.path}"
        except OSError as exc:
            return None, f"cgroup v{version} at {own}: {exc}"
        return found, ""

    def create(self, max_processes: int) -> SandboxCgroup:
        """A new child with pids.max = `max_processes`. Raises OSError."""
        me = os.getpid()
        name = f"{_pid_namespace()}-{me}-{_start_time(me) or 0}-{next(_sequence)}"
        path = self.parent / name
        path.mkdir()
        cgroup = SandboxCgroup(path)
        try:
            (path / "pids.max").write_text(str(max_processes))
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


def _enable_pids(folder: Path) -> None:
    control = folder / "cgroup.subtree_control"
    if "pids" not in control.read_text().split():
        control.write_text("+pids")


# --- the process-wide answer ----------------------------------------------------------------------

_detected: tuple[PidsCgroups | None, str] | None = None
_detect_lock = threading.Lock()


def host_pids_cgroups() -> PidsCgroups | None:
    """The parent for this process's sandboxes, detected once (with a sweep of stale children);
    None where no pids cgroup can be written, with a warning if we are root."""
    global _detected
    with _detect_lock:
        if _detected is None:
            found, why = PidsCgroups.detect()
            _detected = (found, why)
            if found is not None:
                stale = found.remove_stale()
                log.info("sandboxes run in pids cgroups under %s (cgroup v%d)%s", found.parent, found.version,
                         f"; removed {stale} stale ones" if stale else "")
            elif os.geteuid() == 0:
                log.warning("running as root without a writable pids cgroup (%s): RLIMIT_NPROC does not bind "
                            "for root, so the sandbox's process count is bounded only by the host's pid_max. "
                            "Run the worker unprivileged or give it a pids cgroup (see SECURITY.md).", why)
            else:
                log.info("no writable pids cgroup (%s): the sandbox's processes are capped by RLIMIT_NPROC", why)
        return _detected[0]


def remove_stale_cgroups() -> int:
    """At the runner's start: the sweep of `PidsCgroups.remove_stale`, where a `kernelgrade/`
    parent already exists; creates nothing (any backend's runner may call it)."""
    try:
        located = locate_pids(Path("/proc/self/cgroup").read_text(), Path("/proc/self/mountinfo").read_text())
    except OSError:
        return 0
    if located is None or not (located[1] / PARENT_NAME).is_dir():
        return 0
    return PidsCgroups(located[0], located[1] / PARENT_NAME).remove_stale()
