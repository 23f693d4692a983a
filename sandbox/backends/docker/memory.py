"""Whether a sandbox container met its memory limit, told to the trusted side by the launcher.

The container's memory cgroup (`mem_limit` = `memswap_limit`) belongs to the engine, not to the
runner, so the runner cannot read it the way it reads a bwrap sandbox's own cgroup
(sandbox/cgroups.py). The launcher, a trusted process outside the container, reads it for the
runner, from two places the sandboxed code cannot write:

- the container's cgroup on this host (`MemoryEvents`: v2 memory.events `max`/`oom`/`oom_kill`,
  v1 memory.failcnt and memory.oom_control, memory.stat's refaults, and how full it is), found
  through the container's first process as the engine names it (State.Pid) and kept only if its
  path holds the container's id; polled while the container runs, since the cgroup is gone once it
  exits. Where the launcher cannot see it (an engine on another host or in another pid
  namespace), this source says nothing;
- the engine's State.OOMKilled, inspected after the container exited and before it is removed
  (an OOM kill counts once at least).

The same lines carry the container's CPU time (`cpu_us`: v1 `cpuacct.usage`, v2 `cpu.stat`, from
the container's cpu accounting cgroup found the same way), which tells the runner whether a
timeout was the program's (sandbox/cpu_time.py); absent where that cgroup cannot be seen.

It writes each change as one JSON line to a pipe of its own (`--memory-fd`), never to the verdict
channel or the log, which carry what the container wrote; the runner keeps the last line
(`LauncherMemoryReport`). The line after the exit is the last; a launcher killed at a deadline
leaves the last one it polled.
"""
from __future__ import annotations

import json
import os
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

from sandbox.cgroups import MemoryEvents, locate, read_cpu_seconds, read_memory_events

POLL_S = 0.2
_LINE_CAP = 4096  # one report line is ~80 bytes; a longer one is not the launcher's


def container_memory_cgroup(pid: int, container_id: str, *, proc: Path = Path("/proc")) -> Path | None:
    """The folder of the memory cgroup of process `pid` as this process's mounts show it, if that
    is the cgroup of `container_id` (its path names the id: /docker/<id>, docker-<id>.scope); None
    when it cannot be read or is another's (a pid of another pid namespace)."""
    if not container_id or pid <= 0:
        return None
    try:
        located = locate("memory", (proc / str(pid) / "cgroup").read_text(),
                         (proc / "self" / "mountinfo").read_text())
    except OSError:
        return None
    if located is None:
        return None
    folder = located[1]
    if ".." in folder.parts or container_id not in folder.name:
        return None  # outside this cgroup namespace's view, or not the container's own cgroup
    return folder if read_memory_events(folder) is not None else None


def container_cpu_cgroup(pid: int, container_id: str, *, proc: Path = Path("/proc")) -> Path | None:
    """As `container_memory_cgroup`, the folder that counts the container's CPU time: v1 its
    `cpuacct` cgroup, v2 its (one) cgroup."""
    if not container_id or pid <= 0:
        return None
    try:
        proc_cgroup, mountinfo = (proc / str(pid) / "cgroup").read_text(), (proc / "self" / "mountinfo").read_text()
    except OSError:
        return None
    located = locate("cpuacct", proc_cgroup, mountinfo)  # (no v1 hierarchy of it: the unified one)
    if located is None:
        return None
    folder = located[1]
    if ".." in folder.parts or container_id not in folder.name:
        return None
    return folder if read_cpu_seconds(folder) is not None else None


_COUNTERS = ("limit_hits", "ooms", "oom_kills", "refaults")


def encode(events: MemoryEvents, cpu_us: int | None = None) -> bytes:
    """One report line: `{"limit_hits":0,"ooms":0,"oom_kills":1,"refaults":33,"full":false,"cpu_us":1200}`
    (`cpu_us` only where the container's CPU time is known)."""
    fields: dict[str, int | bool] = {key: getattr(events, key) for key in _COUNTERS}
    cpu = {"cpu_us": cpu_us} if cpu_us is not None else {}
    return (json.dumps({**fields, "full": events.full, **cpu}, separators=(",", ":")) + "\n").encode()


def decode_cpu(line: bytes) -> int | None:
    """A report line's `cpu_us`, if it holds a valid one."""
    try:
        value = json.loads(line).get("cpu_us")
    except (ValueError, AttributeError):
        return None
    return value if type(value) is int and value >= 0 else None


def decode(line: bytes) -> MemoryEvents | None:
    try:
        fields = json.loads(line)
        counters = {key: fields[key] for key in _COUNTERS}
        full = fields["full"]
    except (ValueError, TypeError, KeyError):
        return None
    if not all(type(v) is int and v >= 0 for v in counters.values()) or type(full) is not bool:
        return None
    return MemoryEvents(**counters, full=full)


class MemoryWatch:
    """The launcher's side: polls the container's cgroup from its start, and writes changes."""

    def __init__(self, fd: int, *, poll_s: float = POLL_S) -> None:
        self._fd = fd
        os.set_blocking(fd, False)  # a runner that does not read never holds the launcher up
        self._poll_s = poll_s
        self._folder: Path | None = None
        self._cpu_folder: Path | None = None
        self._cpu_us: int | None = None  # the highest read (a cgroup on its way out may read lower)
        self._written_cpu: int | None = None
        self._seen = MemoryEvents()  # the highest of each counter: a gone cgroup does not reset them
        self._written: MemoryEvents | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def attach(self, container: Any) -> None:
        """Find the running container's cgroup and start polling it (nothing if it cannot be found)."""
        try:
            container.reload()
            pid = int(container.attrs.get("State", {}).get("Pid") or 0)
        except Exception:  # noqa: BLE001 - the engine's answer is ours to lack, not the student's
            return
        self._folder = container_memory_cgroup(pid, container.id)
        self._cpu_folder = container_cpu_cgroup(pid, container.id)
        if self._folder is not None or self._cpu_folder is not None:
            self._poll()
            self._thread = threading.Thread(target=self._loop, name="docker-memory", daemon=True)
            self._thread.start()

    def finish(self, container: Any) -> None:
        """The container exited: a last read of its cgroup if it is still there, the engine's
        State.OOMKilled, and the final line; then the pipe is closed."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(1.0)
        self._poll()
        try:
            container.reload()
            oom_killed = container.attrs.get("State", {}).get("OOMKilled") is True
        except Exception:  # noqa: BLE001
            oom_killed = False
        with self._lock:
            if oom_killed and self._seen.oom_kills == 0:
                self._seen = replace(self._seen, oom_kills=1)
            self._write()
        self.close()

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1

    def _loop(self) -> None:
        while not self._stop.wait(self._poll_s):
            if not self._poll():
                return

    def _poll(self) -> bool:
        """Read the counters and write them if they changed; False once the cgroup is gone."""
        events = read_memory_events(self._folder) if self._folder is not None else None
        cpu_s = read_cpu_seconds(self._cpu_folder) if self._cpu_folder is not None else None
        with self._lock:
            if cpu_s is not None:
                self._cpu_us = max(self._cpu_us or 0, int(cpu_s * 1e6))
            if events is not None:  # counters never go back (a cgroup on its way out may read lower)
                seen = self._seen
                self._seen = MemoryEvents(**{key: max(getattr(seen, key), getattr(events, key)) for key in _COUNTERS},
                                          full=events.full)
            if self._seen != self._written or self._cpu_us != self._written_cpu:
                self._write()
        return events is not None or cpu_s is not None

    def _write(self) -> None:
        """Called with the lock held. A full pipe skips this line (the next change writes it again)."""
        if self._fd < 0:
            return
        try:
            os.write(self._fd, encode(self._seen, self._cpu_us))
        except BlockingIOError:
            return
        except OSError:  # the runner is gone (EPIPE)
            os.close(self._fd)
            self._fd = -1
            return
        self._written, self._written_cpu = self._seen, self._cpu_us


class LauncherMemoryReport:
    """The runner's side (a `MemoryReport`): the last line the launcher wrote, read without waiting."""

    def __init__(self, fd: int, write_fd: int | None = None) -> None:
        self._fd = fd
        os.set_blocking(fd, False)
        self._write_fd = write_fd  # until the launch spec takes it
        self._buffer = b""
        self._latest: MemoryEvents | None = None
        self._cpu_us: int | None = None

    @classmethod
    def pipe(cls) -> LauncherMemoryReport:
        read_fd, write_fd = os.pipe()
        return cls(read_fd, write_fd)

    def take_write_fd(self) -> int | None:
        """The pipe's write end, for the launcher: the caller owns it from now on."""
        fd, self._write_fd = self._write_fd, None
        return fd

    def events(self) -> MemoryEvents | None:
        while self._fd >= 0:
            try:
                chunk = os.read(self._fd, 65536)
            except BlockingIOError:
                break
            if not chunk:
                os.close(self._fd)  # the launcher is gone: nothing more will come
                self._fd = -1
                break
            self._buffer += chunk
            *lines, self._buffer = self._buffer.split(b"\n")
            for line in lines:
                events = decode(line)
                if events is not None:
                    self._latest = events
                    cpu = decode_cpu(line)
                    if cpu is not None:
                        self._cpu_us = cpu
            if len(self._buffer) > _LINE_CAP:
                self._buffer = b""
        return self._latest

    def cpu_seconds(self) -> float | None:
        """The container's CPU time in the last line that told it (None: no line did)."""
        self.events()
        return self._cpu_us / 1e6 if self._cpu_us is not None else None

    def close(self) -> None:
        if self._write_fd is not None:
            os.close(self._write_fd)
            self._write_fd = None
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
